/**
 * Concurrency groups and rate limits in the claim script (lua/includes/gates.lua), on a real redis-server: the slot
 * is granted atomically with the claim, waiters are admitted in fire-time order, a dead claimant's slot frees
 * when its lease lapses, a waiter past its starting deadline is recorded missed with the gate it waited for,
 * and a rate limit's sliding window is never exceeded and delays rather than drops.
 */
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from './keys.js';
import { Store, type ClaimRequest, type ClaimResult } from './store.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';

const priv = usePrivateRedis();
const { redisNow } = priv;
let redis: Redis;
let store: Store;
const keys = new Keyspace('g');

beforeAll(() => {
  redis = priv.redis;
  store = new Store(redis, keys);
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const group = { name: 'cluster-prod', maxConcurrent: 2, rateLimit: null };

function req(schedule: string, dueMs: number, over: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    replica: 'a', schedule, key: occurrenceKey(schedule, dueMs), dueMs, fireMs: dueMs, origin: 'schedule', lockMs: 1000,
    horizonMs: 600_000, retentionMs: 120_000, startingDeadlineMs: null, earlyToleranceMs: 0, maxStalls: 5,
    concurrencyPolicy: 'Allow', maxConcurrent: null, gates: { group }, ...over,
  };
}
function claimed(r: ClaimResult): number {
  if (r.status !== 'claimed') throw new Error(`expected claimed, got ${JSON.stringify(r)}`);
  return r.token;
}

describe('concurrency group', () => {
  it('grants at most maxConcurrent slots across schedules and admits waiters in fire-time order', async () => {
    const t = (await redisNow()) - 10_000;
    const a = req('a', t), b = req('b', t + 1), c = req('c', t + 2), d = req('d', t + 3);
    claimed(await store.claim(a));
    claimed(await store.claim(b));
    // c and d wait; d asks first but c fired earlier: when one slot frees, c gets it and d still waits.
    const dHeld = await store.claim(d);
    expect(dHeld).toMatchObject({ status: 'held', holder: 'group cluster-prod' });
    expect(await store.claim(c)).toMatchObject({ status: 'held' });
    expect(await redis.zrange(keys.gate('group', 'cluster-prod').waiting, 0, -1)).toEqual([c.key, d.key]);
    await store.release(a.key, 1, 'test: slot freed', 1000);
    expect(await store.claim(d)).toMatchObject({ status: 'held' });
    claimed(await store.claim(c));
    expect(await store.claim(d)).toMatchObject({ status: 'held' });
    const rec = await redis.hgetall(keys.occurrence(c.key));
    expect(rec.waited).toMatch(/^group cluster-prod \d+\.\d s$/);
  });

  it('frees the slot of a claimant that died when its lease lapses, not before', async () => {
    const t = (await redisNow()) - 10_000;
    const a = req('a', t), b = req('b', t + 1), c = req('c', t + 2);
    claimed(await store.claim(a));
    claimed(await store.claim(b));
    expect(await store.claim(c)).toMatchObject({ status: 'held' });
    // Nobody renews a and b (their claimants "died"): the slots free once the 1000 ms leases lapse.
    await sleep(400);
    expect(await store.claim(c)).toMatchObject({ status: 'held' });
    await sleep(800);
    claimed(await store.claim(c));
    expect(await redis.smembers(keys.gate('group', 'cluster-prod').holders)).toEqual([c.key]);
  });

  it('records a waiter past its starting deadline missed, naming the group it waited for', async () => {
    const t = (await redisNow()) - 100;
    claimed(await store.claim(req('a', t, { lockMs: 10_000 })));
    claimed(await store.claim(req('b', t + 1, { lockMs: 10_000 })));
    const c = req('c', t + 2, { startingDeadlineMs: 600 });
    expect(await store.claim(c)).toMatchObject({ status: 'held' });
    await sleep(800);
    const r = await store.claim(c);
    expect(r.status).toBe('missed');
    expect(r.status === 'missed' && r.reason).toMatch(/^starting deadline exceeded: waited for group cluster-prod \d+\.\d s$/);
    expect((await redis.hgetall(keys.occurrence(c.key))).state).toBe('missed');
  });

  it('a claim walking past a waiter whose deadline passed records it missed, so it does not block the line', async () => {
    const t = (await redisNow()) - 100;
    const a = req('a', t, { lockMs: 10_000 });
    claimed(await store.claim(a));
    claimed(await store.claim(req('b', t + 1, { lockMs: 10_000 })));
    const c = req('c', t + 2, { startingDeadlineMs: 300 });
    const d = req('d', t + 3);
    expect(await store.claim(c)).toMatchObject({ status: 'held' });
    expect(await store.claim(d)).toMatchObject({ status: 'held' });
    await sleep(500);
    await store.release(a.key, 1, 'test: slot freed', 10_000);
    claimed(await store.claim(d)); // c's delivery did not ask again; d walks past it
    const rec = await redis.hgetall(keys.occurrence(c.key));
    expect(rec.state).toBe('missed');
    expect(rec.reason).toMatch(/^starting deadline exceeded: waited for group cluster-prod/);
  });

  it('passes over a waiter whose delivery stopped asking (its replica died) once a lease length has passed', async () => {
    const t = (await redisNow()) - 10_000;
    claimed(await store.claim(req('a', t, { lockMs: 10_000 })));
    const b = req('b', t + 1, { lockMs: 10_000 });
    claimed(await store.claim(b));
    const c = req('c', t + 2), d = req('d', t + 3); // lockMs 1000
    expect(await store.claim(c)).toMatchObject({ status: 'held' }); // c's replica then dies: c never asks again
    await store.release(b.key, 1, 'test: slot freed', 10_000);
    expect(await store.claim(d)).toMatchObject({ status: 'held' }); // c asked within the lease length: its turn
    await sleep(1200);
    claimed(await store.claim(d));
    expect(await redis.zrange(keys.gate('group', 'cluster-prod').waiting, 0, -1)).toEqual([c.key]); // c keeps its place
  });
});

describe('rate limit', () => {
  it('never starts more than max in any window of length per, and starts every occurrence', async () => {
    const perMs = 500;
    const max = 3;
    const t = (await redisNow()) - 10_000;
    const reqs = Array.from({ length: 10 }, (_, i) => req('r', t + i, { gates: { rateLimit: { max, perMs } } }));
    const starts: number[] = [];
    const pending = new Set(reqs);
    const deadline = Date.now() + 20_000;
    while (pending.size > 0 && Date.now() < deadline) {
      for (const r of [...pending]) {
        const out = await store.claim(r);
        if (out.status === 'claimed') {
          starts.push(out.nowMs);
          pending.delete(r);
        } else expect(out).toMatchObject({ status: 'held', holder: 'rate limit of r' });
      }
      await sleep(20);
    }
    expect(starts).toHaveLength(10);
    starts.sort((x, y) => x - y);
    for (let i = max; i < starts.length; i++) expect(starts[i]! - starts[i - max]!).toBeGreaterThanOrEqual(perMs);
    // pushed back just enough: the whole run takes about three windows, not much more
    expect(starts[9]! - starts[0]!).toBeLessThan(4 * perMs + 2000);
  });
});
