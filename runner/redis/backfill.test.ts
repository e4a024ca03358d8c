/**
 * The backfill backlog's scripts on a real redis-server: waiting records that do not expire, admission under a
 * flock-wide cap (one at a time for Forbid, oldest first, schedules in the order asked, none while suspended),
 * the claim sending a suspended schedule's admitted occurrence back to waiting, and cancellation.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Keyspace } from './keys.js';
import { RedisServerProcess } from './server-process.js';
import { Store, type ClaimRequest } from './store.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { toRunRecord } from '../records/runs.js';
import { backfillCounts } from '../records/backfill.js';

let server: RedisServerProcess;
let redis: Redis;
let store: Store;
const keys = new Keyspace('t');
const RETENTION = 120_000;
const HOUR = 3_600_000;

beforeAll(async () => {
  server = await RedisServerProcess.start();
  redis = new Redis(server.url);
  store = new Store(redis, keys);
});
afterAll(async () => {
  redis.disconnect();
  await server.cleanup();
});
beforeEach(async () => {
  await redis.flushall();
});

async function redisNow(): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
const record = async (key: string) => toRunRecord(await redis.hgetall(keys.occurrence(key)));

/** `n` hourly due times of `schedule` ending an hour before now, oldest first. */
function hours(schedule: string, now: number, n: number): { key: string; dueMs: number }[] {
  const base = Math.floor(now / HOUR) * HOUR - n * HOUR;
  return Array.from({ length: n }, (_, i) => ({ key: occurrenceKey(schedule, base + i * HOUR), dueMs: base + i * HOUR }));
}
const enqueue = (schedule: string, items: { key: string; dueMs: number }[], policy: 'Allow' | 'Forbid' = 'Forbid') =>
  store.enqueueBackfill({ schedule, items, policy, by: 'test', retentionMs: RETENTION });
const admit = (cap: number) => store.admitBackfill({ cap, retentionMs: RETENTION });
function claimReq(schedule: string, it: { key: string; dueMs: number }, fireMs: number, over: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    replica: 'a', schedule, key: it.key, dueMs: it.dueMs, fireMs, origin: 'backfill', lockMs: 60_000, horizonMs: 60_000,
    retentionMs: RETENTION, startingDeadlineMs: null, earlyToleranceMs: 0, maxStalls: 2, concurrencyPolicy: 'Forbid',
    maxConcurrent: null, ...over,
  };
}

describe('backfill backlog', () => {
  it('records waiting occurrences once, without expiry, outside pending and the queue', async () => {
    const now = await redisNow();
    const items = hours('s', now, 3);
    expect(await enqueue('s', items)).toEqual(items.map((it) => it.key));
    expect(await enqueue('s', items)).toEqual([]); // de-duplicated against the records
    for (const it of items) {
      expect(await record(it.key)).toMatchObject({ state: 'scheduled', origin: 'backfill', manual: true, dueMs: it.dueMs });
      expect(await redis.pttl(keys.occurrence(it.key))).toBe(-1);
    }
    expect(await redis.zcard(keys.pending)).toBe(0);
    expect(await redis.zrange(keys.backfillQueue('s'), 0, -1)).toEqual(items.map((it) => it.key));
    expect(Object.fromEntries(await backfillCounts(redis, keys))).toEqual({ s: { waiting: 3, admitted: 0 } });
  });

  it('admits Forbid schedules one at a time, oldest first, schedules in the order asked, within the flock-wide cap', async () => {
    const now = await redisNow();
    const a = hours('a', now, 3);
    const b = hours('b', now, 2);
    const c = hours('c', now, 4);
    await enqueue('a', a);
    await enqueue('b', b);
    await enqueue('c', c, 'Allow');
    // cap 3: a's oldest, b's oldest (each Forbid: one at a time), then c (Allow) gets the last place.
    const first = await admit(3);
    expect(first.map((x) => x.key)).toEqual([a[0]!.key, b[0]!.key, c[0]!.key]);
    const at = first[0]!.fireMs;
    expect(at).toBeGreaterThanOrEqual(now);
    const rec = await record(a[0]!.key);
    expect(rec).toMatchObject({ state: 'scheduled', fireMs: at });
    expect(await redis.pttl(keys.occurrence(a[0]!.key))).toBeGreaterThan(RETENTION - 5_000);
    expect(await redis.zscore(keys.pending, a[0]!.key)).toBe(String(at));
    expect(await admit(3)).toEqual([]); // full
    expect(Object.fromEntries(await backfillCounts(redis, keys))).toEqual({
      a: { waiting: 2, admitted: 1 },
      b: { waiting: 1, admitted: 1 },
      c: { waiting: 3, admitted: 1 },
    });
    // a's admitted one runs and finishes: its place goes to a's next one (a was asked first).
    const cl = await store.claim(claimReq('a', a[0]!, at));
    expect(cl.status).toBe('claimed');
    expect(await admit(3)).toEqual([]); // running still counts
    await store.finish(a[0]!.key, 1, { state: 'succeeded', retentionMs: RETENTION });
    expect((await admit(3)).map((x) => x.key)).toEqual([a[1]!.key]);
    // A larger cap lets an Allow schedule run several at once, still oldest first; Forbid ones stay one each.
    expect((await admit(6)).map((x) => x.key)).toEqual([c[1]!.key, c[2]!.key, c[3]!.key]);
  });

  it('admits nothing of a suspended schedule; a claim sends an admitted one back to waiting, unrun', async () => {
    const now = await redisNow();
    const items = hours('s', now, 3);
    await enqueue('s', items);
    const [adm] = await admit(2);
    await redis.hset(keys.suspended, 's', JSON.stringify({ sinceMs: now }));
    expect(await admit(2)).toEqual([]);
    expect(await store.claim(claimReq('s', items[0]!, adm!.fireMs))).toEqual({ status: 'paused' });
    expect(await record(items[0]!.key)).toMatchObject({ state: 'scheduled', attempt: 0, fencingToken: 0 });
    expect(await redis.pttl(keys.occurrence(items[0]!.key))).toBe(-1);
    expect(await redis.zscore(keys.pending, items[0]!.key)).toBeNull();
    expect(await redis.zrange(keys.backfillQueue('s'), 0, -1)).toEqual(items.map((it) => it.key));
    expect(await admit(2)).toEqual([]);
    expect(Object.fromEntries(await backfillCounts(redis, keys))).toEqual({ s: { waiting: 3, admitted: 0 } });
    await redis.hdel(keys.suspended, 's');
    expect((await admit(2)).map((x) => x.key)).toEqual([items[0]!.key]);
  });

  it('cancel records what has not started skipped; a run in flight goes on; the backlog empties', async () => {
    const now = await redisNow();
    const items = hours('s', now, 5);
    await enqueue('s', items, 'Allow');
    const [running, admittedOnly] = await admit(2);
    expect((await store.claim(claimReq('s', items[0]!, running!.fireMs, { concurrencyPolicy: 'Allow' }))).status).toBe('claimed');
    expect(await store.cancelBackfill('s', 'backfill cancelled', RETENTION)).toEqual({ cancelled: 4, started: 1 });
    expect(await record(admittedOnly!.key)).toMatchObject({ state: 'skipped', reason: 'backfill cancelled' });
    for (const it of items.slice(2)) {
      expect(await record(it.key)).toMatchObject({ state: 'skipped', reason: 'backfill cancelled' });
      expect(await redis.pttl(keys.occurrence(it.key))).toBeGreaterThan(0);
    }
    // The admitted one's queue job finds a final record and runs nothing.
    expect(await store.claim(claimReq('s', items[1]!, admittedOnly!.fireMs, { concurrencyPolicy: 'Allow' }))).toEqual({
      status: 'final',
      state: 'skipped',
    });
    expect(await record(items[0]!.key)).toMatchObject({ state: 'running' });
    expect(await store.finish(items[0]!.key, 1, { state: 'succeeded', retentionMs: RETENTION })).toEqual({ status: 'recorded' });
    expect(await admit(2)).toEqual([]);
    expect(await redis.zcard(keys.backfillSchedules)).toBe(0);
    expect(await backfillCounts(redis, keys)).toEqual(new Map());
  });
});
