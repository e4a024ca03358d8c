/**
 * Schedules as data, end to end in one process on a real redis-server (issue 19, points 1, 2 and 4): the
 * library's connectFlock and startReplica, handlers registered in code, a change applied from the next due
 * time, a removal that stops the schedule, the control operations (trigger, suspend, resume, next, runs), the
 * follower's fall-back to a full read on a trimmed stream, and names owned by one source.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectFlock, startReplica, ScheduleDefinitionError, NameOwnedError, type Flock, type ReplicaHandle } from '../../runner/library/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { ScheduleStore } from '../../runner/store/store.js';
import { StoredSchedules } from '../../runner/sources/stored.js';
import { sleep, until } from '../support/flock.js';

let server: RedisServerProcess;
const quiet = pino({ level: 'silent' });
const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-store-'));

beforeAll(async () => {
  server = await RedisServerProcess.start();
});
afterAll(async () => {
  await server.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const every = (name: string, v: number, handler = 'record') => ({
  name,
  cron: '* * * * * *', // every second
  job: { kind: 'handler', handler, params: { v } },
});

describe('the library: connectFlock and startReplica', () => {
  const calls: { schedule: string; dueMs: number; v: number; manual: boolean }[] = [];
  let flock: Flock;
  let replica: ReplicaHandle;
  beforeAll(async () => {
    replica = await startReplica({
      redis: server.url,
      namespace: 'lib',
      replica: 'lib-1',
      logger: quiet,
      jobs: { record: ({ params, occurrence }) => void calls.push({ schedule: occurrence.schedule, dueMs: occurrence.dueMs, v: params.v as number, manual: occurrence.manual }) },
    });
    flock = await connectFlock({ redis: server.url, namespace: 'lib', by: 'test' });
  });
  afterAll(async () => {
    await flock.close();
    await replica.stop(0);
  });

  it('runs an upserted schedule with its handler, applies a change from the next due time, and stops a removed one', async () => {
    const r1 = await flock.schedules.upsert(every('lib-a', 1), { ifVersion: 0 });
    expect(r1).toMatchObject({ ok: true, changed: true });
    await until(() => calls.some((c) => c.schedule === 'lib-a' && c.v === 1), 15_000, 'a run of version 1');
    const r2 = await flock.schedules.upsert(every('lib-a', 2), { ifVersion: r1.ok ? r1.version : -1 });
    expect(r2.ok).toBe(true);
    const changedAt = Date.now();
    await until(() => calls.some((c) => c.schedule === 'lib-a' && c.v === 2), 15_000, 'a run of version 2');
    // Every occurrence due after the change reached the replica (within 1.5 s here) follows the new definition.
    const late = calls.filter((c) => c.schedule === 'lib-a' && c.dueMs >= changedAt + 1500);
    await until(() => calls.filter((c) => c.schedule === 'lib-a' && c.dueMs >= changedAt + 1500).length >= 2, 15_000, 'runs after the change');
    expect(calls.filter((c) => c.schedule === 'lib-a' && c.dueMs >= changedAt + 1500).every((c) => c.v === 2)).toBe(true);
    expect(late.every((c) => c.v === 2)).toBe(true);

    expect((await flock.schedules.remove('lib-a')).ok).toBe(true);
    const removedAt = Date.now();
    await sleep(3_000);
    expect(calls.filter((c) => c.schedule === 'lib-a' && c.dueMs >= removedAt + 1500)).toEqual([]);
    expect(replica.schedules()).not.toContain('lib-a');
  });

  it('triggers, suspends and resumes a stored schedule, and shows its next occurrences and its runs', async () => {
    expect((await flock.schedules.upsert({ name: 'lib-b', cron: '0 0 1 1 *', timeZone: 'Europe/Berlin', job: { kind: 'handler', handler: 'record', params: { v: 7 } } })).ok).toBe(true);
    await until(() => replica.schedules().includes('lib-b'), 10_000, 'lib-b applied');
    const next = await flock.schedules.next('lib-b', 2);
    expect(next).toHaveLength(2);
    expect(next[0]!.dueLocal).toContain('01-01T00:00');
    await until(async () => (await flock.schedules.trigger('lib-b').then(() => true, () => false)), 10_000, 'trigger accepted (published)');
    await until(() => calls.some((c) => c.schedule === 'lib-b' && c.manual && c.v === 7), 15_000, 'the triggered run');
    const runs = await flock.schedules.runs('lib-b', { from: 0 });
    expect(runs.some((r) => r.origin === 'manual')).toBe(true);
    expect((await flock.schedules.suspend('lib-b', { reason: 'maintenance' })).done).toBe(true);
    expect((await flock.schedules.resume('lib-b')).done).toBe(true);
    expect((await flock.schedules.list({ prefix: 'lib-' })).items.map((s) => s.name)).toEqual(['lib-b']);
  });

  it('refuses a bad definition whole with the fields named', async () => {
    const r = await flock.schedules.upsert({ name: 'lib-bad', cron: 'nope', job: { kind: 'handler', handler: '' } } as never);
    expect(r.ok).toBe(false);
    const e = !r.ok ? r.error : undefined;
    expect(e).toBeInstanceOf(ScheduleDefinitionError);
    expect((e as ScheduleDefinitionError).problems.map((p) => p.field)).toEqual(expect.arrayContaining(['cron', 'job.handler']));
    expect(await flock.schedules.get('lib-bad')).toBeUndefined();
  });

  it('leaves an occurrence whose handler this replica lacks to another replica, unclaimed (not failed)', async () => {
    expect((await flock.schedules.upsert(every('lib-c', 1, 'elsewhere'))).ok).toBe(true);
    await sleep(3_000);
    const runs = await flock.schedules.runs('lib-c', { from: 0 });
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.every((r) => r.state === 'scheduled')).toBe(true); // given back, not failed nor skipped
    await flock.schedules.remove('lib-c');
  });
});

describe('names across sources', () => {
  it('refuses an upsert of a name a live replica runs from a file (naming it), and a file that defines a stored name', async () => {
    const file = path.join(dir, 'owned.yaml');
    writeFileSync(file, 'schedules:\n  - name: owned\n    cron: "0 0 1 1 *"\n    job: { kind: handler, handler: record }\n');
    const flock = await connectFlock({ redis: server.url, namespace: 'names' });
    expect((await flock.schedules.upsert(every('taken', 1))).ok).toBe(true);
    const dupFile = path.join(dir, 'dup');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dupFile);
    writeFileSync(path.join(dupFile, 'a.yaml'), 'schedules:\n  - name: owned\n    cron: "0 0 1 1 *"\n    job: { kind: handler, handler: record }\n');
    writeFileSync(path.join(dupFile, 'b.yaml'), 'schedules:\n  - name: taken\n    cron: "0 0 1 1 *"\n    job: { kind: handler, handler: record }\n');
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (l: string) => void lines.push(l) });
    const r = await startReplica({ redis: server.url, namespace: 'names', replica: 'names-1', schedulesDir: dupFile, logger, jobs: { record: () => undefined } });
    try {
      // b.yaml defines a stored name: refused on the replica, naming the store; the stored one runs.
      expect(lines.join('\n')).toContain('name \\"taken\\" is also defined in the schedule store');
      expect(r.schedules().sort()).toEqual(['owned', 'taken']);
      const probe = new Redis(server.url);
      await until(async () => Boolean(await probe.hget(new Keyspace('names').definitions, 'owned')), 10_000, 'owned published');
      probe.disconnect();
      const u = await flock.schedules.upsert(every('owned', 1));
      expect(u.ok).toBe(false);
      expect(!u.ok && u.error).toBeInstanceOf(NameOwnedError);
      expect(!u.ok && u.error.message).toContain('a.yaml');
    } finally {
      await r.stop(0);
      await flock.close();
    }
  });
});

// A user's break-it run: 2,000 schedules `*/30` with a 20 s jitter window changed to `*/20` a few seconds after a due
// time; 31 occurrences already due (their fire time still ahead) were recorded skipped, "schedule changed: not a
// due time of the new definition".
describe('a change after a due time', () => {
  it('runs the occurrences already due when the change came, though the new cron does not have their due time', async () => {
    const ns = 'due-before';
    const ran: { schedule: string; dueMs: number; v: number }[] = [];
    const replica = await startReplica({
      redis: server.url,
      namespace: ns,
      replica: 'db-1',
      logger: quiet,
      jobs: { record: ({ params, occurrence }) => void ran.push({ schedule: occurrence.schedule, dueMs: occurrence.dueMs, v: params.v as number }) },
    });
    const flock = await connectFlock({ redis: server.url, namespace: ns, by: 'test' });
    try {
      const def = (i: number, cron: string, v: number) => ({ name: `db-${i}`, cron, jitter: '3s', job: { kind: 'handler', handler: 'record', params: { v } } });
      for (let i = 0; i < 20; i++) expect((await flock.schedules.upsert(def(i, '*/4 * * * * *', 1))).ok).toBe(true);
      // Wait for a due time D of the old cron, then change every schedule just after it to a cron without D.
      await until(() => ran.some((r) => r.v === 1), 20_000, 'a run of the old definition');
      const dueMs = Math.ceil((Date.now() + 1) / 4000) * 4000;
      await sleep(dueMs + 200 - Date.now());
      for (let i = 0; i < 20; i++) expect((await flock.schedules.upsert(def(i, '2-58/4 * * * * *', 2))).ok).toBe(true);
      await sleep(dueMs + 4_500 - Date.now()); // past every fire time of D (jitter 3 s)
      const runsOfD = await Promise.all(Array.from({ length: 20 }, (_, i) => flock.schedules.runs(`db-${i}`, { from: dueMs, to: dueMs })));
      const states = runsOfD.map((rs, i) => `db-${i}: ${rs.map((r) => `${r.state}${r.reason ? ` (${r.reason})` : ''}`).join(', ') || 'no record'}`);
      expect(states.filter((t) => !/: succeeded$/.test(t)), 'every occurrence due at D ran').toEqual([]);
      expect(ran.filter((r) => r.dueMs === dueMs)).toHaveLength(20);
      // After the change: the new cron's due times, the new definition.
      await until(() => ran.some((r) => r.dueMs > dueMs && r.v === 2), 10_000, 'a run of the new definition');
      expect(ran.filter((r) => r.dueMs > dueMs).every((r) => r.v === 2 && (r.dueMs / 1000) % 4 === 2)).toBe(true);
    } finally {
      await flock.close();
      await replica.stop(0);
    }
  });
});

describe('following the change stream', () => {
  it('falls back to a full read when the stream was trimmed past the replica', async () => {
    const redis = new Redis(server.url);
    const follower = new Redis(server.url);
    const keys = new Keyspace('trim');
    const small = new ScheduleStore(redis, keys, { maxLen: 1 });
    const stored = new StoredSchedules(small, new ScheduleStore(follower, keys), quiet);
    await small.upsert(every('t-0', 0));
    expect((await stored.load()).map((s) => s.name)).toEqual(['t-0']);
    for (let i = 1; i < 200; i++) await small.upsert(every(`t-${i}`, i));
    await small.remove('t-0');
    const applied: { up: string[]; rm: string[] }[] = [];
    stored.follow(async (up, rm) => void applied.push({ up: up.map((s) => s.name), rm }));
    await until(() => applied.length > 0, 10_000, 'the full read applied');
    expect(stored.fullReads).toBe(1);
    expect(applied[0]!.up).toHaveLength(199);
    expect(applied[0]!.rm).toEqual(['t-0']);
    // then it follows again: one change, one name re-read
    await small.upsert(every('t-5', 55));
    await until(() => applied.length > 1, 10_000, 'the next change');
    expect(applied[1]).toEqual({ up: ['t-5'], rm: [] });
    follower.disconnect();
    await stored.stop();
    redis.disconnect();
  });

  // A user's break-it run: after Redis restarted without its data, the replicas ran the schedules the store had
  // lost for good (no API could remove them), and the first upsert after it (version 1, under the 9 running) was
  // answered "applied" but ignored, while the others were dropped.
  it('after Redis lost the store: stops what is no longer stored, and applies what is stored now whatever its version', async () => {
    const redis = new Redis(server.url);
    const follower = new Redis(server.url);
    const keys = new Keyspace('lost');
    const store = new ScheduleStore(redis, keys);
    const stored = new StoredSchedules(store, new ScheduleStore(follower, keys), quiet);
    for (let i = 0; i < 3; i++) await store.upsert(every(`l-${i}`, i));
    await store.upsert(every('l-1', 11)); // versions 1..4
    expect((await stored.load()).map((s) => s.name).sort()).toEqual(['l-0', 'l-1', 'l-2']);
    const applied: { up: string[]; rm: string[] }[] = [];
    stored.follow(async (up, rm) => void applied.push({ up: up.map((s) => s.name), rm: [...rm].sort() }));
    // What a restart without data does to this namespace.
    const lostKeys = await redis.keys(`${keys.ns}*`);
    expect(lostKeys.length).toBeGreaterThan(0);
    await redis.del(...lostKeys);
    await until(() => applied.length > 0, 15_000, 'the loss noticed');
    expect(applied[0]).toEqual({ up: [], rm: ['l-0', 'l-1', 'l-2'] });
    expect(stored.schedules()).toEqual([]);
    // The first write after the loss takes version 1: applied, though the replica ran version 4 of it before.
    const u = await store.upsert({ ...every('l-1', 99) });
    expect(u).toMatchObject({ version: 1 });
    await until(() => applied.length > 1, 10_000, 'the upsert after the loss applied');
    expect(applied[1]).toEqual({ up: ['l-1'], rm: [] });
    expect(stored.applied.get('l-1')?.version).toBe(1);
    // Lost again, and a write comes before the replica notices: versions went back (3 ≤ the 6 seen), so what is
    // stored is applied whole, not compared with what runs.
    for (let i = 0; i < 3; i++) await store.upsert(every(`l-${i}`, 100 + i)); // versions 2..4
    await until(() => stored.applied.size === 3 && stored.applied.get('l-2')?.version === 4, 10_000, 'the upserts applied');
    const mark = applied.length;
    await redis.del(...(await redis.keys(`${keys.ns}*`)));
    await store.upsert(every('l-2', 7)); // version 1
    await store.upsert(every('l-2', 8)); // version 2
    await until(() => applied.length > mark, 15_000, 'the second loss noticed');
    expect(applied.slice(mark)).toEqual([{ up: ['l-2'], rm: ['l-0', 'l-1'] }]);
    expect(stored.applied.get('l-2')?.version).toBe(2);
    follower.disconnect();
    await stored.stop();
    redis.disconnect();
  });
});

describe('cronflock start with no path', () => {
  it('runs the stored schedules alone, and follows their changes', async () => {
    const { HookServer } = await import('../support/hooks.js');
    const { ReplicaProcess } = await import('../support/replica.js');
    const hook = await HookServer.start();
    const flock = await connectFlock({ redis: server.url, namespace: 'cli' });
    expect((await flock.schedules.upsert({ name: 'cli-a', cron: '* * * * * *', job: { kind: 'http', url: `${hook.url}/a` } })).ok).toBe(true);
    const r = await ReplicaProcess.start({ name: 'cli-1', schedules: '', redisUrl: server.url, namespace: 'cli' });
    try {
      expect(r.lines.some((l) => l.msg === 'no schedule path: running the stored schedules alone')).toBe(true);
      await until(() => hook.on('/a').length > 0, 15_000, 'a run of the stored schedule');
      expect((await flock.schedules.upsert({ name: 'cli-b', cron: '* * * * * *', job: { kind: 'http', url: `${hook.url}/b` } })).ok).toBe(true);
      await until(() => hook.on('/b').length > 0, 15_000, 'a run of the schedule stored after the start');
    } finally {
      await r.stop();
      await flock.close();
      await hook.close();
    }
  });
});
