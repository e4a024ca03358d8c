/**
 * The library's conditional writes and argument checks on a real redis-server (issue 19 follow-ups):
 * - `upsert(def, { ifVersion: 0 })` creates only (refused when it exists), `{ ifVersion: 'exists' }` changes only
 *   (refused when it does not exist), each a VersionConflictError naming the failed condition; nothing written;
 * - a value that is neither a version nor 'exists' is a LibraryArgumentError naming the option;
 * - a schedule name that is not a string (`suspend(42)`) is a LibraryArgumentError, not a ControlError;
 * - a time zone spelled with other letter case (`est`, `utc`) is refused naming the field, with the spelling meant
 *   (and America/New_York for est: EST has no daylight saving); nothing stored;
 * - PUT /api/v1/schedules/{name} with a bad name in the path names the path parameter (`path.name`), not body.name;
 * - startReplica({ schedulesDir }) whose files are all refused throws ScheduleFilesError with the files' errors
 *   and starts nothing (no membership); some refused beside valid ones start, as `cronflock start` does;
 * - startReplica({ admin }) with a host that is not a host, or does not resolve, is a LibraryArgumentError naming
 *   `startReplica options.admin`, before anything starts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { connectFlock, LibraryArgumentError, ScheduleDefinitionError, ScheduleFilesError, startReplica, VersionConflictError, type Flock } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { OPERATOR_TOKEN, VIEWER_TOKEN } from '../support/dashboard-flock.js';

let server: RedisServerProcess;
let flock: Flock;
beforeAll(async () => {
  server = await RedisServerProcess.start();
  flock = await connectFlock({ redis: server.url, namespace: 'cond', by: 'test' });
});
const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-cond-'));
afterAll(async () => {
  await flock?.close();
  await server?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});
const quiet = pino({ level: 'silent' });

const def = (name: string, cron = '0 3 * * *') => ({ name, cron, job: { kind: 'http' as const, url: 'http://127.0.0.1:1/x' } });

describe('conditional upserts', () => {
  it("ifVersion: 'exists' changes only an existing schedule; ifVersion: 0 creates only; each refusal names its condition", async () => {
    const absent = await flock.schedules.upsert(def('c1'), { ifVersion: 'exists' });
    expect(absent.ok).toBe(false);
    const e1 = !absent.ok ? absent.error : undefined;
    expect(e1).toBeInstanceOf(VersionConflictError);
    expect(e1 instanceof VersionConflictError && e1.condition).toBe('exists');
    expect(e1 instanceof VersionConflictError && e1.actual).toBe(0);
    expect(e1?.message).toMatch(/"c1" does not exist, and it was to be changed only if it exists \(ifVersion: 'exists'\)/);
    expect(await flock.schedules.get('c1')).toBeUndefined();

    const created = await flock.schedules.upsert(def('c1'), { ifVersion: 0 });
    expect(created.ok).toBe(true);
    const v1 = created.ok ? created.version : -1;

    const again = await flock.schedules.upsert(def('c1', '0 4 * * *'), { ifVersion: 0 });
    const e2 = !again.ok ? again.error : undefined;
    expect(e2 instanceof VersionConflictError && [e2.condition, e2.actual]).toEqual(['absent', v1]);
    expect(e2?.message).toContain(`"c1" already exists (version ${v1}) and it was to be created only (ifVersion: 0); pass ifVersion: ${v1} to change it`);
    expect((await flock.schedules.get('c1'))?.definition.cron).toBe('0 3 * * *');

    const changed = await flock.schedules.upsert(def('c1', '0 5 * * *'), { ifVersion: 'exists' });
    expect(changed.ok && changed.changed).toBe(true);
    expect((await flock.schedules.get('c1'))?.definition.cron).toBe('0 5 * * *');

    const stale = await flock.schedules.upsert(def('c1', '0 6 * * *'), { ifVersion: v1 });
    const e3 = !stale.ok ? stale.error : undefined;
    expect(e3 instanceof VersionConflictError && e3.condition).toBe('version');
  });

  it('refuses an ifVersion that is neither a version nor "exists", naming the option', async () => {
    for (const bad of ['exist', -2, 1.5, '3']) {
      await expect(flock.schedules.upsert(def('c2'), { ifVersion: bad as never })).rejects.toThrow(LibraryArgumentError);
      await expect(flock.schedules.upsert(def('c2'), { ifVersion: bad as never })).rejects.toThrow(/upsert options\.ifVersion: .*or 'exists'/);
    }
    expect(await flock.schedules.get('c2')).toBeUndefined();
  });
});

describe('argument checks', () => {
  it('a schedule name that is not a string is a LibraryArgumentError naming the argument, not a ControlError', async () => {
    await expect(flock.schedules.suspend(42 as never)).rejects.toThrow(LibraryArgumentError);
    await expect(flock.schedules.suspend(42 as never)).rejects.toThrow(/^suspend name: must be a schedule name .*got 42$/);
    await expect(flock.schedules.resume(undefined as never)).rejects.toThrow(/^resume name: /);
    await expect(flock.schedules.trigger('' as never)).rejects.toThrow(/^trigger name: .*got an empty string$/);
    await expect(flock.schedules.remove(7 as never)).rejects.toThrow(/^remove name: /);
    await expect(flock.schedules.next({} as never)).rejects.toThrow(/^next name: /);
  });

  it('refuses a time zone spelled with other letter case, with the spelling meant (est: EST or America/New_York)', async () => {
    const r = await flock.schedules.upsert({ ...def('tz1'), timeZone: 'est' });
    expect(r.ok).toBe(false);
    const e = !r.ok ? r.error : undefined;
    expect(e).toBeInstanceOf(ScheduleDefinitionError);
    const p = e instanceof ScheduleDefinitionError ? e.problems[0] : undefined;
    expect(p?.field).toBe('timeZone');
    expect(p?.reason).toMatch(/time zone "est" is not spelled as the tz database spells it .*did you mean "EST" \(UTC-5 all year, no daylight saving\) or "America\/New_York" \(US Eastern time, with daylight saving\)\?/);
    const utc = await flock.schedules.upsert({ ...def('tz1'), timeZone: 'utc' });
    expect(!utc.ok && utc.error instanceof ScheduleDefinitionError && utc.error.problems[0]?.reason).toMatch(/did you mean "UTC"\?/);
    expect(await flock.schedules.get('tz1')).toBeUndefined();
    for (const z of ['EST', 'America/New_York', 'US/Eastern', 'UTC', 'Etc/GMT+5']) expect((await flock.schedules.upsert({ ...def('tz1'), timeZone: z })).ok, z).toBe(true);
  });
});

describe('PUT /api/v1/schedules/{name} with a bad name in the path', () => {
  let api: Dashboard;
  beforeAll(async () => {
    const tokens = path.join(dir, 'tokens.yaml');
    writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n  - {name: bob, role: viewer, token: ${VIEWER_TOKEN}}\n`);
    api = await startDashboard({ redisUrl: server.url, namespace: 'cond', listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
  });
  afterAll(async () => api?.close());

  it('names the path parameter, not body.name', async () => {
    const res = await fetch(new URL('/api/v1/schedules/API_X', api.url), {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR_TOKEN}` },
      body: JSON.stringify({ cron: '0 3 * * *', job: { kind: 'http', url: 'http://127.0.0.1:1/x' } }),
    });
    const body = (await res.json()) as { error: { field: string; problems: { field: string }[] } };
    expect(res.status).toBe(422);
    expect(body.error.field).toBe('path.name');
    expect(body.error.problems.map((p) => p.field)).toEqual(['path.name']);
    expect(JSON.stringify(body)).not.toContain('body.name');
  });
});

describe('startReplica', () => {
  const members = async (ns: string): Promise<number> => {
    const { Redis } = await import('ioredis');
    const r = new Redis(server.url);
    try {
      return await r.zcard(new Keyspace(ns).replicas);
    } finally {
      r.disconnect();
    }
  };

  it('refuses schedule files that are all refused, with their errors, and starts nothing; some refused beside valid ones start', async () => {
    const bad = path.join(dir, 'bad');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(bad);
    writeFileSync(path.join(bad, 'a.yaml'), 'schedules:\n  - {name: a1, cron: "61 * * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n');
    const err = await startReplica({ redis: server.url, namespace: 'sr-bad', schedulesDir: bad, logger: quiet }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScheduleFilesError);
    const e = err as ScheduleFilesError;
    expect(e.code).toBe('SCHEDULE_FILES_INVALID');
    expect(e.errors.map((x) => [path.basename(x.file), x.line, x.field])).toEqual([['a.yaml', 2, 'schedules[0].cron']]);
    expect(e.message).toMatch(/^startReplica options\.schedulesDir: no valid schedules in ".*bad"; nothing to run:\n {2}.*a\.yaml:2:\d+/);
    expect(await members('sr-bad')).toBe(0);

    writeFileSync(path.join(bad, 'b.yaml'), 'schedules:\n  - {name: b1, cron: "0 3 * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n');
    const r = await startReplica({ redis: server.url, namespace: 'sr-bad', schedulesDir: bad, logger: quiet });
    try {
      expect(r.schedules()).toEqual(['b1']);
    } finally {
      await r.stop(0);
    }
  }, 60_000);

  it('refuses an admin host that is not a host or does not resolve, naming the option, before anything starts', async () => {
    for (const admin of ['x y:0', { host: 'x y', port: 0 }, 'no-such-host.invalid:0']) {
      const err = await startReplica({ redis: server.url, namespace: 'sr-admin', admin, logger: quiet }).catch((e: unknown) => e);
      expect(err, JSON.stringify(admin)).toBeInstanceOf(LibraryArgumentError);
      expect((err as Error).message).toMatch(/^startReplica options\.admin(\.host)?: /);
    }
    expect(await members('sr-admin')).toBe(0);
  }, 60_000);
});
