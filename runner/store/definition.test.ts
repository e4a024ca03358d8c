/**
 * A stored definition compiles through the loader's object step (runner/config/load.ts `checkScheduleData`), not by
 * reading its JSON again as a YAML file. These tests hold the object step to the file path it replaced:
 * - checkDefinition gives what the same definition gives read as the one-schedule file `{"schedules":[<json>]}`
 *   (the file path, through checkDefinitionBy): the same compiled schedule (name, due times, definition hash,
 *   jitter, job, every other field, windows) or the same problems (code, field, reason, hint, in the same order),
 *   for a table of good and bad definitions;
 * - checkScheduleData gives the same errors as parseScheduleText for the same canonical JSON, positions included;
 * - definition hashes are pinned to what replicas before this change computed (a rollout runs both side by side).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkScheduleData, parseScheduleText, type CompiledSchedule } from '../config/load.js';
import { canonicalJson } from '../text/canonical-json.js';
import { checkDefinition, checkDefinitionBy, MAX_DEFINITION_BYTES, type CheckedDefinition, type DefinitionCompiler } from './definition.js';

/** The file path: the definition's canonical JSON read as a schedule file (YAML document, positions). */
const viaFile: DefinitionCompiler = (_data, json, fileName, baseDir) => parseScheduleText(`{"schedules":[${json}]}`, fileName, { baseDir });

const HTTP = { kind: 'http', url: 'http://127.0.0.1:9/never' };
const base = mkdtempSync(join(tmpdir(), 'cronflock-def-'));
writeFileSync(join(base, 'job.mjs'), 'export default { async run() {} };\n');
const T0 = Date.UTC(2026, 0, 5, 10, 0, 0); // a Monday

const cases: { what: string; def: unknown; writing?: boolean; ok: boolean }[] = [
  { what: 'typical', ok: true, def: { name: 'c-1', cron: '17 3 * * *', job: HTTP } },
  {
    what: 'rich: jitter, zone, retries, tenant, labels, params',
    ok: true,
    def: { name: 'c-2', cron: '30 8 * * 1-5', timeZone: 'Europe/Berlin', jitter: '5m', retries: 3, retryBackoff: '10s', startingDeadline: '10m', tenant: 'acme', labels: { plan: 'gold' }, job: { kind: 'handler', handler: 'sendReport', params: { customer: 'cust-2', recipients: ['a@example.com'], options: { pages: 3, '10': 'x', '9': 'y' } } } },
  },
  { what: 'http job with method and headers', ok: true, def: { name: 'h', cron: '*/5 * * * *', concurrencyPolicy: 'Forbid', job: { kind: 'http', url: 'https://example.com/x', method: 'PUT', headers: { 'X-B': '2', 'X-A': '1' } } } },
  { what: 'a cron blackout (windows attached)', ok: true, def: { name: 'b', cron: '0 * * * *', blackouts: [{ cron: '0 2 * * *', duration: '2h', action: 'skip', name: 'nightly' }], job: HTTP } },
  { what: 'a module job at an absolute path', ok: true, writing: true, def: { name: 'm', cron: '0 * * * *', job: { kind: 'module', path: join(base, 'job.mjs') } } },
  { what: 'H in the cron (hashed by name)', ok: true, def: { name: 'hh', cron: 'H H * * *', job: HTTP } },
  { what: 'undefined members (left out, as JSON leaves them)', ok: true, def: { name: 'u', cron: '0 * * * *', timeZone: undefined, extra: undefined, job: { ...HTTP, method: undefined } } },
  { what: 'bad cron', ok: false, def: { name: 'a', cron: '61 * * * *', job: HTTP } },
  { what: 'bad cron and bad zone', ok: false, def: { name: 'a', cron: '61 * * * *', timeZone: 'Mars/Olympus', job: HTTP } },
  { what: 'unknown job kind', ok: false, def: { name: 'a', cron: '* * * * *', job: { kind: 'ftp', url: 'ftp://x' } } },
  { what: 'no job kind', ok: false, def: { name: 'a', cron: '* * * * *', job: { url: 'http://x/' } } },
  { what: 'bad duration', ok: false, def: { name: 'a', cron: '* * * * *', jitter: 'soon', job: HTTP } },
  { what: 'a duration as a bare number', ok: false, def: { name: 'a', cron: '* * * * *', startingDeadline: 30, job: HTTP } },
  { what: 'unknown field (did you mean)', ok: false, def: { name: 'a', cron: '* * * * *', jiter: '1s', job: HTTP } },
  { what: 'unknown field in the job', ok: false, def: { name: 'a', cron: '* * * * *', job: { ...HTTP, methd: 'GET' } } },
  { what: 'group:', ok: false, def: { name: 'a', cron: '* * * * *', group: 'g', job: HTTP } },
  { what: 'calendar:', ok: false, def: { name: 'a', cron: '* * * * *', calendar: { include: ['holidays'] }, job: HTTP } },
  { what: 'a blackout naming a calendar', ok: false, def: { name: 'a', cron: '0 * * * *', blackouts: [{ calendar: 'h', action: 'skip' }], job: HTTP } },
  { what: 'blackouts over every due time', ok: false, def: { name: 'a', cron: '0 3 * * *', blackouts: [{ cron: '0 2 * * *', duration: '3h', action: 'skip' }], job: HTTP } },
  { what: 'jitter past the gap between due times', ok: false, def: { name: 'a', cron: '* * * * *', jitter: '2m', job: HTTP } },
  { what: 'maxCatchUpRuns without catchUp: all', ok: false, def: { name: 'a', cron: '* * * * *', maxCatchUpRuns: 3, job: HTTP } },
  { what: 'retryBackoffMax below retryBackoff', ok: false, def: { name: 'a', cron: '* * * * *', retryBackoff: '1m', retryBackoffMax: '10s', job: HTTP } },
  { what: 'signing on a handler job', ok: false, def: { name: 'a', cron: '* * * * *', signing: { keys: [{ id: 'k', secretEnv: 'S' }] }, job: { kind: 'handler', handler: 'h' } } },
  { what: 'retries on kind: job', ok: false, def: { name: 'a', cron: '* * * * *', retries: 2, job: { kind: 'job', jobTemplate: { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox' }], restartPolicy: 'Never' } } } } } } },
  { what: 'wrong types and missing fields, in an order unlike the keys', ok: false, def: { suspend: 'yes', name: 'Bad_Name', timeZone: '', retries: -1, job: { url: 5, kind: 'http' } } },
  { what: 'null values', ok: false, def: { name: 'a', cron: null, jitter: null, job: HTTP } },
  { what: 'no name', ok: false, def: { cron: '* * * * *', job: HTTP } },
  { what: 'a bad URL', ok: false, def: { name: 'a', cron: '* * * * *', job: { kind: 'http', url: 'ftp://x' } } },
  { what: 'a module that does not exist', ok: false, def: { name: 'a', cron: '* * * * *', job: { kind: 'module', path: join(base, 'missing.mjs') } } },
  { what: '__proto__ (JSON.parse makes it an own key)', ok: false, def: JSON.parse('{"name":"p","cron":"0 3 * * *","__proto__":{"suspend":true},"job":{"kind":"http","url":"http://127.0.0.1:1/x","headers":{"__proto__":{"a":"b"}}}}') as unknown },
  { what: 'too large', ok: false, def: { name: 'a', cron: '* * * * *', job: { kind: 'handler', handler: 'h', params: { blob: 'x'.repeat(MAX_DEFINITION_BYTES) } } } },
  { what: 'a relative module path when writing', ok: false, writing: true, def: { name: 'a', cron: '* * * * *', job: { kind: 'module', path: './job.mjs' } } },
  { what: 'a relative module path when writing, with other problems', ok: false, writing: true, def: { name: 'a', cron: '61 * * * *', job: { kind: 'module', path: './missing.mjs' } } },
  { what: 'a Date (not JSON)', ok: false, def: { name: 'a', cron: '* * * * *', job: { kind: 'handler', handler: 'h', params: { when: new Date(0) } } } },
];

/** The compiled fields that matter, with due times and the windows' verdicts made comparable. */
function comparable(s: CompiledSchedule): Record<string, unknown> {
  const { due, windows, ...rest } = s;
  const dueTimes: (number | null)[] = [];
  for (let t: number | null = T0, i = 0; i < 8 && t !== null; i++) dueTimes.push((t = due.next(t)));
  return { ...rest, dueTimes, windows: windows ? { calendar: windows.calendar !== null, blackouts: windows.blackouts.length } : undefined };
}

function outcome(r: CheckedDefinition): unknown {
  return r.ok ? { ok: true, schedule: comparable(r.schedule), json: r.json } : { ok: false, message: r.error.message, problems: r.error.problems };
}

describe('checkDefinition: the object step gives what the file path gives', () => {
  it.each(cases)('$what', async ({ def, writing, ok }) => {
    const opts = { baseDir: base, ...(writing ? { writing } : {}) };
    const direct = await checkDefinition(def, opts);
    const file = await checkDefinitionBy(viaFile, def, opts);
    expect(direct.ok).toBe(ok);
    expect(outcome(direct)).toEqual(outcome(file));
    if (!direct.ok) {
      // Field paths are the definition's own, as before (`cron`, `job.url`), never `schedules[0]…`.
      for (const p of direct.error.problems) expect(p.field).not.toMatch(/^schedules/);
    }
  });

  it('says every problem of a definition in the order of its fields (as the file path), not in the order found', async () => {
    const r = await checkDefinition(cases.find((c) => c.what.startsWith('wrong types'))!.def);
    expect(!r.ok && r.error.problems.map((p) => p.field)).toEqual(['cron', 'job.url', 'name', 'retries', 'suspend', 'timeZone']);
  });

  it('keeps the words of the messages (cron, job.url, group:, hints)', async () => {
    const bad = await checkDefinition({ name: 'bad', cron: '61 * * * *', group: 'g', jitter: 'soon', job: { kind: 'http', url: 'ftp://x' } });
    expect(!bad.ok && bad.error.problems).toEqual([
      expect.objectContaining({ code: 'CRON_SYNTAX', field: 'cron', reason: expect.stringContaining('the minute field "61"') }),
      expect.objectContaining({ code: 'GROUP_UNKNOWN', field: 'group', reason: expect.stringMatching(/^a stored schedule cannot use group:/) }),
      expect.objectContaining({ code: 'SCHEMA_INVALID', field: 'jitter' }),
      expect.objectContaining({ code: 'SCHEMA_INVALID', field: 'job.url', reason: 'must be an http:// or https:// URL' }),
    ]);
  });
});

describe('checkScheduleData: the loader without its YAML step', () => {
  const files: string[] = [
    ...cases.filter((c) => c.def !== null && typeof c.def === 'object' && !c.what.startsWith('too large') && !c.what.startsWith('a Date')).map((c) => `{"schedules":[${canonicalJson(c.def)}]}`),
    // What one definition cannot show: duplicate names, a file-level list, two schedules' problems.
    `{"schedules":[${canonicalJson({ name: 'a', cron: '* * * * *', job: HTTP })},${canonicalJson({ name: 'a', cron: '61 * * * *', job: HTTP })}]}`,
    `{"schedules":[]}`,
    `{"groups":{"g":{"maxConcurrent":1}},"schedules":[${canonicalJson({ name: 'a', cron: '* * * * *', group: 'g', job: HTTP })},${canonicalJson({ name: 'b', cron: '* * * * *', group: 'nope', job: HTTP })}]}`,
    `{"calendars":[{"name":"weekends","weekdays":["sat","sun"]}],"schedules":[${canonicalJson({ name: 'a', cron: '0 9 * * 1-5', calendar: { include: ['weekends'] }, job: HTTP })}]}`,
    // __proto__ keys (canonicalJson drops them, so they are written out here), at the top and inside a map.
    '{"schedules":[{"__proto__":{"suspend":true},"cron":"0 3 * * *","job":{"headers":{"__proto__":{"a":"b"}},"kind":"http","url":"http://127.0.0.1:1/x"},"name":"p"}]}',
    '{"schedule":[]}',
    '[1,2]',
  ];
  it.each(files)('%s', async (text) => {
    const fromText = await parseScheduleText(text, 'f.json', { baseDir: base });
    const fromData = await checkScheduleData(JSON.parse(text) as unknown, 'f.json', { baseDir: base });
    const errs = (r: typeof fromText) => r.errors.map((e) => ({ code: e.code, field: e.field, reason: e.reason, hint: e.hint, line: e.line, col: e.col }));
    expect(errs(fromData)).toEqual(errs(fromText));
    expect(fromData.schedules.map(comparable).map(({ source: _s, ...s }) => s)).toEqual(fromText.schedules.map(comparable).map(({ source: _s, ...s }) => s));
    expect(fromData.warnings ?? []).toEqual(fromText.warnings ?? []);
  });
});

describe('definition hashes stay what replicas compute today', () => {
  // Computed by the code before the object step (commit fcb148f, YAML step): a replica of either version
  // publishes the same hash for the same definition, so neither excludes the other during a rollout.
  const pinned: [string, unknown, string][] = [
    ['typical', { name: 'c-1', cron: '17 3 * * *', job: { kind: 'http', url: 'http://127.0.0.1:9/never' } }, '88d7474ef7e4a2efcf3b2101e838bcbb06939b008df9ca41d473a8e8f014f475'],
    [
      'rich (integer-like params keys)',
      { name: 'c-2', cron: '30 8 * * 1-5', timeZone: 'Europe/Berlin', jitter: '5m', retries: 3, retryBackoff: '10s', startingDeadline: '10m', tenant: 'acme', labels: { plan: 'gold', region: 'eu' }, job: { kind: 'handler', handler: 'sendReport', params: { customer: 'cust-2', format: 'pdf', recipients: ['a@example.com', 'b@example.com'], options: { locale: 'de', pages: 3, '10': 'x', '9': 'y' } } } },
      'cace3b5ee673c9b58456c2829ef108ff5773ad0988567f940daa476300b50b20',
    ],
    [
      'a blackout and headers',
      { name: 'c-3', cron: '0 * * * *', blackouts: [{ cron: '0 2 * * *', duration: '2h', action: 'skip', name: 'nightly' }], job: { kind: 'http', url: 'https://example.com/hook', method: 'PUT', headers: { 'X-B': '2', 'X-A': '1' } } },
      '9de523c63858419cc0b57c373305b91b43db8a617abc7d493ddab0f589dd551d',
    ],
  ];
  it.each(pinned)('%s', async (_what, def, hash) => {
    const direct = await checkDefinition(def);
    const file = await checkDefinitionBy(viaFile, def);
    expect(direct.ok && direct.schedule.definitionHash).toBe(hash);
    expect(file.ok && file.schedule.definitionHash).toBe(hash);
    // As read back from the store (keys sorted by the canonical JSON) and as written (any key order).
    const stored = await checkDefinition(JSON.parse(canonicalJson(def)) as unknown);
    expect(stored.ok && stored.schedule.definitionHash).toBe(hash);
  });
});

describe('undefined: a key whose value is undefined is absent, only inside job.params or a list is it refused', () => {
  it('job.params: undefined counts as absent (as params left out); null is refused by the schema as before', async () => {
    const r = await checkDefinition({ name: 'pu', cron: '0 3 * * *', job: { kind: 'handler', handler: 'h', params: undefined } }, { writing: true });
    expect(r.ok).toBe(true);
    const same = await checkDefinition({ name: 'pu', cron: '0 3 * * *', job: { kind: 'handler', handler: 'h' } }, { writing: true });
    expect(r.ok && same.ok && r.schedule.definitionHash).toBe(same.ok && same.schedule.definitionHash);
  });

  it('undefined inside job.params or a list is refused with a hint that offers null only where null is stored', async () => {
    const r = await checkDefinition({ name: 'pu', cron: '0 3 * * *', job: { kind: 'handler', handler: 'h', params: { a: undefined, list: [1, undefined] } } });
    expect(!r.ok && r.error.problems).toEqual([
      { code: 'NOT_JSON', field: 'job.params.a', reason: 'is undefined, which JSON cannot store', hint: 'leave the key out, or give it a value (null is one)' },
      { code: 'NOT_JSON', field: 'job.params.list[1]', reason: 'is undefined, which JSON cannot store', hint: 'remove the element from the list, or put null in its place' },
    ]);
    // a list outside params: null would be refused there, so it is not offered
    const out = await checkDefinition({ name: 'pu', cron: '0 3 * * *', blackouts: [undefined], job: HTTP });
    expect(!out.ok && out.error.problems).toEqual([{ code: 'NOT_JSON', field: 'blackouts[0]', reason: 'is undefined, which JSON cannot store', hint: 'remove the element from the list' }]);
  });
});
