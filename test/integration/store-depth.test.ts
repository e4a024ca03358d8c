/**
 * The one nesting limit of a schedule definition (runner/config/depth.ts, 32 levels) at the doors that need Redis,
 * on a real redis-server, the real HTTP API and the real CLI (`bin/cronflock.js`, from dist/: `npm run build`):
 * - PUT /api/v1/schedules/{name} one level past the limit: 422 SCHEDULE_INVALID naming the field, nothing stored;
 *   exactly at the limit: stored;
 * - a body nested 2000, 3000 (lists) or 5000 (objects) deep: 400 BODY_TOO_DEEP at its line:col, never the 503 a
 *   client would retry, nothing stored;
 * - the library's upsert at depth 20,000: its typed refusal (ScheduleDefinitionError), not a RangeError;
 * - `cronflock apply -f` of YAML past the limit: file:line:col, nothing stored;
 * - a definition stored deeper than the limit before the limit existed (written straight into its key):
 *   `cronflock list`, `list --json` and GET /api/v1/schedules/{name} still answer, showing "…" past the limit.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { MAX_DEFINITION_DEPTH } from '../../runner/config/depth.js';
import { connectFlock, ScheduleDefinitionError, type Flock as LibFlock } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { Flock } from '../support/flock.js';
import { OPERATOR_TOKEN } from '../support/dashboard-flock.js';
import { BIN, ROOT } from '../support/replica.js';

let flock: Flock;
let api: Dashboard;
let lib: LibFlock;
const NS = 'deep';
const keys = new Keyspace(NS);
const op = { authorization: `Bearer ${OPERATOR_TOKEN}` };

async function call(method: string, path: string, body?: string): Promise<{ status: number; body: any }> {
  const r = await fetch(new URL(path, api.url), { method, headers: { 'content-type': 'application/json', ...op }, ...(body !== undefined ? { body } : {}) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}
function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args, '--redis', flock.redis.url, '--namespace', NS], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
/** `n` JSON lists, one inside the other, around 1. */
const lists = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
/** A definition's JSON whose deepest container is at `level` (the definition is level 1; job.params.a's list is 4). */
const bodyAt = (level: number) => `{"cron":"0 3 * * *","job":{"kind":"handler","handler":"h","params":{"a":${lists(level - 3)}}}}`;

beforeAll(async () => {
  flock = await Flock.start();
  const tokens = join(flock.dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n`);
  api = await startDashboard({ redisUrl: flock.redis.url, namespace: NS, listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
  lib = await connectFlock({ redis: flock.redis.url, namespace: NS, by: 'app' });
}, 90_000);
afterAll(async () => {
  await lib?.close();
  await api?.close();
  await flock?.close();
});

describe('one nesting limit for a schedule definition', () => {
  it('PUT one level past the limit: 422 SCHEDULE_INVALID naming the field, nothing stored; exactly the limit is stored', async () => {
    const r = await call('PUT', '/api/v1/schedules/dd-over', bodyAt(MAX_DEFINITION_DEPTH + 1));
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('SCHEDULE_INVALID');
    expect(r.body.error.problems).toEqual([
      expect.objectContaining({ field: `job.params.a${'[0]'.repeat(MAX_DEFINITION_DEPTH - 3)}`, reason: expect.stringContaining(`deeper than ${MAX_DEFINITION_DEPTH} levels`), hint: expect.stringContaining('JSON string') }),
    ]);
    expect(await lib.schedules.get('dd-over')).toBeUndefined();
    const ok = await call('PUT', '/api/v1/schedules/dd-limit', bodyAt(MAX_DEFINITION_DEPTH));
    expect(ok.status).toBe(200);
    expect(await lib.schedules.get('dd-limit')).toBeDefined();
    const got = await call('GET', '/api/v1/schedules/dd-limit');
    expect(got.status).toBe(200);
  });

  it('a body nested thousands deep: 400 BODY_TOO_DEEP at its line:col (not a 503 a client retries), nothing stored', async () => {
    let objects = '1';
    for (let i = 0; i < 5000; i++) objects = `{"o":${objects}}`;
    const bodies = [bodyAt(2000), bodyAt(3000), `{"cron":"0 3 * * *",\n"job":{"kind":"handler","handler":"h","params":${objects}}}`];
    for (const body of bodies) {
      const r = await call('PUT', '/api/v1/schedules/dd2000', body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('BODY_TOO_DEEP');
      expect(r.body.error.message).toMatch(/at line \d+:\d+ of the body/);
      expect(r.body.error.message).toContain(`at most ${MAX_DEFINITION_DEPTH} levels`);
    }
    expect(await lib.schedules.get('dd2000')).toBeUndefined();
  });

  it('the library: upsert 20,000 deep is its typed refusal naming the field, not a RangeError', async () => {
    let v: unknown = 1;
    for (let i = 0; i < 20_000; i++) v = [v];
    const r = await lib.schedules.upsert({ name: 'dd-lib', cron: '0 3 * * *', job: { kind: 'handler', handler: 'h', params: { a: v } } } as never);
    expect(r.ok).toBe(false);
    const e = !r.ok ? r.error : undefined;
    expect(e).toBeInstanceOf(ScheduleDefinitionError);
    expect((e as ScheduleDefinitionError).problems).toEqual([expect.objectContaining({ code: 'SCHEMA_INVALID', field: `job.params.a${'[0]'.repeat(MAX_DEFINITION_DEPTH - 3)}` })]);
    expect(await lib.schedules.get('dd-lib')).toBeUndefined();
  });

  it('apply -f: YAML past the limit is refused at file:line:col, nothing stored; too deep for the parser it says how to fix it', async () => {
    const yaml = (n: number) => `schedules:\n  - name: dd-apply\n    cron: "0 3 * * *"\n    job:\n      kind: handler\n      handler: h\n      params:\n        a: ${'['.repeat(n)}1${']'.repeat(n)}\n`;
    const over = flock.writeSchedules(yaml(MAX_DEFINITION_DEPTH - 2), 'j33.yaml');
    const r = cli('apply', '-f', over);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`j33\\.yaml:8:${12 + MAX_DEFINITION_DEPTH - 3}: schedules\\[0\\]\\.job\\.params\\.a(\\[0\\]){${MAX_DEFINITION_DEPTH - 3}}: nesting deeper than ${MAX_DEFINITION_DEPTH} levels`));
    expect(r.stderr).toContain('nothing was stored');
    const j4 = cli('apply', '-f', flock.writeSchedules(yaml(1500), 'j4.yaml'));
    expect(j4.status).toBe(2);
    expect(j4.stderr).toMatch(/j4\.yaml:8:\d+: nested too deep to read/);
    expect(j4.stderr).toContain('flatten it');
    expect(await lib.schedules.get('dd-apply')).toBeUndefined();
  });

  it('a definition stored too deep before the limit existed: list, list --json and GET still answer, "…" past the limit', async () => {
    expect((await lib.schedules.upsert({ name: 'dd-old', cron: '0 3 * * *', job: { kind: 'handler', handler: 'h', params: { a: 'DEEP' } } } as never)).ok).toBe(true);
    const key = keys.storedSchedule('dd-old');
    const json = (await flock.redisClient.hget(key, 'def'))!;
    await flock.redisClient.hset(key, 'def', json.replace('"DEEP"', lists(2000)));
    const text = cli('list');
    expect(text.stderr).toBe('');
    expect(text.status).toBe(0);
    expect(text.stdout).toContain('dd-old');
    const asJson = cli('list', '--json');
    expect(asJson.status).toBe(0);
    const item = (JSON.parse(asJson.stdout) as any[]).find((s) => s.name === 'dd-old');
    expect(JSON.stringify(item.definition.job.params.a)).toBe(`${'['.repeat(MAX_DEFINITION_DEPTH - 3)}"…"${']'.repeat(MAX_DEFINITION_DEPTH - 3)}`);
    const got = await call('GET', '/api/v1/schedules/dd-old');
    expect(got.status).toBe(200);
    expect(JSON.stringify(got.body.stored.definition.job.params.a)).toContain('"…"');
  });
});
