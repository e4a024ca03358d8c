/**
 * Who may do what through the HTTP API. Reading is open by default (the API listens on 127.0.0.1 unless told
 * otherwise); actions (trigger, suspend, resume, backfill) need a bearer token with the role `operator`. Without
 * `--api-token-file`, actions are off and say so.
 *
 * The token file is either one line (the operator token), or YAML/JSON:
 *
 * ```yaml
 * reads: open            # open (default) | token: reading needs a viewer or operator token too
 * tokens:
 *   - {name: alice, role: operator, sha256: 9f86d081…}   # sha256 (hex) of the token: the file holds no secret
 *   - {name: dashboards, role: viewer, token: "s3cret-viewer"}
 * ```
 *
 * Tokens are compared by their SHA-256 in constant time against every entry (timingSafeEqual), so neither the
 * answer nor its timing says which entry came close.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isNode, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';

export type Role = 'viewer' | 'operator';

/** An API caller: who (the token's name) and what it may do. */
export interface Caller {
  role: Role | 'anonymous';
  name: string | null;
}

/** The API's access rules, from {@link loadTokenFile} (or none: read-only). */
export interface AccessRules {
  /** Whether actions can be enabled at all (a token file was given). */
  actions: boolean;
  /** Whether reading needs a token too. */
  readsNeedToken: boolean;
  tokens: { name: string; role: Role; sha256: Buffer }[];
}

/** No token file: reading open, actions off. */
export const READ_ONLY: AccessRules = { actions: false, readsNeedToken: false, tokens: [] };

/** A token file that cannot be used; the message names the file, the field and the fix. */
export class TokenFileError extends Error {
  readonly code = 'TOKEN_FILE_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'TokenFileError';
  }
}

const fileSchema = z.strictObject({
  reads: z.enum(['open', 'token']).default('open'),
  tokens: z
    .array(
      z
        .strictObject({
          name: z.string().min(1),
          role: z.enum(['viewer', 'operator']),
          token: z.string().min(16, 'must be at least 16 characters').optional(),
          sha256: z.string().regex(/^[0-9a-f]{64}$/i, 'must be 64 hex digits (sha256sum of the token)').optional(),
        })
        .refine((t) => (t.token === undefined) !== (t.sha256 === undefined), 'give either token or sha256'),
    )
    .min(1),
});

/** What a token file must contain, with an example: the tail of every message about its content. */
export const TOKEN_FILE_SHAPE =
  'a token file holds one line, the operator token (at least 16 characters, e.g. from openssl rand -hex 24), or YAML such as\n' +
  '  reads: open          # or token: reading needs a token too\n' +
  '  tokens:\n' +
  '    - {name: alice, role: operator, sha256: <sha256sum of her token, 64 hex digits>}\n' +
  '    - {name: dashboards, role: viewer, token: <at least 16 characters>}';

const sha = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Reads a token file (see the module doc).
 * @throws TokenFileError when it cannot be read or is invalid (nothing is started then).
 */
export function loadTokenFile(path: string): AccessRules {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file; give the path of an existing token file (or leave --api-token-file out: the dashboard is then read-only)'
        : code === 'EACCES'
          ? 'cannot be read (permission denied); make it readable by the user cronflock runs as'
          : code === 'EISDIR'
            ? 'is a directory; give the token file inside it'
            : (err as Error).message;
    throw new TokenFileError(`--api-token-file ${path}: ${why}`);
  }
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  if (lines.length === 1 && !/[:{[]/.test(lines[0]!)) {
    if (lines[0]!.length < 16) throw new TokenFileError(`--api-token-file ${path}: the token must be at least 16 characters (e.g. openssl rand -hex 24)`);
    return { actions: true, readsNeedToken: false, tokens: [{ name: 'operator', role: 'operator', sha256: sha(lines[0]!) }] };
  }
  const lineCounter = new LineCounter();
  const parsed = parseDocument(text, { lineCounter, prettyErrors: false });
  if (parsed.errors.length > 0) {
    const e = parsed.errors[0]!;
    const { line, col } = lineCounter.linePos(e.pos[0]);
    throw new TokenFileError(`--api-token-file ${path}:${line}:${col}: not YAML/JSON: ${e.message}`);
  }
  const doc: unknown = parsed.toJS();
  const r = fileSchema.safeParse(doc);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const node = parsed.getIn(i.path as (string | number)[], true) as { range?: [number, number, number] } | undefined;
    const pos = lineCounter.linePos(isNode(node) && node.range ? node.range[0] : 0);
    const field = i.path.map((p, n) => (typeof p === 'number' ? `[${p}]` : n === 0 ? String(p) : `.${String(p)}`)).join('') || '(top level)';
    const given = i.path.length > 0 ? parsed.getIn(i.path as (string | number)[]) : undefined;
    const reason =
      i.code === 'invalid_value' && 'values' in i
        ? `${JSON.stringify(given)} is not allowed; allowed: ${(i.values as unknown[]).map(String).join(', ')}`
        : i.code === 'unrecognized_keys'
          ? `unknown field ${i.keys.map((k) => `"${k}"`).join(', ')}`
          : i.code === 'invalid_type' && i.path.length > 0 && given === undefined
            ? `missing${field === 'tokens' ? ': the file must list its tokens' : ''}`
            : i.code === 'invalid_type'
              ? `must be ${i.expected === 'array' ? 'a list' : i.expected === 'object' ? 'a mapping of fields' : `a ${i.expected}`}, not ${describeValue(i.path.length > 0 ? given : doc)}`
              : i.message;
    throw new TokenFileError(`--api-token-file ${path}:${pos.line}:${pos.col}: ${field}: ${reason}\n${TOKEN_FILE_SHAPE}`);
  }
  return {
    actions: true,
    readsNeedToken: r.data.reads === 'token',
    tokens: r.data.tokens.map((t) => ({ name: t.name, role: t.role, sha256: t.sha256 ? Buffer.from(t.sha256, 'hex') : sha(t.token!) })),
  };
}

/** A YAML value in words, for a message: `a list`, `a number (5)`, `the text "abc"`. */
function describeValue(v: unknown): string {
  if (v === null || v === undefined) return 'empty';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return `the text ${JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v)}`;
  return `a ${typeof v} (${String(v)})`;
}

/**
 * The caller of a request from its `Authorization` header.
 * @returns the caller (anonymous without a header), or 'bad' for a header with an unknown token.
 */
export function identify(rules: AccessRules, authorization: string | undefined): Caller | 'bad' {
  if (!authorization) return { role: 'anonymous', name: null };
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!m) return 'bad';
  const h = sha(m[1]!);
  let found: AccessRules['tokens'][number] | undefined;
  for (const t of rules.tokens) if (timingSafeEqual(t.sha256, h) && !found) found = t; // every entry, no early exit
  return found ? { role: found.role, name: found.name } : 'bad';
}
