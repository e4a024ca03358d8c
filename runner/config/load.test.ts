import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import type { ConfigError } from './errors.js';
import { loadSchedules, MAX_SCHEDULE_FILE_BYTES, parseScheduleText } from './load.js';

const fixtures = (name: string): string => fileURLToPath(new URL(`../../test/fixtures/config/${name}`, import.meta.url));
const casesUrl = new URL('../../test/cases/schedule-times.json', import.meta.url);

interface RejectedCase {
  cron: string;
  timeZone?: string;
  why?: string;
}

/** Asserts exactly one error and its location; returns it for further checks. */
function only(errors: ConfigError[], want: { file?: string; line: number; col: number; field: string; code?: string }): ConfigError {
  expect(errors.map((e) => e.format())).toHaveLength(1);
  return expectError(errors, want);
}

/** Asserts that an error with this field exists, at this place; returns it. */
function expectError(
  errors: ConfigError[],
  want: { file?: string; line: number; col: number; field: string; code?: string },
): ConfigError {
  const e = errors.find((x) => x.field === want.field);
  expect(e, `no error for ${want.field} in:\n${errors.map((x) => x.format()).join('\n')}`).toBeDefined();
  expect({ file: e!.file, line: e!.line, col: e!.col, field: e!.field, ...(want.code ? { code: e!.code } : {}) }).toEqual({
    file: want.file ?? 'test.yaml',
    ...want,
  });
  return e!;
}

const HTTP_JOB = '{ kind: http, url: "https://example.com/hook" }';

describe('parseScheduleText: valid files', () => {
  it('loads the example shape with every field', async () => {
    const file = fixtures('example.yaml');
    const r = await parseScheduleText(readFileSync(file, 'utf8'), file);
    expect(r.errors).toEqual([]);
    expect(r.schedules).toHaveLength(1);
    const s = r.schedules[0]!;
    expect(s).toMatchObject({
      name: 'ping-billing',
      cron: '*/2 * * * * *',
      timeZone: 'Europe/Berlin',
      jitterMs: 1000,
      startingDeadlineMs: 300_000,
      suspend: false,
      catchUp: 'latest',
      maxCatchUpRuns: 10,
      job: { kind: 'http', url: 'https://billing.example.com/ping', method: 'POST', headers: { 'X-Token': 'abc' }, timeoutMs: 10_000 },
      source: { file, line: 3, col: 5 },
    });
    expect(s.definitionHash).toMatch(/^[0-9a-f]{64}$/);
    expect(s.due.next(Date.UTC(2026, 0, 1))).toBe(Date.UTC(2026, 0, 1, 0, 0, 2));
  });

  it('applies defaults: method POST, timeZone UTC, jitterMs 0, startingDeadlineMs null, catchUp latest', async () => {
    const r = await parseScheduleText(
      ['schedules:', '  - name: ping-billing', '    cron: "*/2 * * * * *"', '    job: { kind: http, url: "https://billing.example.com/ping" }'].join('\n'),
      'test.yaml',
    );
    expect(r.errors).toEqual([]);
    expect(r.schedules[0]).toMatchObject({
      timeZone: 'UTC',
      jitterMs: 0,
      startingDeadlineMs: null,
      suspend: false,
      catchUp: 'latest',
      maxCatchUpRuns: 10,
      job: { kind: 'http', method: 'POST', headers: {}, timeoutMs: 30_000 },
    });
  });

  it('gives the same definitionHash for the same definition written differently, another for a change', async () => {
    const a = await parseScheduleText(`schedules:\n  - { name: x, cron: "0 * * * *", jitter: 60s, job: ${HTTP_JOB} }\n`, 'a.yaml');
    const b = await parseScheduleText(
      'schedules:\n  - job:\n      url: "https://example.com/hook"\n      kind: http\n    jitter: 1m\n    cron: "0 * * * *"\n    name: x\n',
      'b.yaml',
    );
    const c = await parseScheduleText(`schedules:\n  - { name: x, cron: "0 * * * *", jitter: 61s, job: ${HTTP_JOB} }\n`, 'c.yaml');
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
    expect(a.schedules[0]!.definitionHash).toBe(b.schedules[0]!.definitionHash);
    expect(c.schedules[0]!.definitionHash).not.toBe(a.schedules[0]!.definitionHash);
  });

  it('gives the same definitionHash whatever order the keys of a map (e.g. headers) are written in', async () => {
    const job = (headers: string): string => `{ kind: http, url: "https://example.com/hook", headers: { ${headers} } }`;
    const a = await parseScheduleText(`schedules:\n  - { name: x, cron: "0 * * * *", job: ${job('X-A: "1", X-B: "2"')} }\n`, 'a.yaml');
    const b = await parseScheduleText(`schedules:\n  - { name: x, cron: "0 * * * *", job: ${job('X-B: "2", X-A: "1"')} }\n`, 'b.yaml');
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
    expect(a.schedules[0]!.definitionHash).toBe(b.schedules[0]!.definitionHash);
  });

  it('overdueGrace: in ms when given; absent, the field is absent, so existing definitions keep their hash', async () => {
    const a = await parseScheduleText(`schedules:\n  - { name: x, cron: "0 * * * *", job: ${HTTP_JOB} }\n`, 'a.yaml');
    const b = await parseScheduleText(`schedules:\n  - { name: x, cron: "0 * * * *", overdueGrace: 90s, job: ${HTTP_JOB} }\n`, 'b.yaml');
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
    expect('overdueGraceMs' in a.schedules[0]!).toBe(false);
    expect(b.schedules[0]!.overdueGraceMs).toBe(90_000);
    expect(b.schedules[0]!.definitionHash).not.toBe(a.schedules[0]!.definitionHash);
    const bad = await parseScheduleText(`schedules:\n  - { name: x, cron: "0 * * * *", overdueGrace: 30, job: ${HTTP_JOB} }\n`, 'c.yaml');
    expect(bad.errors.map((e) => e.format())).toEqual([expect.stringMatching(/c\.yaml:2:\d+: schedules\[0\]\.overdueGrace: must be a duration with a unit/)]);
  });

  it('compiles a module job relative to the schedule file', async () => {
    const r = await parseScheduleText(
      'schedules:\n  - name: user-job\n    cron: "@daily"\n    job: { kind: module, path: ./job-ok.ts, params: { a: 1 } }\n',
      fixtures('modules/schedules.yaml'),
    );
    expect(r.errors).toEqual([]);
    // Checked in a sandbox process: the compiled job carries the file and the limits, not the loaded module.
    expect(r.schedules[0]!.job).toEqual({
      kind: 'module',
      file: fixtures('modules/job-ok.ts'),
      params: { a: 1 },
      isolation: 'process',
      limits: { loadTimeoutMs: 10_000, memoryLimitMb: 1024 },
    });
  });
});

describe('parseScheduleText: refusals name file, line, col and field', () => {
  const cases = JSON.parse(readFileSync(casesUrl, 'utf8')) as { rejected: RejectedCase[] };

  it("names a nested block's discriminator, not the job kind, when it is unknown (storage.type)", async () => {
    const r = await parseScheduleText(
      'schedules:\n  - name: b\n    cron: "0 3 * * *"\n    job:\n      kind: backup\n      resourceSets: [{ apiVersion: v1, kinds: [ConfigMap] }]\n      storage: { type: gcs, bucket: x }\n',
      'gcs.yaml',
    );
    const e = only(r.errors, { file: 'gcs.yaml', line: 7, col: 24, field: 'schedules[0].job.storage.type' });
    expect(e.reason).toBe('unknown type "gcs"');
    expect(e.hint).toBe('one of: local, s3');
  });

  it('refuses an http job with credentials in the url and an Authorization header (they would be joined)', async () => {
    const r = await parseScheduleText(
      'schedules:\n  - name: a\n    cron: "0 * * * *"\n    job:\n      kind: http\n      url: "http://u:p@example.com/x"\n      headers: { authorization: "Bearer X" }\n',
      'auth.yaml',
    );
    const e = only(r.errors, { file: 'auth.yaml', line: 7, col: 33, field: 'schedules[0].job.headers.authorization' });
    expect(e.reason).toContain('keep either those or this header');
  });

  it('finds the reference cases (test/cases/)', () => {
    expect(cases.rejected.length).toBeGreaterThan(0);
  });

  for (const [i, c] of cases.rejected.entries()) {
    it(`refuses ${JSON.stringify(c.cron)}${c.timeZone ? ` in ${c.timeZone}` : ''} (${c.why ?? 'syntax'})`, async () => {
      const lines = ['schedules:', `  - name: case-${i}`, `    cron: ${JSON.stringify(c.cron)}`];
      if (c.timeZone) lines.push(`    timeZone: ${c.timeZone}`);
      lines.push(`    job: ${HTTP_JOB}`);
      const r = await parseScheduleText(lines.join('\n'), 'test.yaml');
      expect(r.schedules).toEqual([]);
      const want = c.timeZone
        ? { line: 4, col: 15, field: 'schedules[0].timeZone' }
        : { line: 3, col: 11, field: 'schedules[0].cron' };
      const e = only(r.errors, want);
      expect(e.code).toMatch(/^(CRON_|ZONE_)/);
      expect(e.format()).toMatch(new RegExp(`^test\\.yaml:${want.line}:${want.col}: ${want.field.replace(/[[\].]/g, '\\$&')}: .+`));
    });
  }

  it('refuses a bad duration', async () => {
    const r = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "* * * * *"\n    jitter: 5 minutes\n    job: ${HTTP_JOB}\n`,
      'test.yaml',
    );
    const e = only(r.errors, { line: 4, col: 13, field: 'schedules[0].jitter', code: 'SCHEMA_INVALID' });
    expect(e.reason).toContain('is not a duration');
    expect(r.schedules).toEqual([]);
  });

  it('refuses a bare number as a duration, with a hint', async () => {
    const r = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "* * * * *"\n    startingDeadline: 30\n    job: ${HTTP_JOB}\n`,
      'test.yaml',
    );
    const e = only(r.errors, { line: 4, col: 23, field: 'schedules[0].startingDeadline' });
    expect(e.hint).toContain('30s');
  });

  it('shows a number past JavaScript\'s (1e400) or one in another base as written, once, with a hint that works (a user\'s break-it run)', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: 1e400\n    cron: "* * * * *"\n    jitter: 1e400\n    timeout: 0x10\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    expect(r.errors.map((e) => e.format())).toEqual([
      'test.yaml:2:11: schedules[0].name: expected string, got an infinite number (too large for JavaScript)\n  hint: YAML reads 1e400 as a number: write it in quotes to make it text, e.g. name: "1e400"',
      // one error, not also "jitter Infinityd reaches the next due time"
      'test.yaml:4:13: schedules[0].jitter: must be a duration with a unit, not the bare number 1e400\n  hint: write a duration such as 30s or 5m (units ms, s, m, h, d)',
      'test.yaml:5:14: schedules[0].timeout: must be a duration with a unit, not the bare number 0x10\n  hint: write e.g. 16s or 16ms (units ms, s, m, h, d)',
    ]);
    expect(r.errors.map((e) => e.format()).join('\n')).not.toContain('Infinity');
  });

  it('refuses a number nearer to 0 than JavaScript keeps (1e-400 would be stored as 0), keeps 0.0 and the least double (a user\'s break-it run)', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: tiny\n    cron: "* * * * *"\n    job: {kind: handler, handler: h, params: {tiny: 1e-400, zero: 0.0, least: 5e-324}}\n`, 'test.yaml');
    expect(r.errors.map((e) => e.format())).toEqual([
      'test.yaml:4:53: schedules[0].job.params.tiny: this number is nearer to 0 than a JavaScript number can be: it would be stored as 0\n  hint: write 0 if that is what you mean, or quote it ("…") to keep it as text',
    ]);
    const ok = await parseScheduleText(`schedules:\n  - name: tiny\n    cron: "* * * * *"\n    job: {kind: handler, handler: h, params: {zero: 0.0, least: 5e-324}}\n`, 'test.yaml');
    expect(ok.errors).toEqual([]);
  });

  it('refuses a number where text is expected with the hint to quote it (cron: 5, name: 123)', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: 123\n    cron: 5\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    expect(r.errors).toHaveLength(2);
    const name = expectError(r.errors, { line: 2, col: 11, field: 'schedules[0].name' });
    expect(name.reason).toBe('expected string, got a number');
    expect(name.hint).toBe('YAML reads 123 as a number: write it in quotes to make it text, e.g. name: "123"');
    const cron = expectError(r.errors, { line: 3, col: 11, field: 'schedules[0].cron' });
    expect(cron.hint).toBe('YAML reads 5 as a number: write the cron expression in quotes, e.g. cron: "*/5 * * * *"');
  });

  it('refuses a bad name (not a DNS-1123 label)', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: Ping_Billing\n    cron: "* * * * *"\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    const e = only(r.errors, { line: 2, col: 11, field: 'schedules[0].name', code: 'SCHEMA_INVALID' });
    expect(e.reason).toContain('DNS-1123');
  });

  it('refuses a name longer than 63 characters', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: ${'a'.repeat(64)}\n    cron: "* * * * *"\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    only(r.errors, { line: 2, col: 11, field: 'schedules[0].name' });
  });

  it('refuses duplicate names in one file, pointing at the second and naming the first', async () => {
    const text = [
      'schedules:',
      `  - name: dup`,
      `    cron: "0 * * * *"`,
      `    job: ${HTTP_JOB}`,
      `  - name: dup`,
      `    cron: "30 * * * *"`,
      `    job: ${HTTP_JOB}`,
    ].join('\n');
    const r = await parseScheduleText(text, 'test.yaml');
    const e = only(r.errors, { line: 5, col: 11, field: 'schedules[1].name', code: 'NAME_DUPLICATE' });
    expect(e.reason).toContain('schedules[0]');
    expect(e.reason).toBe('name "dup" is already used by schedules[0] (test.yaml:2:11)');
    expect(r.schedules).toEqual([]);
  });

  it('refuses an unknown key at the key, suggesting the right one', async () => {
    const r = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "* * * * *"\n    timezone: Europe/Berlin\n    job: ${HTTP_JOB}\n`,
      'test.yaml',
    );
    const e = only(r.errors, { line: 4, col: 5, field: 'schedules[0].timezone', code: 'SCHEMA_INVALID' });
    expect(e.reason).toBe('unknown key "timezone"');
    expect(e.hint).toContain('did you mean "timeZone"?');
  });

  it('refuses an unknown key inside the job block', async () => {
    const r = await parseScheduleText(
      'schedules:\n  - name: a\n    cron: "* * * * *"\n    job:\n      kind: http\n      url: https://example.com/\n      timout: 5s\n',
      'test.yaml',
    );
    const e = only(r.errors, { line: 7, col: 7, field: 'schedules[0].job.timout' });
    expect(e.hint).toContain('did you mean "timeout"?');
  });

  it('refuses an unknown top-level key', async () => {
    const r = await parseScheduleText(`schedule:\n  - name: a\nschedules:\n  - { name: a, cron: "* * * * *", job: ${HTTP_JOB} }\n`, 'test.yaml');
    only(r.errors, { line: 1, col: 1, field: 'schedule' });
  });

  it('refuses an unknown job kind', async () => {
    const r = await parseScheduleText('schedules:\n  - name: a\n    cron: "* * * * *"\n    job: { kind: ftp, url: x }\n', 'test.yaml');
    const e = only(r.errors, { line: 4, col: 18, field: 'schedules[0].job.kind', code: 'SCHEMA_INVALID' });
    expect(e.reason).toBe('unknown job kind "ftp"');
    expect(e.hint).toContain('http');
  });

  it('refuses a job without a kind, pointing at the job map', async () => {
    const r = await parseScheduleText('schedules:\n  - name: a\n    cron: "* * * * *"\n    job:\n      url: https://example.com/\n', 'test.yaml');
    only(r.errors, { line: 5, col: 7, field: 'schedules[0].job.kind' });
  });

  it('refuses an http job without url, pointing at the job map', async () => {
    const r = await parseScheduleText('schedules:\n  - name: a\n    cron: "* * * * *"\n    job:\n      kind: http\n', 'test.yaml');
    const e = only(r.errors, { line: 5, col: 7, field: 'schedules[0].job.url' });
    expect(e.reason).toBe('is required');
  });

  it('refuses an empty url value, pointing at the key', async () => {
    const r = await parseScheduleText('schedules:\n  - name: a\n    cron: "* * * * *"\n    job:\n      kind: http\n      url:\n', 'test.yaml');
    const e = only(r.errors, { line: 6, col: 7, field: 'schedules[0].job.url' });
    expect(e.reason).toContain('has no value');
  });

  it('refuses an http URL with a protocol other than http(s)', async () => {
    const r = await parseScheduleText(
      'schedules:\n  - name: a\n    cron: "* * * * *"\n    job:\n      kind: http\n      url: ftp://example.com/x\n',
      'test.yaml',
    );
    const e = only(r.errors, { line: 6, col: 12, field: 'schedules[0].job.url' });
    expect(e.format()).toBe('test.yaml:6:12: schedules[0].job.url: must be an http:// or https:// URL');
  });

  it('refuses a jitter that reaches the next due time, saying the gap', async () => {
    const r = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "* * * * *"\n    jitter: 90s\n    job: ${HTTP_JOB}\n`,
      'test.yaml',
    );
    const e = only(r.errors, { line: 4, col: 13, field: 'schedules[0].jitter', code: 'JITTER_TOO_LONG' });
    expect(e.reason).toBe('jitter 90s reaches the next due time (due times can be 60s apart); use a jitter below 60s');
  });

  it('refuses a jitter equal to the gap, and accepts one just below it', async () => {
    const bad = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "*/2 * * * * *"\n    jitter: 2s\n    job: ${HTTP_JOB}\n`,
      'test.yaml',
    );
    only(bad.errors, { line: 4, col: 13, field: 'schedules[0].jitter', code: 'JITTER_TOO_LONG' });
    const good = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "*/2 * * * * *"\n    jitter: 1999ms\n    job: ${HTTP_JOB}\n`,
      'test.yaml',
    );
    expect(good.errors).toEqual([]);
  });

  it('refuses a module job whose file does not exist', async () => {
    const r = await parseScheduleText(
      'schedules:\n  - name: a\n    cron: "@daily"\n    job: { kind: module, path: ./missing.ts }\n',
      fixtures('modules/schedules.yaml'),
    );
    const e = only(r.errors, {
      file: fixtures('modules/schedules.yaml'),
      line: 4,
      col: 32,
      field: 'schedules[0].job.path',
      code: 'JOB_INVALID',
    });
    expect(e.reason).toBe(`module ./missing.ts: not found (${fixtures('modules/missing.ts')})`);
  });

  it('refuses a module job whose default export has no run()', async () => {
    const r = await parseScheduleText(
      'schedules:\n  - name: a\n    cron: "@daily"\n    job:\n      kind: module\n      path: ./no-run.ts\n',
      fixtures('modules/schedules.yaml'),
    );
    const e = only(r.errors, { file: fixtures('modules/schedules.yaml'), line: 6, col: 13, field: 'schedules[0].job.path' });
    expect(e.reason).toContain('run(context, params)');
  });

  it('refuses maxCatchUpRuns without catchUp: all', async () => {
    const r = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "@daily"\n    maxCatchUpRuns: 5\n    job: ${HTTP_JOB}\n`,
      'test.yaml',
    );
    only(r.errors, { line: 4, col: 21, field: 'schedules[0].maxCatchUpRuns' });
  });

  it('collects every error of a file, sorted by position, and returns nothing from it', async () => {
    const text = [
      'schedules:',
      '  - name: good',
      '    cron: "@hourly"',
      `    job: ${HTTP_JOB}`,
      '  - name: Bad',
      '    cron: "61 * * * *"',
      '    timeZone: Europe/Berln',
      '    jitter: soon',
      '    job: { kind: http, url: "mailto:x@example.com", colour: red }',
      '  - name: also-bad',
      '    cron: "* * * * *"',
      '    job: { kind: module, path: ./nope.js }',
    ].join('\n');
    const r = await parseScheduleText(text, 'test.yaml', { baseDir: fixtures('modules') });
    expect(r.schedules).toEqual([]);
    expect(r.errors.map((e) => `${e.line}:${e.col} ${e.field}`)).toEqual([
      '5:11 schedules[1].name',
      '6:11 schedules[1].cron',
      '7:15 schedules[1].timeZone', // with the bad cron: every error at once
      '8:13 schedules[1].jitter',
      '9:29 schedules[1].job.url',
      '9:53 schedules[1].job.colour',
      '12:32 schedules[2].job.path',
    ]);
  });

  it('follows YAML anchors and << merge keys, locating errors in the anchored block', async () => {
    const text = [
      'schedules:',
      '  - name: first',
      '    cron: "@hourly"',
      '    job: &hook',
      '      kind: http',
      '      url: "https://example.com/hook"',
      '      timeout: 5s',
      '  - name: second',
      '    cron: "@daily"',
      '    job: { <<: *hook, method: GET }',
      '  - name: third',
      '    cron: "@daily"',
      '    job: { <<: *hook, timeout: forever }',
    ].join('\n');
    const r = await parseScheduleText(text, 'test.yaml');
    only(r.errors, { line: 13, col: 32, field: 'schedules[2].job.timeout', code: 'SCHEMA_INVALID' });
    const ok = await parseScheduleText(text.split('\n').slice(0, 10).join('\n'), 'test.yaml');
    expect(ok.errors).toEqual([]);
    expect(ok.schedules[1]!.job).toMatchObject({ kind: 'http', url: 'https://example.com/hook', method: 'GET', timeoutMs: 5000 });
  });

  it('points at the anchored value when a merged key is wrong', async () => {
    const text = [
      'schedules:',
      '  - name: first',
      '    cron: "@hourly"',
      '    job: &hook { kind: http, url: "gopher://example.com/" }',
      '  - name: second',
      '    cron: "@daily"',
      '    job: { <<: *hook, method: GET }',
    ].join('\n');
    const r = await parseScheduleText(text, 'test.yaml');
    expect(r.errors.map((e) => `${e.line}:${e.col} ${e.field}`)).toEqual(['4:35 schedules[0].job.url', '4:35 schedules[1].job.url']);
  });

  it('hints at true/false for yes/no and at the file shape for a top-level list', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"\n    suspend: yes\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    expect(only(r.errors, { line: 4, col: 14, field: 'schedules[0].suspend' }).hint).toContain('true or false');
    const list = await parseScheduleText('- name: a\n', 'test.yaml');
    expect(only(list.errors, { line: 1, col: 1, field: '' }).format()).toBe(
      'test.yaml:1:1: expected a map, got a list\n  hint: a schedule file is a map with a "schedules:" list',
    );
  });

  it('refuses YAML syntax errors with file:line:col and a hint for an unquoted cron', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: a\n    cron: */2 * * * *\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    const e = r.errors[0]!;
    expect(r.errors).toHaveLength(1);
    expect({ file: e.file, line: e.line, field: e.field, code: e.code }).toEqual({ file: 'test.yaml', line: 3, field: '', code: 'YAML_SYNTAX' });
    expect(e.col).toBeGreaterThanOrEqual(11);
    expect(e.hint).toContain('quote');
  });

  it('reports an unclosed quote or [ / { where it opens, not where the parser gave up', async () => {
    const after = `    job: ${HTTP_JOB}\n  - name: b\n    cron: "5 * * * *"\n    job: ${HTTP_JOB}\n`;
    for (const [open, cron] of [['"', '"0 * * * *'], ["'", "'0 * * * *"]] as const) {
      const r = await parseScheduleText(`schedules:\n  - name: a\n    cron: ${cron}\n${after}`, 'test.yaml');
      const e = only(r.errors, { line: 3, col: 11, field: '', code: 'YAML_SYNTAX' });
      expect(e.reason).toBe('this quoted string is never closed');
      expect(e.hint).toContain(`end it with ${open} on the line it starts`);
    }
    // The next quote in the file would close it for a reader that does not stop at a shallower line: still line 3.
    const two = await parseScheduleText(`schedules:\n  - name: a\n    cron: "0 * * * *\n    job: ${HTTP_JOB}\n  - name: b\n    cron: "5 * * * *\n`, 'test.yaml');
    expect(two.errors.map((e) => [e.line, e.col, e.reason])).toEqual([
      [3, 11, 'this quoted string is never closed'],
      [6, 11, 'this quoted string is never closed'],
    ]);
    const list = await parseScheduleText(`schedules:\n  - name: a\n    cron: [0 * * * *\n${after}`, 'test.yaml');
    expect(only(list.errors, { line: 3, col: 11, field: '', code: 'YAML_SYNTAX' }).format()).toMatch(/^test\.yaml:3:11: this list \(\[\) is never closed\n {2}hint: end it with \]/);
    const map = await parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"\n    job: {kind: http, url: "http://127.0.0.1:1/"\n  - name: b\n    cron: "5 * * * *"\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    expect(only(map.errors, { line: 4, col: 10, field: '', code: 'YAML_SYNTAX' }).reason).toBe('this map ({) is never closed');
    // A closed string with escaped quotes is not taken for an unclosed one.
    const escaped = await parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"\n    description: "say \\"hi\\"" \n    descriptio: 'it''s'\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    expect(escaped.errors.map((e) => e.reason)).not.toContain('this quoted string is never closed');
  });

  it('says a value starting with a reserved character, and text after a closed value, in our words (no "YAML: ")', async () => {
    const at = await parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"\n    description: @team\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    expect(only(at.errors, { line: 4, col: 18, field: '', code: 'YAML_SYNTAX' }).format()).toBe(
      'test.yaml:4:18: a value cannot start with @ unless it is in quotes (YAML reserves @)\n  hint: write the value in quotes, e.g. "@daily"',
    );
    const after = await parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"x\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    const e = only(after.errors, { line: 3, col: 19, field: '', code: 'YAML_SYNTAX' });
    expect(e.reason).toBe('more text follows a value that has ended (after its closing quote, or a map key where a list goes on)');
    expect([...at.errors, ...after.errors].map((x) => x.reason).join('\n')).not.toContain('YAML: ');
  });

  it('refuses a duplicate YAML key, naming it and where the first one is', async () => {
    const r = await parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"\n    cron: "@hourly"\n    job: ${HTTP_JOB}\n`, 'test.yaml');
    expect(only(r.errors, { line: 4, col: 5, field: '', code: 'YAML_SYNTAX' }).format()).toBe(
      'test.yaml:4:5: key "cron" appears twice in this map (first at line 3:5)\n' +
        '  hint: keep one of them: each key may appear once in a map (the later one would silently win)',
    );
  });

  it("says the yaml library's syntax errors in our words, with a hint, where the line's text starts", async () => {
    const first = `schedules:\n  - name: a\n    cron: "@daily"\n    job: ${HTTP_JOB}\n`;
    const two = await parseScheduleText(`${first}---\nschedules: []\n`, 'test.yaml');
    const multi = only(two.errors, { line: 5, col: 1, field: '', code: 'YAML_SYNTAX' });
    expect(multi.reason).toBe('a second YAML document starts here (a --- line): a schedule file holds one document');
    expect(multi.hint).toBe('remove the --- line, or put what follows in a file of its own in the same directory');

    const shallow = await parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"\n  job: ${HTTP_JOB}\n`, 'test.yaml');
    const indent = only(shallow.errors, { line: 4, col: 3, field: '', code: 'YAML_SYNTAX' });
    expect(indent.reason).toBe('this line starts at column 3, not in the column of the keys of the map it follows');
    expect(indent.hint).toBe('line 3 has its key at column 5; indent keys of one map to the same column (with spaces), or start a new list item with "- "');

    const noDash = await parseScheduleText(`schedules:\n  - name: a\n   cron: "@daily"\n`, 'test.yaml');
    const item = only(noDash.errors, { line: 3, col: 4, field: '', code: 'YAML_SYNTAX' });
    expect(item.reason).toBe('this line is in a list but is neither a new item (- …) nor indented like the keys of the item above');
    expect(item.hint).toBe('start a new item with "- ", or indent it to the column of the keys above (column 5, as on line 2)');

    const tab = await parseScheduleText(`schedules:\n  - name: a\n\tcron: "@daily"\n`, 'test.yaml');
    const t = only(tab.errors, { line: 3, col: 1, field: '', code: 'YAML_SYNTAX' });
    expect(t.reason).toBe('a tab indents this line; YAML indentation must be spaces');
    expect(t.hint).toContain('replace the tab with spaces');

    const deep = await parseScheduleText(`schedules:\n  - name: a\n     cron: "@daily"\n`, 'test.yaml');
    const d = only(deep.errors, { line: 2, col: 11, field: '', code: 'YAML_SYNTAX' });
    expect(d.reason).toBe('line 3 is indented deeper than the key on this line, so YAML reads it as part of this value');

    // None says the library's words.
    for (const e of [...two.errors, ...shallow.errors, ...noDash.errors, ...tab.errors, ...deep.errors]) {
      expect(e.reason).not.toMatch(/YAML\.parseAllDocuments|must start at the same column|without - indicator|Tabs are not allowed|compact mappings/);
    }
  });

  it('refuses an empty file and an empty schedules list, with a hint', async () => {
    const empty = await parseScheduleText('# nothing here\n', 'test.yaml');
    const e1 = only(empty.errors, { line: 1, col: 1, field: '', code: 'NO_SCHEDULES' });
    expect(e1.hint).toBeDefined();
    const emptyList = await parseScheduleText('schedules: []\n', 'test.yaml');
    const e2 = only(emptyList.errors, { line: 1, col: 12, field: 'schedules', code: 'NO_SCHEDULES' });
    expect(e2.hint).toBeDefined();
    const noList = await parseScheduleText('schedules:\n', 'test.yaml');
    only(noList.errors, { line: 1, col: 1, field: 'schedules', code: 'NO_SCHEDULES' });
    const otherKey = await parseScheduleText('version: 1\n', 'test.yaml');
    expect(otherKey.errors.map((e) => [e.line, e.col, e.field, e.code])).toEqual([
      [1, 1, 'version', 'SCHEMA_INVALID'],
      [1, 1, 'schedules', 'NO_SCHEDULES'],
    ]);
  });
});

describe('parseScheduleText: keys JavaScript treats specially, values never echoed', () => {
  it('refuses a __proto__ key wherever it is, at the key (zod would drop it and what it holds silently)', async () => {
    const r = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "@daily"\n    __proto__: {suspend: true}\n    job: { kind: module, path: ./job-ok.ts, params: { __proto__: { x: 1 } } }\n`,
      fixtures('modules/schedules.yaml'),
    );
    expect(r.schedules).toEqual([]);
    expect(r.errors.map((e) => `${e.line}:${e.col} ${e.field} ${e.code}`)).toEqual([
      '4:5 schedules[0].__proto__ SCHEMA_INVALID',
      '5:55 schedules[0].job.params.__proto__ SCHEMA_INVALID',
    ]);
  });

  it('names the type of a wrong value, never the value (it may be a secret in the wrong place)', async () => {
    const r = await parseScheduleText(
      `schedules:\n  - name: a\n    cron: "@daily"\n    suspend: 31337\n    retries: "hunter2-pass"\n    job: { kind: http, url: "https://example.com/", method: 424242, params: "pw-777777" }\n`,
      'test.yaml',
    );
    const text = r.errors.map((e) => e.format()).join('\n');
    expect(text).toContain('schedules[0].suspend: expected boolean, got a number');
    expect(text).toContain('schedules[0].job.params: expected a map, got text');
    expect(r.errors).toHaveLength(4);
    expect(text).not.toMatch(/31337|hunter2|424242|777777/);
  });
});

describe('values the YAML step would change silently', () => {
  it('refuses a map or list used as a key (a complex key) at file:line:col, and prints no yaml warning (found by a user: the later of two equal ones won)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-ckey-'));
    const warn = vi.spyOn(process, 'emitWarning');
    try {
      const file = join(dir, 'ckey.yaml');
      writeFileSync(file, `schedules:\n  - name: ck\n    cron: "0 3 * * *"\n    job:\n      kind: handler\n      handler: h\n      params:\n        ? [1, 2]\n        : x\n        ? {a: 1}\n        : y\n`);
      const r = await loadSchedules(file);
      expect(r.schedules).toEqual([]);
      expect(r.errors.map((e) => `${e.line}:${e.col} ${e.field}: ${e.reason.split(':')[0]}`)).toEqual([
        '8:11 schedules[0].job.params: this key is a list (a YAML "? " complex key)',
        '10:11 schedules[0].job.params: this key is a map (a YAML "? " complex key)',
      ]);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an integer literal outside ±(2^53−1) with file:line:col, saying it would lose precision and to quote it; quoted, or a float, it loads', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-bigint-'));
    try {
      const file = join(dir, 'big.yaml');
      writeFileSync(file, `schedules:\n  - name: big\n    cron: "0 3 * * *"\n    job:\n      kind: handler\n      handler: h\n      params: {big: 12345678901234567890, max: 9007199254740991, list: [-9007199254740992], fl: [12345678901234567890.0, 1.2345678901234567890e19]}\n`);
      const r = await loadSchedules(file);
      expect(r.errors.map((e) => e.format())).toEqual([
        `${file}:7:21: schedules[0].job.params.big: this number is outside ±9007199254740991 (2^53−1) and has more digits than a JavaScript number keeps: it would be stored as another number\n` +
          '  hint: quote it ("…" around the digits) to keep every digit as text, and read it as text (or BigInt) in the job',
        `${file}:7:73: schedules[0].job.params.list[0]: this number is outside ±9007199254740991 (2^53−1) and has more digits than a JavaScript number keeps: it would be stored as another number\n` +
          '  hint: quote it ("…" around the digits) to keep every digit as text, and read it as text (or BigInt) in the job',
        // written with a fraction or an exponent, the same number is changed the same way (found by a user)
        `${file}:7:98: schedules[0].job.params.fl[0]: this number is outside ±9007199254740991 (2^53−1) and has more digits than a JavaScript number keeps: it would be stored as another number\n` +
          '  hint: quote it ("…" around the digits) to keep every digit as text, and read it as text (or BigInt) in the job',
        `${file}:7:122: schedules[0].job.params.fl[1]: this number is outside ±9007199254740991 (2^53−1) and has more digits than a JavaScript number keeps: it would be stored as another number\n` +
          '  hint: quote it ("…" around the digits) to keep every digit as text, and read it as text (or BigInt) in the job',
      ]);
      // the value is not shown (params may hold a secret): the position finds it
      expect(r.errors.map((e) => e.format()).join('')).not.toContain('1234567890');
      expect(r.schedules).toEqual([]);
      writeFileSync(file, `schedules:\n  - name: big\n    cron: "0 3 * * *"\n    job: {kind: handler, handler: h, params: {big: "12345678901234567890", f: 1e20, g: 6.02e23, h: 9007199254740992.0, max: 9007199254740991}}\n`);
      const ok = await loadSchedules(file);
      expect(ok.errors).toEqual([]);
      expect((ok.schedules[0]!.job as { params?: unknown }).params).toEqual({ big: '12345678901234567890', f: 1e20, g: 6.02e23, h: 9007199254740992, max: 9007199254740991 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a key YAML reads as a number as the file writes it, in every error about it or under it (not by the rounded number)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-bigkey-'));
    try {
      const file = join(dir, 'keys.yaml');
      writeFileSync(
        file,
        'schedules:\n  - name: k\n    cron: "0 3 * * *"\n    job:\n      kind: http\n      url: http://127.0.0.1:1/x\n      99999999999999999999: x\n' +
          '      headers: {0x1F: {a: 1}}\n',
      );
      const r = await loadSchedules(file);
      const all = r.errors.map((e) => e.format()).join('\n');
      // the number rule (yaml-position.ts), zod's unknown key (messages.ts) and a type error under a hex key (load.ts)
      expect(r.errors.map((e) => `${e.line}:${e.col} ${e.field}`)).toEqual([
        '7:7 schedules[0].job.99999999999999999999',
        '7:7 schedules[0].job.99999999999999999999',
        '8:23 schedules[0].job.headers.0x1F',
      ]);
      expect(all).toContain('unknown key "99999999999999999999"');
      expect(all).not.toMatch(/100000000000000000000|headers\.31/);
      // keys past the document (zod's path of plain data) still read as the data names them
      writeFileSync(file, 'schedules:\n  - name: k\n    cron: "0 3 * * *"\n    job: {kind: handler, handler: h, params: {99999999999999999999: x}}\n');
      expect((await loadSchedules(file)).errors.map((e) => e.field)).toEqual(['schedules[0].job.params.99999999999999999999']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('loadSchedules', () => {
  it('refuses a schedule file above 16 MiB before parsing it, and loads the other files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-big-'));
    try {
      const line = `  - { name: s, cron: "@daily", job: ${HTTP_JOB} }\n`;
      writeFileSync(join(dir, 'big.yaml'), `schedules:\n${line.repeat(Math.ceil((MAX_SCHEDULE_FILE_BYTES + 1) / line.length))}`);
      writeFileSync(join(dir, 'small.yaml'), `schedules:\n  - { name: t, cron: "@daily", job: ${HTTP_JOB} }\n`);
      const before = process.memoryUsage().heapUsed;
      const r = await loadSchedules(dir);
      // Parsing 16 MiB of YAML would take hundreds of MB of heap; refusing it takes none.
      expect(process.memoryUsage().heapUsed - before).toBeLessThan(64 * 1024 * 1024);
      expect(r.files).toEqual([
        { file: join(dir, 'big.yaml'), ok: false, scheduleCount: 0 },
        { file: join(dir, 'small.yaml'), ok: true, scheduleCount: 1 },
      ]);
      const e = only(r.errors, { file: join(dir, 'big.yaml'), line: 0, col: 0, field: '', code: 'FILE_TOO_LARGE' });
      expect(e.format()).toMatch(/big\.yaml: is 16\.0 MiB; a schedule file may be at most 16\.0 MiB\n {2}hint: split the schedules into several/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads a file just below the limit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-big-'));
    try {
      const text = `schedules:\n  - { name: t, cron: "@daily", job: ${HTTP_JOB} }\n`;
      writeFileSync(join(dir, 'a.yaml'), text + '#'.repeat(MAX_SCHEDULE_FILE_BYTES - text.length - 1) + '\n');
      const r = await loadSchedules(join(dir, 'a.yaml'));
      expect(r.errors).toEqual([]);
      expect(r.schedules.map((x) => x.name)).toEqual(['t']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses both files when they give one group different limits (each replica would enforce its own)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-groups-'));
    try {
      const file = (limits: string, name: string): string => `groups:
  shared: ${limits}
schedules:
  - name: ${name}
    cron: "* * * * *"
    group: shared
    job: {kind: http, url: "http://127.0.0.1:1/"}
`;
      writeFileSync(join(dir, 'a.yaml'), file('{maxConcurrent: 1}', 'xa'));
      writeFileSync(join(dir, 'b.yaml'), file('{maxConcurrent: 5}', 'xb'));
      const res = await loadSchedules(dir);
      expect(res.schedules).toEqual([]);
      expect(res.errors.map((e) => `${e.code} ${e.file.endsWith('a.yaml') ? 'a' : 'b'}:${e.line}:${e.col}`)).toEqual(['GROUP_CONFLICT a:4:5', 'GROUP_CONFLICT b:4:5']);
      expect(res.errors[0]!.message).toContain('group "shared" is 1 at once, no rate limit here but 5 at once, no rate limit in');
      // The same limits in both files: one group, both files load.
      writeFileSync(join(dir, 'b.yaml'), file('{maxConcurrent: 1}', 'xb'));
      const ok = await loadSchedules(dir);
      expect(ok.errors).toEqual([]);
      expect(ok.schedules.map((s) => s.name).sort()).toEqual(['xa', 'xb']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads only *.yaml and *.yml files of a directory, skipping names that start with "." (editor and ConfigMap files)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-dir-'));
    try {
      writeFileSync(join(dir, 'b.yml'), `schedules:\n  - { name: b, cron: "@daily", job: ${HTTP_JOB} }\n`);
      writeFileSync(join(dir, 'a.yaml'), `schedules:\n  - { name: a, cron: "@daily", job: ${HTTP_JOB} }\n`);
      writeFileSync(join(dir, '.a.yaml.swp.yaml'), 'not: [yaml');
      writeFileSync(join(dir, 'notes.txt'), 'not: [yaml');
      const r = await loadSchedules(dir);
      expect(r.errors).toEqual([]);
      expect(r.files.map((f) => f.file)).toEqual([join(dir, 'a.yaml'), join(dir, 'b.yml')]);
      expect(r.schedules.map((x) => x.name)).toEqual(['a', 'b']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('loads the good file of a directory and refuses the bad one', async () => {
    const dir = fixtures('mixed-dir');
    const r = await loadSchedules(dir);
    expect(r.files).toEqual([
      { file: `${dir}/a-bad.yaml`, ok: false, scheduleCount: 0 },
      { file: `${dir}/b-good.yaml`, ok: true, scheduleCount: 2 },
    ]);
    expect(r.schedules.map((s) => [s.name, s.source.file, s.source.line, s.source.col])).toEqual([
      ['hourly-sync', `${dir}/b-good.yaml`, 2, 5],
      ['cleanup', `${dir}/b-good.yaml`, 5, 5],
    ]);
    only(r.errors, { file: `${dir}/a-bad.yaml`, line: 6, col: 12, field: 'schedules[0].job.url' });
  });

  it('refuses every file of a directory that defines a reused name, each naming the other definition', async () => {
    const dir = fixtures('dup-dir');
    const r = await loadSchedules(dir);
    expect(r.files).toEqual([
      { file: `${dir}/a.yaml`, ok: false, scheduleCount: 0 },
      { file: `${dir}/b.yml`, ok: false, scheduleCount: 0 },
    ]);
    expect(r.schedules).toEqual([]);
    const b = r.errors.find((e) => e.file === `${dir}/b.yml`)!;
    expect(b).toMatchObject({ line: 5, col: 11, field: 'schedules[1].name', code: 'NAME_DUPLICATE' });
    expect(b.reason).toContain(`${dir}/a.yaml:2:11`);
    const a = r.errors.find((e) => e.file === `${dir}/a.yaml`)!;
    expect(a).toMatchObject({ line: 2, col: 11, field: 'schedules[0].name', code: 'NAME_DUPLICATE' });
    expect(a.reason).toContain(`${dir}/b.yml:5:11`);
    expect(r.errors).toHaveLength(2);
  });

  it('loads a single file', async () => {
    const r = await loadSchedules(fixtures('example.yaml'));
    expect(r.errors).toEqual([]);
    expect(r.files).toEqual([{ file: fixtures('example.yaml'), ok: true, scheduleCount: 1 }]);
  });

  it('reports a missing path clearly', async () => {
    const path = fixtures('no-such-dir');
    const r = await loadSchedules(path);
    expect(r.schedules).toEqual([]);
    expect(r.files).toEqual([]);
    const e = only(r.errors, { file: path, line: 0, col: 0, field: '', code: 'CONFIG_IO' });
    expect(e.format()).toMatch(/^.*no-such-dir: does not exist\n {2}hint: /);
  });

  it('reports a directory without schedule files', async () => {
    const r = await loadSchedules(fixtures('empty-dir'));
    only(r.errors, { file: fixtures('empty-dir'), line: 0, col: 0, field: '', code: 'CONFIG_IO' });
  });
});

// The positioned document of a file is let go after the data and each entry's and name's position are read; other
// positions come from a second parse, only when there is an error. These pin that the positions stay exact.
describe('positions in a large file (the document is parsed again for errors)', () => {
  const N = 5_000;
  const entries = (n: number, last = ''): string =>
    `schedules:\n${Array.from({ length: n }, (_, i) => `  - name: s-${i}\n    cron: "${i % 60} * * * *"\n    job: ${HTTP_JOB}\n`).join('')}${last}`;

  it('gives every schedule its entry position (source line:col)', async () => {
    const r = await parseScheduleText(entries(N), 'big.yaml');
    expect(r.errors).toEqual([]);
    expect(r.schedules).toHaveLength(N);
    expect(r.schedules[0]!.source).toEqual({ file: 'big.yaml', line: 2, col: 5 });
    expect(r.schedules[N - 1]!.source).toEqual({ file: 'big.yaml', line: 2 + 3 * (N - 1), col: 5 });
  });

  it('names file:line:col of a schema error in the last of 5,000 entries', async () => {
    const text = entries(N, `  - name: bad\n    cron: "0 * * * *"\n    jitter: 5 parsecs\n    job: ${HTTP_JOB}\n`);
    const r = await parseScheduleText(text, 'big.yaml');
    const e = only(r.errors, { file: 'big.yaml', line: 2 + 3 * N + 2, col: 13, field: `schedules[${N}].jitter` });
    expect(e.format()).toMatch(new RegExp(`^big\\.yaml:${2 + 3 * N + 2}:13`));
    expect(r.schedules).toEqual([]);
  });

  it('names the positions of a name defined in two large files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-positions-'));
    try {
      writeFileSync(join(dir, 'a.yaml'), entries(N));
      writeFileSync(join(dir, 'b.yaml'), `schedules:\n  - name: other\n    cron: "0 * * * *"\n    job: ${HTTP_JOB}\n  - name: s-${N - 1}\n    cron: "0 * * * *"\n    job: ${HTTP_JOB}\n`);
      const r = await loadSchedules(dir);
      const inA = expectError(r.errors.filter((e) => e.file === join(dir, 'a.yaml')), {
        file: join(dir, 'a.yaml'),
        line: 2 + 3 * (N - 1),
        col: 11,
        field: `schedules[${N - 1}].name`,
        code: 'NAME_DUPLICATE',
      });
      expect(inA.reason).toContain(`${join(dir, 'b.yaml')}:5:11`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the position of a calendar reference that names no calendar, in a large file', async () => {
    const text = entries(N, `  - name: cal\n    cron: "0 * * * *"\n    calendar: {exclude: nowhere}\n    job: ${HTTP_JOB}\n`);
    const r = await parseScheduleText(text, 'big.yaml');
    expect(r.errors.length).toBeGreaterThan(0);
    const e = r.errors.find((x) => x.field.startsWith(`schedules[${N}].calendar`));
    expect(e, r.errors.map((x) => x.format()).join('\n')).toBeDefined();
    expect(e!.line).toBe(2 + 3 * N + 2);
  });
});
