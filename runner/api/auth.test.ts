/** The token file and the caller check: what a file may say, how a bad one is refused, who a header is. */
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identify, loadTokenFile, READ_ONLY, TOKEN_FILE_SHAPE, TokenFileError } from './auth.js';

const dir = mkdtempSync(join(tmpdir(), 'cronflock-auth-'));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('token file', () => {
  it('takes one line as the operator token', () => {
    const rules = loadTokenFile(file('one', 'op-token-0123456789abcdef\n'));
    expect(rules).toMatchObject({ actions: true, readsNeedToken: false });
    expect(identify(rules, 'Bearer op-token-0123456789abcdef')).toEqual({ role: 'operator', name: 'operator' });
    expect(identify(rules, 'Bearer op-token-0123456789abcdeX')).toBe('bad');
    expect(identify(rules, 'Basic abc')).toBe('bad');
    expect(identify(rules, undefined)).toEqual({ role: 'anonymous', name: null });
  });

  it('takes YAML with roles, tokens or their sha256, and reads: token', () => {
    const sha = createHash('sha256').update('viewer-token-0123456789').digest('hex');
    const rules = loadTokenFile(file('roles.yaml', `reads: token\ntokens:\n  - {name: alice, role: operator, token: alice-token-0123456789}\n  - {name: grafana, role: viewer, sha256: ${sha}}\n`));
    expect(rules.readsNeedToken).toBe(true);
    expect(identify(rules, 'Bearer alice-token-0123456789')).toEqual({ role: 'operator', name: 'alice' });
    expect(identify(rules, 'bearer viewer-token-0123456789')).toEqual({ role: 'viewer', name: 'grafana' });
    // One line of JSON is a document, not a token.
    const json = loadTokenFile(file('one.json', '{"tokens": [{"name": "ci", "role": "operator", "token": "ci-token-0123456789abc"}]}\n'));
    expect(identify(json, 'Bearer ci-token-0123456789abc')).toEqual({ role: 'operator', name: 'ci' });
  });

  it('refuses a bad file whole, naming the field and the fix', () => {
    expect(() => loadTokenFile(join(dir, 'missing'))).toThrow(TokenFileError);
    expect(() => loadTokenFile(join(dir, 'missing'))).toThrow(
      new TokenFileError(`--api-token-file ${join(dir, 'missing')}: no such file; give the path of an existing token file (or leave --api-token-file out: the dashboard is then read-only)`),
    );
    expect(() => loadTokenFile(file('short', 'short\n'))).toThrow(/at least 16 characters/);
    const role = file('role.yaml', 'tokens:\n  - {name: x, role: admin, token: xxxxxxxxxxxxxxxxxxxx}\n');
    expect(() => loadTokenFile(role)).toThrow(
      new TokenFileError(
        `--api-token-file ${role}:2:21: tokens[0].role: "admin" is not allowed; allowed: viewer, operator\n${TOKEN_FILE_SHAPE}`,
      ),
    );
    expect(() => loadTokenFile(file('syntax.yaml', 'tokens:\n  - {name: x\n'))).toThrow(/syntax\.yaml:\d+:\d+: not YAML\/JSON: /);
    expect(() => loadTokenFile(file('both.yaml', 'tokens:\n  - {name: x, role: viewer}\n'))).toThrow(/either token or sha256/);
    expect(() => loadTokenFile(file('sha.yaml', 'tokens:\n  - {name: x, role: viewer, sha256: abc}\n'))).toThrow(/64 hex digits/);
  });

  it('says what a token file must contain, with an example, for a file without tokens (not "expected array, received undefined")', () => {
    const none = file('none.yaml', 'reads: token\n');
    expect(() => loadTokenFile(none)).toThrow(new TokenFileError(`--api-token-file ${none}:1:1: tokens: missing: the file must list its tokens\n${TOKEN_FILE_SHAPE}`));
    expect(TOKEN_FILE_SHAPE).toContain('tokens:\n    - {name: alice, role: operator, sha256:');
    const notList = file('notlist.yaml', 'tokens: alice\n');
    expect(() => loadTokenFile(notList)).toThrow(/notlist\.yaml:1:9: tokens: must be a list, not the text "alice"\n/);
    const list = file('list.yaml', '- alice\n- bob\n');
    expect(() => loadTokenFile(list)).toThrow(/list\.yaml:1:1: \(top level\): must be a mapping of fields, not a list\n/);
    for (const f of [none, notList, list]) expect(() => loadTokenFile(f)).not.toThrow(/Invalid input|received undefined/);
  });

  it('without a file: reading open, actions off, every token unknown', () => {
    expect(READ_ONLY.actions).toBe(false);
    expect(identify(READ_ONLY, 'Bearer anything-at-all-here')).toBe('bad');
  });
});
