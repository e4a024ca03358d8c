/**
 * The claim protocol, script by script, on a real redis-server: one live claim, fencing, the Redis clock,
 * the horizon, the starting deadline, the stall limit, the sweeper, and record retention.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Keyspace } from './keys.js';
import { RedisServerProcess } from './server-process.js';
import { Store, type ClaimRequest } from './store.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { toRunRecord } from '../records/runs.js';

let server: RedisServerProcess;
let redis: Redis;
let store: Store;
const keys = new Keyspace('t');

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
async function record(key: string) {
  return toRunRecord(await redis.hgetall(keys.occurrence(key)));
}
function req(key: string, dueMs: number, fireMs: number, over: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    replica: 'a', schedule: 's', key, dueMs, fireMs, manual: false, lockMs: 1000, horizonMs: 60_000,
    retentionMs: 120_000, startingDeadlineMs: null, earlyToleranceMs: 0, maxStalls: 2, ...over,
  };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('plan', () => {
  it('records an occurrence once, however many replicas offer it', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now + 1000);
    const item = { schedule: 's', key, dueMs: now + 1000, fireMs: now + 1200, disposition: 'run' as const, reason: '' };
    const o = { horizonMs: 60_000, retentionMs: 120_000, replica: 'a' };
    expect((await store.plan([item], o)).toEnqueue).toEqual([key]);
    expect((await store.plan([item], { ...o, replica: 'b' })).toEnqueue).toEqual([]);
    expect(await record(key)).toMatchObject({ state: 'scheduled', fencingToken: 0, fireMs: now + 1200 });
    expect(await redis.zscore(keys.pending, key)).toBe(String(now + 1200));
    expect(await redis.hget(keys.watermarks, 's')).toBe(String(now + 1000));
  });

  it('never creates an occurrence older than the horizon (a lagging replica cannot revive it)', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now - 61_000);
    const r = await store.plan([{ schedule: 's', key, dueMs: now - 61_000, fireMs: now - 61_000, disposition: 'run', reason: '' }], {
      horizonMs: 60_000, retentionMs: 120_000, replica: 'a',
    });
    expect(r.toEnqueue).toEqual([]);
    expect(await redis.exists(keys.occurrence(key))).toBe(0);
  });

  it('records missed and skipped occurrences as final states with their reason', async () => {
    const now = await redisNow();
    const k1 = occurrenceKey('s', now - 5000);
    const k2 = occurrenceKey('s', now - 4000);
    const r = await store.plan(
      [
        { schedule: 's', key: k1, dueMs: now - 5000, fireMs: now - 5000, disposition: 'missed', reason: 'catch-up: none' },
        { schedule: 's', key: k2, dueMs: now - 4000, fireMs: now - 4000, disposition: 'skipped', reason: 'suspended' },
      ],
      { horizonMs: 60_000, retentionMs: 120_000, replica: 'a' },
    );
    expect(r).toEqual({ toEnqueue: [], finals: 2 });
    expect(await record(k1)).toMatchObject({ state: 'missed', reason: 'catch-up: none' });
    expect(await record(k2)).toMatchObject({ state: 'skipped', reason: 'suspended' });
  });
});

describe('claim', () => {
  it('allows one live claim; a second claimant is told to wait; tokens grow per claim', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    const a = await store.claim(req(key, now, now));
    expect(a).toMatchObject({ status: 'claimed', token: 1, attempt: 1 });
    const b = await store.claim(req(key, now, now, { replica: 'b' }));
    expect(b.status).toBe('held');
    if (b.status === 'held') {
      expect(b.holder).toBe('a');
      expect(b.waitMs).toBeGreaterThan(0);
      expect(b.waitMs).toBeLessThanOrEqual(1000);
    }
    await sleep(1100); // the lease lapses on the Redis clock: the holder stalled
    const c = await store.claim(req(key, now, now, { replica: 'b' }));
    expect(c).toMatchObject({ status: 'claimed', token: 2, attempt: 2 });
    expect(await record(key)).toMatchObject({ state: 'running', replica: 'b', stalls: 1, fencingToken: 2 });
  });

  it('refuses a claim before the fire time on the Redis clock', async () => {
    const now = await redisNow();
    const r = await store.claim(req(occurrenceKey('s', now), now, now + 5000));
    expect(r.status).toBe('early');
    if (r.status === 'early') expect(r.waitMs).toBeGreaterThan(4000);
  });

  it('records missed, and runs nothing, when the starting deadline has passed', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now - 3000);
    expect(await store.claim(req(key, now - 3000, now - 3000, { startingDeadlineMs: 1000 }))).toEqual({ status: 'missed' });
    expect(await record(key)).toMatchObject({ state: 'missed', reason: 'starting deadline exceeded', fencingToken: 0 });
    expect(await store.claim(req(key, now - 3000, now - 3000))).toEqual({ status: 'final', state: 'missed' });
  });

  it('refuses an unknown occurrence older than the horizon (a revived duplicate)', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now - 70_000);
    expect(await store.claim(req(key, now - 70_000, now - 70_000))).toEqual({ status: 'stale' });
    expect(await redis.exists(keys.occurrence(key))).toBe(0);
  });

  it('fails the occurrence with a reason after more stalls than the limit', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    for (let i = 0; i < 3; i++) {
      expect((await store.claim(req(key, now, now, { lockMs: 100, maxStalls: 2 }))).status).toBe('claimed');
      await sleep(150);
    }
    expect(await store.claim(req(key, now, now, { lockMs: 100, maxStalls: 2 }))).toEqual({ status: 'stalled-out' });
    expect(await record(key)).toMatchObject({ state: 'failed', stalls: 3 });
    expect((await record(key))!.reason).toMatch(/stalled 3 times/);
  });
});

describe('renew, finish, release (fencing)', () => {
  it('records a result only for the current, live claim and counts refused stale completions', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    const a = await store.claim(req(key, now, now, { lockMs: 300 }));
    expect(a.status).toBe('claimed');
    expect(await store.renew(key, 1, 300, 120_000)).toBeGreaterThan(now);
    await sleep(350);
    expect(await store.renew(key, 1, 300, 120_000)).toBe(0); // lapsed: never revived
    expect(await store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000 })).toBe(false); // lapsed, nobody else yet
    const b = await store.claim(req(key, now, now, { replica: 'b', lockMs: 5000 }));
    expect(b).toMatchObject({ status: 'claimed', token: 2 });
    expect(await store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000 })).toBe(false); // stale token
    expect(await store.finish(key, 2, { state: 'succeeded', result: '{"ok":1}', retentionMs: 120_000 })).toBe(true);
    expect(await store.finish(key, 2, { state: 'failed', retentionMs: 120_000 })).toBe(false); // final already
    expect(await record(key)).toMatchObject({ state: 'succeeded', fencingToken: 2, replica: 'b', refused: 3, result: '{"ok":1}' });
  });

  it('releases a claim so the next claim is immediate and not counted as a stall', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    await store.claim(req(key, now, now, { lockMs: 60_000 }));
    expect(await store.release(key, 2, 'not mine')).toBe(false);
    expect(await store.release(key, 1, 'shutdown')).toBe(true);
    expect(await store.claim(req(key, now, now, { replica: 'b' }))).toMatchObject({ status: 'claimed', token: 2 });
    expect(await record(key)).toMatchObject({ stalls: 0, handovers: 1 });
  });

  it('keeps a final record for the retention, then it is gone', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    await store.claim(req(key, now, now, { retentionMs: 400 }));
    expect(await store.finish(key, 1, { state: 'succeeded', retentionMs: 400 })).toBe(true);
    const ttl = await redis.pttl(keys.occurrence(key));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(400);
    await sleep(500);
    expect(await redis.exists(keys.occurrence(key))).toBe(0);
  });
});

describe('sweep', () => {
  const opts = { sweepAfterMs: 5000, limit: 10, jobKeyPrefix: 'bull:', horizonMs: 60_000, retentionMs: 120_000 };

  it('returns planned occurrences whose queue job is missing, and closes those past the horizon as missed', async () => {
    const now = await redisNow();
    const o = { horizonMs: 60_000, retentionMs: 120_000, replica: 'a' };
    const lost = occurrenceKey('s', now - 10_000);
    const enqueued = occurrenceKey('s', now - 9_000);
    await store.plan(
      [
        { schedule: 's', key: lost, dueMs: now - 10_000, fireMs: now - 10_000, disposition: 'run', reason: '' },
        { schedule: 's', key: enqueued, dueMs: now - 9_000, fireMs: now - 9_000, disposition: 'run', reason: '' },
      ],
      o,
    );
    await redis.hset(`bull:s@${now - 9_000}`, 'data', '{}'); // the job of \`enqueued\` exists
    expect(await store.sweep(opts)).toEqual([{ schedule: 's', dueMs: now - 10_000, fireMs: now - 10_000, manual: false }]);
    // Checked entries go to the back: an immediate second sweep finds nothing due for a check.
    expect(await store.sweep(opts)).toEqual([]);
    await redis.zadd(keys.pending, 0, lost);
    expect(await store.sweep({ ...opts, horizonMs: 5_000 })).toEqual([]);
    expect(await record(lost)).toMatchObject({ state: 'missed', reason: 'not claimed within the catch-up horizon' });
    expect(await redis.zscore(keys.pending, lost)).toBeNull();
  });

  it('returns a running occurrence whose lease lapsed and whose job is gone, never a live one', async () => {
    const now = await redisNow();
    const dead = occurrenceKey('s', now - 20_000);
    const live = occurrenceKey('s', now - 19_000);
    await store.claim(req(dead, now - 20_000, now - 20_000, { lockMs: 100 }));
    await store.claim(req(live, now - 19_000, now - 19_000, { lockMs: 60_000 }));
    await sleep(150);
    await redis.zadd(keys.pending, 0, dead, 0, live); // as if last checked long ago
    expect(await store.sweep(opts)).toEqual([{ schedule: 's', dueMs: now - 20_000, fireMs: now - 20_000, manual: false }]);
    // Once final, it leaves the set.
    await store.claim(req(dead, now - 20_000, now - 20_000, { lockMs: 5000 }));
    expect(await store.finish(dead, 2, { state: 'succeeded', retentionMs: 120_000 })).toBe(true);
    expect(await redis.zscore(keys.pending, dead)).toBeNull();
    expect(await redis.zscore(keys.pending, live)).not.toBeNull();
  });
});
