/**
 * The outbox on a real redis-server: every path that writes a final state (plan, claim, finish, abandon, sweep)
 * and the first claim write their entry in the same script, only for schedules whose published definition asks
 * (outboxOn); recovered follows failed or missed; the delivery state machine (lease, take-over from a consumer
 * that stopped renewing, retry time, done) and the rate limit with its one summary.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Keyspace } from '../redis/keys.js';
import { RedisServerProcess } from '../redis/server-process.js';
import { Store, type ClaimRequest } from '../redis/store.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { parseEntry, type OutboxEntry } from '../notify/events.js';
import { OutboxStore } from './store.js';
import { Definitions } from '../engine/definitions.js';
import { LiveReplicas } from '../engine/ownership.js';
import type { CompiledSchedule } from '../config/load.js';
import { compileCron } from '../schedule/cron.js';

let server: RedisServerProcess;
let redis: Redis;
let store: Store;
let outbox: OutboxStore;
const keys = new Keyspace('t');

beforeAll(async () => {
  server = await RedisServerProcess.start();
  redis = new Redis(server.url);
  store = new Store(redis, keys);
  outbox = new OutboxStore(redis, keys);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.cleanup();
});
beforeEach(async () => {
  await redis.flushall();
});

async function redisNow(): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
/** Publishes a definition as the publish script would, with the given outboxOn ('' for none). */
async function publish(schedule: string, outboxOn: string): Promise<void> {
  await redis.hset(keys.definitions, schedule, JSON.stringify({ cron: '* * * * * *', definitionHash: 'h', replica: 'a', ...(outboxOn ? { outboxOn } : {}) }));
}
async function entries(): Promise<OutboxEntry[]> {
  const raw = (await redis.xrange(outbox.k.stream, '-', '+')) as [string, string[]][];
  return raw.map(([, f]) => parseEntry(f)!);
}
function req(key: string, dueMs: number, over: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    replica: 'a', schedule: 's', key, dueMs, fireMs: dueMs, origin: 'schedule', lockMs: 1000, horizonMs: 60_000,
    retentionMs: 120_000, startingDeadlineMs: null, earlyToleranceMs: 0, maxStalls: 0, concurrencyPolicy: 'Allow',
    maxConcurrent: null, ...over,
  };
}
const o = { horizonMs: 60_000, retentionMs: 120_000, catchUpGraceMs: 60_000, replica: 'a' };
/** Plan policies: the plan script decides on TIME; a starting deadline of 0 makes a past fire time missed. */
const runs = { suspend: false, startingDeadlineMs: null, catchUp: 'all', maxCatchUpRuns: 100 } as const;
const missedByDeadline = { ...runs, startingDeadlineMs: 0 } as const;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('emitOutcome', () => {
  it('writes nothing for a schedule without notify or heartbeat', async () => {
    await publish('s', '');
    const now = await redisNow();
    const k = occurrenceKey('s', now - 1000);
    await store.claim(req(k, now - 1000));
    await store.finish(k, 1, { state: 'failed', retentionMs: 120_000 });
    expect(await redis.exists(outbox.k.stream)).toBe(0);
  });

  it('writes the first claim (started) once, and each final state with the previous outcome, recovered after failed or missed', async () => {
    await publish('s', 'failed missed recovered started succeeded');
    const now = await redisNow();
    const [k1, k2, k3, k4] = [4000, 3000, 2000, 1000].map((d) => occurrenceKey('s', now - d));
    // k1: fails after a retry (two claims, one started), k2: missed at planning, k3: succeeds (recovered), k4: succeeds.
    expect((await store.claim(req(k1!, now - 4000))).status).toBe('claimed');
    expect(await store.finish(k1!, 1, { state: 'failed', error: 'answered 500', retentionMs: 120_000, retries: 1, retryBackoffMs: 1, retryBackoffMaxMs: 1 })).toMatchObject({ status: 'retrying' });
    await sleep(5);
    expect((await store.claim(req(k1!, now - 4000))).status).toBe('claimed');
    expect(await store.finish(k1!, 2, { state: 'failed', error: 'answered 500', retentionMs: 120_000, retries: 1 })).toEqual({ status: 'recorded' });
    await store.plan([{ schedule: 's', key: k2!, dueMs: now - 3000, fireMs: now - 3000, keepFireMs: null, policy: missedByDeadline }], o);
    await store.claim(req(k3!, now - 2000));
    await store.finish(k3!, 1, { state: 'succeeded', retentionMs: 120_000 });
    await store.claim(req(k4!, now - 1000));
    await store.finish(k4!, 1, { state: 'succeeded', retentionMs: 120_000 });
    const got = (await entries()).map((e) => (e.kind === 'outcome' ? [e.key, e.state, e.prev, e.attempt, e.error] : []));
    expect(got).toEqual([
      [k1, 'started', '', 1, ''],
      [k1, 'failed', '', 2, 'answered 500'],
      [k2, 'missed', 'failed', 0, ''],
      [k3, 'started', '', 1, ''],
      [k3, 'succeeded', 'missed', 1, ''],
      [k4, 'started', '', 1, ''],
      [k4, 'succeeded', 'succeeded', 1, ''],
    ]);
  });

  it('writes only what outboxOn names, but tracks the last outcome for recovered', async () => {
    await publish('s', 'recovered');
    const now = await redisNow();
    const [k1, k2, k3] = [3000, 2000, 1000].map((d) => occurrenceKey('s', now - d));
    for (const [k, state] of [[k1, 'failed'], [k2, 'succeeded'], [k3, 'succeeded']] as const) {
      await store.claim(req(k!, now - 1000));
      await store.finish(k!, 1, { state, retentionMs: 120_000 });
    }
    // After a missed one too.
    const [k4, k5] = [500, 400].map((d) => occurrenceKey('s', now - d));
    await store.plan([{ schedule: 's', key: k4!, dueMs: now - 500, fireMs: now - 500, keepFireMs: null, policy: missedByDeadline }], o);
    await store.claim(req(k5!, now - 400));
    await store.finish(k5!, 1, { state: 'succeeded', retentionMs: 120_000 });
    const got = (await entries()).map((e) => (e.kind === 'outcome' ? [e.key, e.state, e.prev] : []));
    expect(got).toEqual([[k2, 'succeeded', 'failed'], [k5, 'succeeded', 'missed']]);
  });

  it('writes skipped and missed from the claim script, the abandon script and the sweep', async () => {
    await publish('s', 'missed skipped');
    const now = await redisNow();
    const [k1, k2, k3] = [3000, 2000, 1000].map((d) => occurrenceKey('s', now - d));
    await redis.hset(keys.suspended, 's', '{}');
    expect(await store.claim(req(k1!, now - 3000))).toEqual({ status: 'skipped', reason: 'suspended' });
    await redis.hdel(keys.suspended, 's');
    expect(await store.claim(req(k2!, now - 2000, { startingDeadlineMs: 10 }))).toEqual({ status: 'missed', reason: 'starting deadline exceeded' });
    await store.plan([{ schedule: 's', key: k3!, dueMs: now - 1000, fireMs: now - 1000, keepFireMs: null, policy: runs }], o);
    expect(await store.abandon(k3!, 'skipped', 'schedule removed', 120_000)).toEqual({ outcome: 'recorded', state: 'skipped' });
    // The sweep records missed a scheduled occurrence older than the horizon.
    const k4 = occurrenceKey('s', now - 50_000);
    await store.plan([{ schedule: 's', key: k4, dueMs: now - 50_000, fireMs: now - 50_000, keepFireMs: null, policy: runs }], o);
    await redis.zadd(keys.pending, 0, k4);
    await store.sweep({ sweepAfterMs: 0, limit: 100, jobKeyPrefixes: ['nojob:'], horizonMs: 10_000, retentionMs: 120_000 });
    const got = (await entries()).map((e) => (e.kind === 'outcome' ? [e.key, e.state, e.reason] : []));
    expect(got).toEqual([
      [k1, 'skipped', 'suspended'],
      [k2, 'missed', 'starting deadline exceeded'],
      [k3, 'skipped', 'schedule removed'],
      [k4, 'missed', 'not claimed within the catch-up horizon'],
    ]);
  });

  it('reads outboxOn from the definition a replica publishes', async () => {
    const s = {
      name: 's', jitterMs: 0, due: compileCron('* * * * * *', 'UTC'), concurrencyPolicy: 'Allow', maxConcurrent: null, timeoutMs: null,
      retries: 0, retryBackoffMs: 1000, retryBackoffMaxMs: 1000, startingDeadlineMs: null, suspend: false, catchUp: 'latest', maxCatchUpRuns: 1,
      definitionHash: 'x', job: { kind: 'http' }, source: { file: 'f.yaml', line: 1, col: 1 },
      heartbeat: { url: { value: 'http://x/' }, on: ['fail'], method: 'POST', timeoutMs: 1000, names: { start: 'start', success: 'success', fail: 'fail' } },
    } as unknown as CompiledSchedule;
    await new Definitions(redis, keys, 'a', new LiveReplicas()).publish([s]);
    expect(JSON.parse((await redis.hget(keys.definitions, 's'))!)).toMatchObject({ outboxOn: 'failed missed' });
  });
});

describe('delivery state', () => {
  const base = { entryId: '1-1', field: 'failed/webhook', leaseMs: 10_000, rateMax: 0, rateWindowMs: 0, event: 'failed', schedule: 's', channel: 'webhook', stateTtlMs: 60_000 };

  it('one holder at a time; sent is final; the entry completes only when every delivery is done', async () => {
    await redis.zadd(outbox.k.consumers, (await redisNow()) + 60_000, 'r1#a');
    expect(await outbox.take({ ...base, consumer: 'r1#a' })).toEqual({ status: 'take', attempt: 1 });
    expect(await outbox.take({ ...base, consumer: 'r2#b' })).toMatchObject({ status: 'wait' });
    expect(await outbox.complete('1-1', ['failed/webhook'])).toBe(false);
    expect(await outbox.settle('1-1', 'failed/webhook', 'r1#a', 'sent')).toBe(1);
    expect(await outbox.take({ ...base, consumer: 'r2#b' })).toEqual({ status: 'done', kind: 'sent' });
    expect(await outbox.complete('1-1', ['failed/webhook', 'fail/heartbeat'])).toBe(false);
    expect(await outbox.complete('1-1', ['failed/webhook'])).toBe(true);
    expect(await redis.exists(outbox.k.deliveries('1-1'))).toBe(0);
  });

  it('takes over a live lease when its holder is no longer a live consumer (killed), never from a live one', async () => {
    const now = await redisNow();
    await redis.zadd(outbox.k.consumers, now - 1, 'dead#1', now + 60_000, 'live#2');
    expect((await outbox.take({ ...base, consumer: 'dead#1' })).status).toBe('take');
    expect(await outbox.take({ ...base, consumer: 'live#2' })).toEqual({ status: 'take', attempt: 2 });
    expect((await outbox.take({ ...base, consumer: 'other#3' })).status).toBe('wait');
    // A stopping deliverer leaves the live set: its lease may be taken over at once.
    await outbox.tick('live#2', 0);
    expect(await outbox.take({ ...base, consumer: 'other#3' })).toEqual({ status: 'take', attempt: 3 });
    // The dead one wakes up: its failure report is ignored, its success still counts (and is flagged).
    expect(await outbox.settle('1-1', 'failed/webhook', 'live#2', 'retry', 10, 'x')).toBe(0);
    expect(await outbox.settle('1-1', 'failed/webhook', 'dead#1', 'sent')).toBe(2);
  });

  it("a tick keeps its deliverer live until Redis now + ttl, so its lease is not taken over; one expired for a minute is dropped", async () => {
    const now = await redisNow();
    await redis.zadd(outbox.k.consumers, now - 61_000, 'gone#0');
    await outbox.tick('live#1', 60_000);
    const expiry = Number(await redis.zscore(outbox.k.consumers, 'live#1'));
    expect(expiry).toBeGreaterThanOrEqual(now + 60_000);
    expect(expiry).toBeLessThan(now + 60_000 + 10_000);
    expect(await redis.zscore(outbox.k.consumers, 'gone#0')).toBeNull();
    expect((await outbox.take({ ...base, consumer: 'live#1' })).status).toBe('take');
    expect((await outbox.take({ ...base, consumer: 'other#2' })).status).toBe('wait');
  });

  it('a failed send waits for its retry time on the Redis clock, then is taken with the next attempt; gave up is final', async () => {
    await redis.zadd(outbox.k.consumers, (await redisNow()) + 60_000, 'r1#a');
    await outbox.take({ ...base, consumer: 'r1#a' });
    expect(await outbox.settle('1-1', 'failed/webhook', 'r1#a', 'retry', 300, 'answered 503')).toBe(1);
    expect((await outbox.take({ ...base, consumer: 'r1#a' })).status).toBe('wait');
    await sleep(350);
    expect(await outbox.take({ ...base, consumer: 'r1#a' })).toEqual({ status: 'take', attempt: 2 });
    expect(await outbox.settle('1-1', 'failed/webhook', 'r1#a', 'gaveup', 0, 'answered 400')).toBe(1);
    expect(await outbox.take({ ...base, consumer: 'r1#a' })).toEqual({ status: 'done', kind: 'gaveup' });
  });
});

describe('rate limit', () => {
  it('lets max messages through per window, suppresses the rest, and ends the window with exactly one summary', async () => {
    await redis.hset(outbox.k.last, 's', 'failed');
    const take = (i: number, event = 'failed') =>
      outbox.take({ entryId: `${i}-0`, field: `${event}/slack`, consumer: 'r#1', leaseMs: 1000, rateMax: 2, rateWindowMs: 600, event, schedule: 's', channel: 'slack', stateTtlMs: 60_000 });
    expect((await take(1)).status).toBe('take');
    expect((await take(2)).status).toBe('take');
    expect((await take(3)).status).toBe('suppressed');
    expect((await take(4, 'missed')).status).toBe('suppressed');
    expect((await take(3)).status).toBe('done'); // decided once
    // Before the window ends: no summary, however often asked.
    expect(await outbox.tick('x#1', 1000)).toBe(0);
    await sleep(650);
    // Two replicas ask at once: one summary.
    await Promise.all([outbox.tick('x#1', 1000), outbox.tick('x#1', 1000)]);
    const sums = (await entries()).filter((e) => e.kind === 'summary');
    expect(sums).toHaveLength(1);
    expect(sums[0]).toMatchObject({ kind: 'summary', schedule: 's', channel: 'slack', suppressed: 2, events: { failed: 1, missed: 1 }, last: 'failed' });
    // A new window starts with the next message.
    expect((await take(5)).status).toBe('take');
  });

  it('a message after the window ended makes the summary itself, if the due-summaries pass has not yet', async () => {
    const take = (i: number) =>
      outbox.take({ entryId: `${i}-0`, field: 'failed/email', consumer: 'r#1', leaseMs: 1000, rateMax: 1, rateWindowMs: 300, event: 'failed', schedule: 's', channel: 'email', stateTtlMs: 60_000 });
    await take(1);
    expect((await take(2)).status).toBe('suppressed');
    await sleep(350);
    expect((await take(3)).status).toBe('take');
    expect(await outbox.tick('x#1', 1000)).toBe(0);
    expect((await entries()).filter((e) => e.kind === 'summary')).toMatchObject([{ suppressed: 1, channel: 'email' }]);
  });
});
