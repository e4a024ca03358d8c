/**
 * The sweep and batch jobs (`--batch-size`, engine/enqueue.ts): an open occurrence whose record names the batch
 * job it was enqueued in (field `bj`) has a job while that batch job exists, and is enqueued again (on its own)
 * once it is gone. Real redis-server; the queue job is a stand-in hash at the lane's job key prefix.
 */
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from './keys.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { Store, type PlannedOccurrence, type PlanPolicy } from './store.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { BATCH_JOB_FIELD } from '../engine/enqueue.js';

const pr = usePrivateRedis({ flushBetweenTests: false }); // the shared set-up (test/support)
let redis: Redis;
let store: Store;
const keys = new Keyspace('t');

beforeAll(() => {
  redis = pr.redis;
  store = new Store(redis, keys);
});

describe('sweep with batch jobs', () => {
  it('counts the batch job named in the record as the occurrence’s job, and enqueues it again once that is gone', async () => {
    const [s, us] = await redis.time();
    const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    const policy: PlanPolicy = { suspend: false, startingDeadlineMs: null, catchUp: 'latest', maxCatchUpRuns: 10 };
    const a = occurrenceKey('s', now - 10_000);
    const b = occurrenceKey('s', now - 9_000);
    const items: PlannedOccurrence[] = [a, b].map((key, i) => ({ schedule: 's', key, dueMs: now - 10_000 + i * 1000, fireMs: now - 10_000 + i * 1000, keepFireMs: null, policy }));
    await store.plan(items, { horizonMs: 60_000, retentionMs: 120_000, catchUpGraceMs: 60_000, replica: 'r' });
    for (const k of [a, b]) await redis.hset(keys.occurrence(k), BATCH_JOB_FIELD, 'b-batch1');
    await redis.hset('bull:b-batch1', 'data', '{}'); // the batch job exists
    const opts = { sweepAfterMs: 5000, limit: 10, jobKeyPrefixes: ['bull:', 'lane:'] as const, horizonMs: 60_000, retentionMs: 120_000 };
    expect(await store.sweep(opts)).toEqual([]);
    await redis.del('bull:b-batch1'); // completed or lost without delivering them
    await redis.zadd(keys.pending, 0, a, 0, b); // as if last checked long ago
    expect((await store.sweep(opts)).map((r) => r.key).sort()).toEqual([a, b].sort());
  });

  it('the plan script names the batch job the caller chose in each record it creates to run on time, not in a catch-up run', async () => {
    const [s, us] = await redis.time();
    const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    const policy: PlanPolicy = { suspend: false, startingDeadlineMs: null, catchUp: 'latest', maxCatchUpRuns: 10 };
    const item = (key: string, dueMs: number): PlannedOccurrence => ({ schedule: 'p', key, dueMs, fireMs: dueMs, keepFireMs: null, policy });
    const onTime = occurrenceKey('p', now - 500);
    const late = occurrenceKey('p', now - 30_000);
    const batchJobs = new Map([[onTime, 'b-one'], [late, 'b-two']]);
    const base = { horizonMs: 60_000, retentionMs: 120_000, replica: 'r', batchJobs };
    expect((await store.plan([item(onTime, now - 500)], { ...base, catchUpGraceMs: 60_000 })).toEnqueue).toEqual([{ key: onTime, reason: '' }]);
    const r = await store.plan([item(late, now - 30_000)], { ...base, catchUpGraceMs: 1000 });
    expect(r.toEnqueue[0]!.reason).toMatch(/^catch-up: run late/);
    expect(await redis.hget(keys.occurrence(onTime), BATCH_JOB_FIELD)).toBe('b-one');
    expect(await redis.hget(keys.occurrence(late), BATCH_JOB_FIELD)).toBeNull(); // the backlog lane: a job of its own
  });
});
