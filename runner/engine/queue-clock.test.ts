/**
 * BullMQ on the Redis clock, on a real redis-server: job scores written by a host whose clock is an hour off
 * are Redis times, and what is due on `TIME` is promoted even when no worker's host clock has reached it.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_HOST_SKEW_MS, RedisClock } from '../redis/clock.js';
import { Keyspace } from '../redis/keys.js';
import { RedisServerProcess } from '../redis/server-process.js';
import { Store } from '../redis/store.js';
import { enqueueOccurrences } from './enqueue.js';
import { delayJobUntil, earlyHoldMs, promoteDueJobs, shouldGiveBackEarly } from './queue-clock.js';

let server: RedisServerProcess;
let redis: Redis;
let queue: Queue;
let clock: RedisClock;
let store: Store;
const keys = new Keyspace('qc');
const realNow = Date.now;

beforeAll(async () => {
  server = await RedisServerProcess.start();
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
  queue = new Queue(keys.queueName, { connection: redis, prefix: keys.ns });
  store = new Store(redis, keys);
});
afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await server.cleanup();
});
beforeEach(async () => {
  await redis.flushall();
  clock = new RedisClock(redis, undefined, keys.ns);
  await clock.sync();
});
afterEach(() => {
  Date.now = realNow;
});

/** This process's host clock reads `ms` ahead of the real time from now on (as after a step). */
function hostClockAhead(ms: number): void {
  Date.now = () => realNow() + ms;
}
/** The Redis time (ms) a delayed job is scored at (BullMQ: due ms × 0x1000 + a sequence). */
async function delayedAt(id: string): Promise<number | null> {
  const score = await redis.zscore(queue.keys.delayed!, id);
  return score === null ? null : Math.floor(Number(score) / 0x1000);
}

describe('BullMQ on the Redis clock', () => {
  for (const skewMs of [3_600_000, -3_600_000]) {
    it(`scores jobs at Redis times from a host ${skewMs > 0 ? 'ahead' : 'behind'} by an hour (enqueue and delayJobUntil)`, async () => {
      hostClockAhead(skewMs);
      const fireMs = clock.now() + 2500;
      await enqueueOccurrences({ live: queue, backlog: queue }, keys, clock, 500, [{ schedule: 's', key: 's@x', dueMs: fireMs, fireMs, origin: 'schedule' }]);
      expect(await delayedAt(keys.jobId('s@x'))).toBe(fireMs - 500);

      // A job taken by a worker on that host and given back to the delayed set is due at the Redis time asked.
      await queue.add('s', {}, { jobId: 'now' });
      const worker = new Worker(keys.queueName, null, { connection: redis.duplicate(), prefix: keys.ns, autorun: false });
      try {
        const job = (await worker.getNextJob('tok'))!;
        expect(job.id).toBe('now');
        const at = clock.now() + 60_000;
        await delayJobUntil(worker, job, 'tok', clock, at);
        expect(await delayedAt('now')).toBe(at);
      } finally {
        await worker.close();
      }
    });
  }

  it('promotes what is due on TIME though no worker promoted it, and leaves the rest delayed', async () => {
    // As written by a replica whose host is behind Redis: due a second ago on the Redis clock.
    await queue.add('s', {}, { jobId: 'due', timestamp: clock.now() - 2000, delay: 1000 });
    await queue.add('s', {}, { jobId: 'later', timestamp: clock.now(), delay: 60_000 });
    expect(await promoteDueJobs(queue, store)).toBe(1);
    expect(await queue.getJobState('due')).toBe('waiting');
    expect(await queue.getJobState('later')).toBe('delayed');
    expect(await promoteDueJobs(queue, store)).toBe(0);
  });

  it('gives an early delivery back only when no in-bounds worker could have promoted it, and this host is not far ahead', () => {
    const hold = earlyHoldMs(500);
    expect(hold).toBe(500 + MAX_HOST_SKEW_MS + 1000);
    expect(shouldGiveBackEarly(hold - 1, 500, clock)).toBe(false);
    expect(shouldGiveBackEarly(hold + 1, 500, clock)).toBe(true);
    hostClockAhead(-3_600_000); // behind: its worker never promotes early
    expect(shouldGiveBackEarly(hold + 1, 500, clock)).toBe(true);
    hostClockAhead(3_600_000); // far ahead: its own worker would promote it again at once; hold it
    expect(shouldGiveBackEarly(hold + 1, 500, clock)).toBe(false);
  });
});

describe('batch jobs (enqueue.ts)', () => {
  it('adds occurrences whose record names their batch job (the plan script wrote it) in that job, writing nothing to their records', async () => {
    const now = clock.now();
    const named = [0, 1, 2].map((i) => ({ schedule: 's', key: `s@${i}`, dueMs: now + 5000 + i, fireMs: now + 5000 + i, origin: 'schedule' as const, batchJob: 'b-named' }));
    const other = { schedule: 's', key: 's@9', dueMs: now + 5000, fireMs: now + 5000, origin: 'schedule' as const };
    await enqueueOccurrences({ live: queue, backlog: queue }, keys, clock, 500, [named[2]!, other, named[0]!, named[1]!], { batchSize: 50, redis });
    const keysOf = (data: unknown) => (data as { batch: { key: string }[] }).batch.map((m) => m.key);
    expect(keysOf((await queue.getJob('b-named'))!.data)).toEqual(['s@0', 's@1', 's@2']); // in fire-time order
    for (const it of named) expect(await redis.exists(keys.occurrence(it.key))).toBe(0); // nothing written per occurrence
    // one without: cut into a batch here, its record told the batch job before the job is added
    const bj = await redis.hget(keys.occurrence('s@9'), 'bj');
    expect(bj).toMatch(/^b-/);
    expect(keysOf((await queue.getJob(bj!))!.data)).toEqual(['s@9']);
  });
});
