/**
 * The claim protocol, script by script, on a real redis-server: one live claim, fencing, the Redis clock,
 * the horizon, the starting deadline, the stall limit, the sweeper, and record retention; and the backfill
 * backlog: waiting records that do not expire, admission under a flock-wide cap (one at a time for Forbid,
 * oldest first, schedules in the order asked, none while suspended), the claim sending a suspended schedule's
 * admitted occurrence back to waiting, and cancellation.
 */
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from './keys.js';
import { Store, type ClaimRequest, type PlannedOccurrence, type PlanPolicy } from './store.js';
import { keepFireTimes } from '../engine/dispositions.js';
import { offerOf } from '../engine/planner.js';
import { parseScheduleText } from '../config/load.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { toRunRecord } from '../records/runs.js';
import { backfillCounts } from '../records/backfill.js';
import { parseLastResult } from '../records/last-result.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';

const priv = usePrivateRedis();
const { redisNow } = priv;
let redis: Redis;
let store: Store;
const keys = new Keyspace('t');

beforeAll(() => {
  redis = priv.redis;
  store = new Store(redis, keys);
});
async function record(key: string) {
  return toRunRecord(await redis.hgetall(keys.occurrence(key)));
}
function req(key: string, dueMs: number, fireMs: number, over: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    replica: 'a', schedule: 's', key, dueMs, fireMs, origin: 'schedule', lockMs: 1000, horizonMs: 60_000,
    retentionMs: 120_000, startingDeadlineMs: null, earlyToleranceMs: 0, maxStalls: 2, concurrencyPolicy: 'Allow',
    maxConcurrent: null, ...over,
  };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An offer of one schedule's candidates, as the planner makes it (engine/dispositions.ts). */
function offer(schedule: string, cands: { dueMs: number; fireMs: number }[], p: Partial<PlanPolicy> = {}): PlannedOccurrence[] {
  const policy: PlanPolicy = { suspend: false, startingDeadlineMs: null, catchUp: 'latest', maxCatchUpRuns: 10, ...p };
  const keep = keepFireTimes(cands, policy);
  return cands.map((c, i) => ({ schedule, key: occurrenceKey(schedule, c.dueMs), ...c, keepFireMs: keep[i]!, policy }));
}
const planOpts = { horizonMs: 60_000, retentionMs: 120_000, catchUpGraceMs: 1000, replica: 'a' };

describe('plan', () => {
  it('records an occurrence once, however many replicas offer it', async () => {
    const now = await redisNow();
    const item = offer('s', [{ dueMs: now + 1000, fireMs: now + 1200 }]);
    const key = item[0]!.key;
    expect((await store.plan(item, planOpts)).toEnqueue).toEqual([{ key, reason: '' }]);
    expect((await store.plan(item, { ...planOpts, replica: 'b' })).toEnqueue).toEqual([]);
    expect(await record(key)).toMatchObject({ state: 'scheduled', fencingToken: 0, fireMs: now + 1200 });
    expect(await redis.zscore(keys.pending, key)).toBe(String(now + 1200));
    expect(await redis.hget(keys.watermarks, 's')).toBe(String(now + 1000));
  });

  it('never creates an occurrence older than the horizon (a lagging replica cannot revive it)', async () => {
    const now = await redisNow();
    const items = offer('s', [{ dueMs: now - 61_000, fireMs: now - 61_000 }], { catchUp: 'all' });
    const r = await store.plan(items, planOpts);
    expect(r.toEnqueue).toEqual([]);
    expect(await redis.exists(keys.occurrence(items[0]!.key))).toBe(0);
  });

  describe('decides on the Redis clock what runs', () => {
    // Ten occurrences a second apart; the Redis clock reads 9 s after the first due time: with a catch-up grace
    // of 1 s, all are overdue but the last two.
    async function decide(name: string, p: Partial<PlanPolicy>, split = false) {
      const base = (await redisNow()) - 9000;
      const items = offer(name, Array.from({ length: 10 }, (_, i) => ({ dueMs: base + i * 1000, fireMs: base + i * 1000 + 100 })), p);
      // A long offer travels in several plan calls: each row is decided on its own.
      const parts = split ? [items.slice(0, 4), items.slice(4)] : [items];
      for (const part of parts) await store.plan(part, planOpts);
      const recs = await Promise.all(items.map((it) => record(it.key)));
      return {
        runs: recs.flatMap((r, i) => (r!.state === 'scheduled' ? [i] : [])),
        recs,
      };
    }

    it('catchUp latest: the newest overdue one runs late, the others are missed with the reason', async () => {
      const { runs, recs } = await decide('latest', {});
      expect(runs).toEqual([7, 8, 9]);
      expect(recs[0]).toMatchObject({ state: 'missed', reason: 'catch-up: superseded by a later overdue occurrence' });
      expect(recs[7]).toMatchObject({ state: 'scheduled', reason: 'catch-up: run late (catchUp latest)' });
      expect(recs[8]!.reason).toBeUndefined();
    });
    it('catchUp none runs no overdue occurrence; all runs the newest maxCatchUpRuns', async () => {
      expect((await decide('none', { catchUp: 'none' })).runs).toEqual([8, 9]);
      const all = await decide('all', { catchUp: 'all', maxCatchUpRuns: 3 });
      expect(all.runs).toEqual([5, 6, 7, 8, 9]);
      expect(all.recs[4]).toMatchObject({ state: 'missed', reason: 'catch-up: more than maxCatchUpRuns (3) overdue' });
    });
    it('decides each row on its own, so an offer split over several calls gives the same answer', async () => {
      expect((await decide('split-latest', {}, true)).runs).toEqual([7, 8, 9]);
      expect((await decide('split-all', { catchUp: 'all', maxCatchUpRuns: 3 }, true)).runs).toEqual([5, 6, 7, 8, 9]);
    });
    it('starting deadline: later ones are missed whatever the catch-up policy; suspended ones are skipped', async () => {
      const d = await decide('deadline', { catchUp: 'all', startingDeadlineMs: 2500 });
      expect(d.runs).toEqual([7, 8, 9]);
      expect(d.recs[6]).toMatchObject({ state: 'missed', reason: 'starting deadline exceeded' });
      const s = await decide('suspended', { suspend: true });
      expect(s.recs.every((r) => r!.state === 'skipped' && r!.reason === 'suspended')).toBe(true);
    });
    it('an offer from a replica whose clock reads an hour ahead records nothing missed (it is not overdue on TIME)', async () => {
      const now = await redisNow();
      // What a planner that believes it is an hour later offers: the due times of the coming hour.
      const items = offer('ahead', Array.from({ length: 1800 }, (_, i) => ({ dueMs: now + i * 2000, fireMs: now + i * 2000 })));
      const r = await store.plan(items, planOpts);
      expect(r.finals).toEqual([]);
      expect(r.toEnqueue).toHaveLength(1800);
    });
    it('returns what it recorded final, with the state and reason, for the metrics', async () => {
      const now = await redisNow();
      const items = offer('finals', [
        { dueMs: now - 5000, fireMs: now - 5000 },
        { dueMs: now - 4000, fireMs: now - 4000 },
      ], { catchUp: 'none' });
      const r = await store.plan(items, planOpts);
      expect(r).toEqual({
        toEnqueue: [],
        finals: items.map((it) => ({ key: it.key, state: 'missed', reason: 'catch-up: none (overdue when planned)' })),
      });
    });
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

  it('claims asked together go in one call, each decided on its own: one live claimant per occurrence, tokens per occurrence', async () => {
    const now = await redisNow();
    const [k1, k2] = [occurrenceKey('c1', now), occurrenceKey('c2', now)];
    await store.claim(req(occurrenceKey('none', now - 70_000), now - 70_000, now - 70_000)); // the script is loaded
    const calls = async (): Promise<number> => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    const before = await calls();
    const out = await Promise.all([
      store.claim(req(k1, now, now, { schedule: 'c1' })),
      store.claim(req(k1, now, now, { schedule: 'c1', replica: 'b' })), // the same occurrence, another claimant
      store.claim(req(k2, now, now, { schedule: 'c2', replica: 'b' })),
      store.claim(req(occurrenceKey('c3', now + 5000), now + 5000, now + 5000, { schedule: 'c3' })),
    ]);
    expect(await calls()).toBe(before + 1);
    expect(out[0]).toMatchObject({ status: 'claimed', token: 1, attempt: 1 });
    expect(out[1]).toMatchObject({ status: 'held', holder: 'a' });
    expect(out[2]).toMatchObject({ status: 'claimed', token: 1, attempt: 1 });
    expect(out[3].status).toBe('early');
    expect(await record(k1)).toMatchObject({ state: 'running', replica: 'a', fencingToken: 1 });
    expect(await record(k2)).toMatchObject({ state: 'running', replica: 'b', fencingToken: 1 });
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
    expect(await store.claim(req(key, now - 3000, now - 3000, { startingDeadlineMs: 1000 }))).toEqual({ status: 'missed', reason: 'starting deadline exceeded' });
    expect(await record(key)).toMatchObject({ state: 'missed', reason: 'starting deadline exceeded', fencingToken: 0 });
    expect(await store.claim(req(key, now - 3000, now - 3000))).toEqual({ status: 'final', state: 'missed' });
  });

  it('refuses an unknown occurrence older than the horizon (a revived duplicate)', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now - 70_000);
    expect(await store.claim(req(key, now - 70_000, now - 70_000))).toEqual({ status: 'stale' });
    expect(await redis.exists(keys.occurrence(key))).toBe(0);
  });

  it('runs nothing for a scheduled occurrence whose record Redis lost past the catch-up grace: the re-plan decides', async () => {
    // A delivery that outlived Redis's lost writes (a batch held in a replica's memory) finds no record: past the
    // catch-up grace it must not run on its own (the catch-up policy decides over all overdue due times together).
    const now = await redisNow();
    const late = occurrenceKey('s', now - 5000);
    expect(await store.claim(req(late, now - 5000, now - 5000, { catchUpGraceMs: 1000 }))).toEqual({ status: 'plan-lost' });
    expect(await redis.exists(keys.occurrence(late))).toBe(0);
    // Within the grace it is on time, as the re-plan would record it: created and claimed.
    const onTime = occurrenceKey('s', now - 200);
    expect((await store.claim(req(onTime, now - 200, now - 200, { catchUpGraceMs: 1000 }))).status).toBe('claimed');
    // Work asked for after the fact (a trigger) and a claim without a grace are created and claimed as before.
    const manual = occurrenceKey('s', now - 6000);
    expect((await store.claim(req(manual, now - 6000, now - 6000, { catchUpGraceMs: 1000, origin: 'manual' }))).status).toBe('claimed');
    const noGrace = occurrenceKey('s', now - 7000);
    expect((await store.claim(req(noGrace, now - 7000, now - 7000))).status).toBe('claimed');
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
    expect((await store.renew(key, 1, 300, 120_000)).untilMs).toBeGreaterThan(now);
    await sleep(350);
    expect((await store.renew(key, 1, 300, 120_000)).untilMs).toBe(0); // lapsed: never revived
    expect(await store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'refused' }); // lapsed, nobody else yet
    const b = await store.claim(req(key, now, now, { replica: 'b', lockMs: 5000 }));
    expect(b).toMatchObject({ status: 'claimed', token: 2 });
    expect(await store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'refused' }); // stale token
    expect(await store.finish(key, 2, { state: 'succeeded', result: '{"ok":1}', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    expect(await store.finish(key, 2, { state: 'failed', retentionMs: 120_000 })).toEqual({ status: 'refused' }); // final already
    expect(await record(key)).toMatchObject({ state: 'succeeded', fencingToken: 2, replica: 'b', refused: 3, result: '{"ok":1}' });
  });

  it('records an outcome reached within the lease after the lease ended while nobody claimed since; never once another claim took it', async () => {
    // A Redis outage between the job's end and its finish: the finish reaches Redis after the lease's end.
    const now = await redisNow();
    const [k1, k2] = ['late1', 'late2'].map((s) => occurrenceKey(s, now)) as [string, string];
    for (const k of [k1, k2]) expect((await store.claim(req(k, now, now, { lockMs: 300 }))).status).toBe('claimed');
    await sleep(350);
    expect(await store.finish(k1, 1, { state: 'succeeded', result: '{"late":1}', retentionMs: 120_000, reachedInLease: true })).toEqual({ status: 'recorded' });
    expect(await record(k1)).toMatchObject({ state: 'succeeded', fencingToken: 1, result: '{"late":1}' });
    expect(await store.claim(req(k1, now, now, { replica: 'b' }))).toMatchObject({ status: 'final', state: 'succeeded' }); // never run again
    // Another replica claimed it after the lapse: the first claimant's outcome is stale, in lease or not.
    expect(await store.claim(req(k2, now, now, { replica: 'b', lockMs: 5000 }))).toMatchObject({ status: 'claimed', token: 2 });
    expect(await store.finish(k2, 1, { state: 'succeeded', retentionMs: 120_000, reachedInLease: true })).toEqual({ status: 'refused' });
    expect(await record(k2)).toMatchObject({ state: 'running', replica: 'b', fencingToken: 2, refused: 1 });
  });

  it('records the end the replica sends (when the run ended), bounded to [the start, the Redis time of the finish]', async () => {
    const now = await redisNow();
    const [k1, k2, k3, k4] = ['e1', 'e2', 'e3', 'e4'].map((s) => occurrenceKey(s, now)) as [string, string, string, string];
    for (const k of [k1, k2, k3, k4]) expect((await store.claim(req(k, now, now, { lockMs: 60_000 }))).status).toBe('claimed');
    await sleep(300);
    const startMs = Number(await redis.hget(keys.occurrence(k1), 'startMs'));
    // Sent late (an outage): the end it sends is kept, not the time Redis took the finish.
    await store.finish(k1, 1, { state: 'succeeded', retentionMs: 120_000, reachedInLease: true, endMs: startMs + 100 });
    expect((await record(k1))?.endMs).toBe(startMs + 100);
    // Before the start (a replica's clock error): the start.
    await store.finish(k2, 1, { state: 'failed', retentionMs: 120_000, endMs: startMs - 5000 });
    expect((await record(k2))?.endMs).toBe(Number(await redis.hget(keys.occurrence(k2), 'startMs')));
    // After the Redis time now: the Redis time of the finish.
    const before = await redisNow();
    await store.finish(k3, 1, { state: 'succeeded', retentionMs: 120_000, endMs: before + 60_000 });
    const after = await redisNow();
    expect((await record(k3))?.endMs).toBeGreaterThanOrEqual(before);
    expect((await record(k3))?.endMs).toBeLessThanOrEqual(after);
    // None sent: the Redis time of the finish, as before.
    await store.finish(k4, 1, { state: 'succeeded', retentionMs: 120_000 });
    expect((await record(k4))?.endMs).toBeGreaterThanOrEqual(before);
  });

  it('takes the last success from the run\'s recorded end, and never moves it back', async () => {
    const now = await redisNow();
    const [k1, k2] = [now, now + 1_000].map((t) => occurrenceKey('ls', t)) as [string, string];
    for (const k of [k1, k2]) expect((await store.claim(req(k, now, now, { lockMs: 60_000 }))).status).toBe('claimed');
    await sleep(300);
    const startMs = Number(await redis.hget(keys.occurrence(k2), 'startMs'));
    // The later run's finish comes first: its end is the last success (the runs and the metrics agree).
    await store.finish(k2, 1, { state: 'succeeded', retentionMs: 120_000, endMs: startMs + 200 });
    const schedule = (await record(k2))!.schedule; // the test requests' schedule
    expect(Number(await redis.hget(keys.lastSuccess, schedule))).toBe((await record(k2))!.endMs);
    // An earlier end whose finish arrives later does not move it back.
    await store.finish(k1, 1, { state: 'succeeded', retentionMs: 120_000, endMs: startMs + 50 });
    expect((await record(k1))?.endMs).toBe(startMs + 50);
    expect(Number(await redis.hget(keys.lastSuccess, schedule))).toBe(startMs + 200);
  });

  it('finishes asked together go in one call, each fenced on its own: a stale token among them is refused, the live ones recorded', async () => {
    const now = await redisNow();
    const [k1, k2, k3] = ['s1', 's2', 's3'].map((s) => occurrenceKey(s, now)) as [string, string, string];
    for (const k of [k1, k2, k3]) expect((await store.claim(req(k, now, now, { lockMs: 5000 }))).status).toBe('claimed');
    expect((await store.claim(req(k2, now, now, { replica: 'b' }))).status).toBe('held');
    await store.release(k2, 1, 'handed over', 5000);
    expect(await store.claim(req(k2, now, now, { replica: 'b', lockMs: 5000 }))).toMatchObject({ status: 'claimed', token: 2 });
    const calls = async (): Promise<number> => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    await store.finish(occurrenceKey('none', now), 1, { state: 'succeeded', retentionMs: 120_000 }); // the script is loaded
    const before = await calls();
    const out = await Promise.all([
      store.finish(k1, 1, { state: 'succeeded', retentionMs: 120_000 }),
      store.finish(k2, 1, { state: 'succeeded', retentionMs: 120_000 }), // stale: b holds token 2
      store.finish(k3, 1, { state: 'failed', error: 'boom', retentionMs: 120_000, retries: 1, lockMs: 5000 }),
    ]);
    expect(await calls()).toBe(before + 1);
    expect(out).toEqual([{ status: 'recorded' }, { status: 'refused' }, { status: 'retrying', retryAtMs: expect.any(Number) }]);
    expect(await record(k1)).toMatchObject({ state: 'succeeded', fencingToken: 1 });
    expect(await record(k2)).toMatchObject({ state: 'running', replica: 'b', fencingToken: 2, refused: 1 });
    expect(await record(k3)).toMatchObject({ state: 'retrying', error: 'boom' });
  });

  it('releases a claim so the next claim is immediate and not counted as a stall', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    await store.claim(req(key, now, now, { lockMs: 60_000 }));
    expect(await store.release(key, 2, 'not mine', 1000)).toBe(false);
    expect(await store.release(key, 1, 'shutdown', 1000)).toBe(true);
    expect(await store.claim(req(key, now, now, { replica: 'b' }))).toMatchObject({ status: 'claimed', token: 2 });
    expect(await record(key)).toMatchObject({ stalls: 0, handovers: 1 });
  });

  it('keeps a final record for the retention, then it is gone', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    await store.claim(req(key, now, now, { retentionMs: 400 }));
    expect(await store.finish(key, 1, { state: 'succeeded', retentionMs: 400 })).toEqual({ status: 'recorded' });
    const ttl = await redis.pttl(keys.occurrence(key));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(400);
    await sleep(500);
    expect(await redis.exists(keys.occurrence(key))).toBe(0);
  });
});

describe('sweep', () => {
  const opts = { sweepAfterMs: 5000, limit: 10, jobKeyPrefixes: ['bull:', 'lane:'] as const, horizonMs: 60_000, retentionMs: 120_000 };

  it('returns planned occurrences whose queue job is missing, and closes those past the horizon as missed', async () => {
    const now = await redisNow();
    const lost = occurrenceKey('s', now - 10_000);
    const enqueued = occurrenceKey('s', now - 9_000);
    const items = offer('s', [{ dueMs: now - 10_000, fireMs: now - 10_000 }, { dueMs: now - 9_000, fireMs: now - 9_000 }], { catchUp: 'all' });
    expect((await store.plan(items, planOpts)).toEnqueue.map((e) => e.key)).toEqual([lost, enqueued]);
    await redis.hset(`bull:${keys.jobId(enqueued)}`, 'data', '{}'); // the job of \`enqueued\` exists
    // Both were overdue when planned (catch-up runs): the reason comes back, and sends it to the backlog lane.
    expect(await store.sweep(opts)).toEqual([
      { key: lost, schedule: 's', dueMs: now - 10_000, fireMs: now - 10_000, origin: 'schedule', reason: 'catch-up: run late (catchUp all)' },
    ]);
    // Checked entries go to the back: an immediate second sweep finds nothing due for a check.
    expect(await store.sweep(opts)).toEqual([]);
    await redis.zadd(keys.pending, 0, lost);
    expect(await store.sweep({ ...opts, horizonMs: 5_000 })).toEqual([]);
    expect(await record(lost)).toMatchObject({ state: 'missed', reason: 'not claimed within the catch-up horizon' });
    expect(await redis.zscore(keys.pending, lost)).toBeNull();
  });

  it('counts a job in either lane, and returns the reason that decides the lane of one to enqueue again', async () => {
    const now = await redisNow();
    const inBacklog = occurrenceKey('s', now - 10_000);
    const lostCatchUp = occurrenceKey('s', now - 9_000);
    const reason = 'catch-up: run late (catchUp all)';
    // Both overdue when planned: the plan script records them as catch-up runs (catchUp all keeps both).
    const planned = await store.plan(offer('s', [{ dueMs: now - 10_000, fireMs: now - 10_000 }, { dueMs: now - 9_000, fireMs: now - 9_000 }], { catchUp: 'all' }), planOpts);
    expect(planned.toEnqueue).toEqual([
      { key: inBacklog, reason },
      { key: lostCatchUp, reason },
    ]);
    await redis.zadd(keys.pending, 0, inBacklog, 0, lostCatchUp);
    await redis.hset(`lane:${keys.jobId(inBacklog)}`, 'data', '{}'); // its job is in the backlog lane
    expect(await store.sweep(opts)).toEqual([{ key: lostCatchUp, schedule: 's', dueMs: now - 9_000, fireMs: now - 9_000, origin: 'schedule', reason }]);
  });

  it('returns a running occurrence whose lease lapsed and whose job is gone, never a live one', async () => {
    const now = await redisNow();
    const dead = occurrenceKey('s', now - 20_000);
    const live = occurrenceKey('s', now - 19_000);
    await store.claim(req(dead, now - 20_000, now - 20_000, { lockMs: 100 }));
    await store.claim(req(live, now - 19_000, now - 19_000, { lockMs: 60_000 }));
    await sleep(150);
    await redis.zadd(keys.pending, 0, dead, 0, live); // as if last checked long ago
    expect(await store.sweep(opts)).toEqual([{ key: dead, schedule: 's', dueMs: now - 20_000, fireMs: now - 20_000, origin: 'schedule' }]);
    // Once final, it leaves the set.
    await store.claim(req(dead, now - 20_000, now - 20_000, { lockMs: 5000 }));
    expect(await store.finish(dead, 2, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    expect(await redis.zscore(keys.pending, dead)).toBeNull();
    expect(await redis.zscore(keys.pending, live)).not.toBeNull();
  });
});

describe('concurrency policy (claim)', () => {
  async function running(key: string, due: number, over: Partial<ClaimRequest> = {}) {
    const r = await store.claim(req(key, due, due, { lockMs: 60_000, ...over }));
    expect(r.status).toBe('claimed');
  }

  it('Forbid: a scheduled occurrence that finds another running is recorded skipped (overlap)', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    const b = occurrenceKey('s', now - 1000);
    await running(a, now - 2000, { concurrencyPolicy: 'Forbid' });
    const r = await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Forbid', replica: 'b' }));
    expect(r).toEqual({ status: 'skipped', reason: `overlap: ${a} still running (concurrencyPolicy Forbid)` });
    expect(await record(b)).toMatchObject({ state: 'skipped', fencingToken: 0 });
    // Once the first has finished, the next runs.
    expect(await store.finish(a, 1, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    const c = occurrenceKey('s', now);
    expect((await store.claim(req(c, now, now, { concurrencyPolicy: 'Forbid' }))).status).toBe('claimed');
  });

  it('Forbid: a run whose lease lapsed keeps its place: the next one is skipped (overlap), the stalled one is claimed again first', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    await store.claim(req(a, now - 2000, now - 2000, { lockMs: 100, concurrencyPolicy: 'Forbid' }));
    await sleep(150); // its claimant stalled (killed, stopped, Redis away): the lease lapsed, nobody took it up yet
    const b = occurrenceKey('s', now - 1000);
    expect(await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Forbid', replica: 'b' }))).toEqual({
      status: 'skipped',
      reason: `overlap: ${a} stalled, to be claimed again (concurrencyPolicy Forbid)`,
    });
    expect(await record(b)).toMatchObject({ state: 'skipped', fencingToken: 0 });
    // The stalled one is re-delivered and claimed again (a stall counted), and ends; only then the next runs.
    expect(await store.claim(req(a, now - 2000, now - 2000, { concurrencyPolicy: 'Forbid', replica: 'c', lockMs: 60_000 }))).toMatchObject({ status: 'claimed', token: 2, attempt: 2 });
    expect(await record(a)).toMatchObject({ state: 'running', stalls: 1, replica: 'c' });
    expect(await store.finish(a, 2, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    expect(await redis.zscore(keys.active('s'), a)).toBeNull();
    const c = occurrenceKey('s', now);
    expect((await store.claim(req(c, now, now, { concurrencyPolicy: 'Forbid' }))).status).toBe('claimed');
  });

  it('Forbid: a stalled run blocks nothing for ever: it leaves when it fails stalled-out, or when its record is gone', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 3000);
    for (let i = 0; i < 3; i++) {
      expect((await store.claim(req(a, now - 3000, now - 3000, { lockMs: 100, maxStalls: 2, concurrencyPolicy: 'Forbid' }))).status).toBe('claimed');
      await sleep(150);
    }
    const b = occurrenceKey('s', now - 2000);
    expect((await store.claim(req(b, now - 2000, now - 2000, { concurrencyPolicy: 'Forbid' }))).status).toBe('skipped');
    expect(await store.claim(req(a, now - 3000, now - 3000, { lockMs: 100, maxStalls: 2, concurrencyPolicy: 'Forbid' }))).toEqual({ status: 'stalled-out' });
    expect(await redis.zscore(keys.active('s'), a)).toBeNull();
    const c = occurrenceKey('s', now - 1000);
    await store.claim(req(c, now - 1000, now - 1000, { lockMs: 100, concurrencyPolicy: 'Forbid' }));
    await sleep(150);
    // C's record expires (or is deleted) while it is open: its entry no longer holds the schedule.
    await redis.del(keys.occurrence(c));
    const d = occurrenceKey('s', now);
    expect((await store.claim(req(d, now, now, { concurrencyPolicy: 'Forbid' }))).status).toBe('claimed');
    expect(await redis.zrange(keys.active('s'), 0, -1)).toEqual([d]);
  });

  it('Replace: an older run that stalled is ended failed (replaced) at once, and its stale claimant is fenced', async () => {
    const now = await redisNow();
    const old = occurrenceKey('s', now - 2000);
    const neu = occurrenceKey('s', now - 1000);
    await store.claim(req(old, now - 2000, now - 2000, { lockMs: 100, concurrencyPolicy: 'Replace' }));
    await sleep(150);
    expect(await store.claim(req(neu, now - 1000, now - 1000, { concurrencyPolicy: 'Replace', replica: 'b', lockMs: 60_000 }))).toMatchObject({
      status: 'claimed',
      token: 1,
      replaced: [{ key: old, dueMs: now - 2000, fireMs: now - 2000 }],
    });
    expect(await record(old)).toMatchObject({ state: 'failed', reason: 'replaced', error: `replaced by ${neu} (concurrencyPolicy Replace)` });
    expect((await store.renew(old, 1, 1000, 120_000)).untilMs).toBe(0);
    expect(await store.finish(old, 1, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'refused' });
    expect(await store.claim(req(old, now - 2000, now - 2000, { concurrencyPolicy: 'Replace' }))).toEqual({ status: 'final', state: 'failed' });
  });

  it('Replace: an older arrival that finds a newer run stalled (not final) is superseded, not run late', async () => {
    const now = await redisNow();
    const neu = occurrenceKey('s', now - 1000);
    await store.claim(req(neu, now - 1000, now - 1000, { lockMs: 100, concurrencyPolicy: 'Replace' }));
    await sleep(150);
    const older = occurrenceKey('s', now - 2000);
    expect(await store.claim(req(older, now - 2000, now - 2000, { concurrencyPolicy: 'Replace' }))).toEqual({
      status: 'skipped',
      reason: `superseded: newer ${neu} is running (concurrencyPolicy Replace)`,
    });
  });

  it('Replace: the newer asks the older to stop and waits; the older learns it at renewal; an older arrival is superseded', async () => {
    const now = await redisNow();
    const old = occurrenceKey('s', now - 2000);
    const neu = occurrenceKey('s', now - 1000);
    await running(old, now - 2000, { concurrencyPolicy: 'Replace' });
    const r = await store.claim(req(neu, now - 1000, now - 1000, { concurrencyPolicy: 'Replace', replica: 'b' }));
    expect(r.status).toBe('held');
    expect(await store.renew(old, 1, 60_000, 120_000)).toMatchObject({ cancelBy: neu });
    // The executor records a replaced run failed without retries.
    expect(await store.finish(old, 1, { state: 'failed', reason: 'replaced', retentionMs: 120_000, retries: 0 })).toEqual({
      status: 'recorded',
    });
    expect((await store.claim(req(neu, now - 1000, now - 1000, { concurrencyPolicy: 'Replace', replica: 'b' }))).status).toBe('claimed');
    const older = occurrenceKey('s', now - 3000);
    expect(await store.claim(req(older, now - 3000, now - 3000, { concurrencyPolicy: 'Replace' }))).toEqual({
      status: 'skipped',
      reason: `superseded: newer ${neu} is running (concurrencyPolicy Replace)`,
    });
  });

  it('Allow with maxConcurrent: waits for a free slot', async () => {
    const now = await redisNow();
    const keysRun = [0, 1].map((i) => occurrenceKey('s', now - 3000 + i * 1000));
    for (const [i, k] of keysRun.entries()) await running(k, now - 3000 + i * 1000, { maxConcurrent: 2 });
    const third = occurrenceKey('s', now - 1000);
    expect((await store.claim(req(third, now - 1000, now - 1000, { maxConcurrent: 2 }))).status).toBe('held');
    expect(await store.finish(keysRun[0]!, 1, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    expect((await store.claim(req(third, now - 1000, now - 1000, { maxConcurrent: 2 }))).status).toBe('claimed');
  });

  it('Allow with maxConcurrent: a stalled run keeps its slot until it is claimed again and ends', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    await store.claim(req(a, now - 2000, now - 2000, { lockMs: 100, maxConcurrent: 1 }));
    await sleep(150);
    const b = occurrenceKey('s', now - 1000);
    expect(await store.claim(req(b, now - 1000, now - 1000, { maxConcurrent: 1 }))).toMatchObject({ status: 'held', holder: a });
    expect(await store.claim(req(a, now - 2000, now - 2000, { maxConcurrent: 1, lockMs: 60_000 }))).toMatchObject({ status: 'claimed', token: 2 });
    expect(await store.finish(a, 2, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    expect((await store.claim(req(b, now - 1000, now - 1000, { maxConcurrent: 1 }))).status).toBe('claimed');
  });

  it('started runs none of which holds a lease never wait for each other: the earliest goes first (no deadlock)', async () => {
    const now = await redisNow();
    // Two runs started while the schedule allowed it (before a reload made it Forbid / maxConcurrent 1); both stalled.
    const a = occurrenceKey('s', now - 2000);
    const b = occurrenceKey('s', now - 1000);
    await store.claim(req(a, now - 2000, now - 2000, { lockMs: 100 }));
    await store.claim(req(b, now - 1000, now - 1000, { lockMs: 100 }));
    await sleep(150);
    for (const over of [{ concurrencyPolicy: 'Forbid' as const }, { maxConcurrent: 1 }]) {
      expect(await store.claim(req(b, now - 1000, now - 1000, over))).toMatchObject({ status: 'held', holder: a });
    }
    expect(await store.claim(req(a, now - 2000, now - 2000, { concurrencyPolicy: 'Forbid', lockMs: 300 }))).toMatchObject({ status: 'claimed', token: 2 });
    // A runs (live lease): B, started, waits for it; once A is final, B is claimed again.
    expect(await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Forbid' }))).toMatchObject({ status: 'held', holder: a });
    expect(await store.finish(a, 2, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    expect(await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Forbid' }))).toMatchObject({ status: 'claimed', token: 2 });
  });

  it('backfill waits (never skips) while a stalled run of its Forbid schedule is open', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 1000);
    await store.claim(req(a, now - 1000, now - 1000, { lockMs: 100, concurrencyPolicy: 'Forbid' }));
    await sleep(150);
    const bf = occurrenceKey('s', now - 30_000);
    expect(await store.claim(req(bf, now - 30_000, now - 100, { origin: 'backfill', concurrencyPolicy: 'Forbid' }))).toMatchObject({ status: 'held', holder: a });
    expect(await record(bf)).toMatchObject({ state: 'scheduled' });
  });
});

describe('a started occurrence keeps its place (retries, hand-overs)', () => {
  const retry = { retentionMs: 120_000, lockMs: 1000, retries: 2, retryBackoffMs: 1600, retryBackoffMaxMs: 1600 };
  /** Claims `key` and fails its attempt with a retry left: it waits 0.8–1.6 s for its retry. */
  async function failWithRetryLeft(key: string, due: number, over: Partial<ClaimRequest> = {}): Promise<number> {
    const c = await store.claim(req(key, due, due, { lockMs: 1000, ...over }));
    if (c.status !== 'claimed') throw new Error(`not claimed: ${JSON.stringify(c)}`);
    const f = await store.finish(key, c.token, { state: 'failed', error: 'boom', ...retry });
    if (f.status !== 'retrying') throw new Error(`not retrying: ${JSON.stringify(f)}`);
    return f.retryAtMs;
  }

  it('Forbid: a new occurrence is skipped while one waits to retry; the retry is never skipped, it waits its turn', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    const b = occurrenceKey('s', now - 1000);
    const retryAt = await failWithRetryLeft(a, now - 2000, { concurrencyPolicy: 'Forbid' });
    expect(await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Forbid' }))).toEqual({
      status: 'skipped',
      reason: `overlap: ${a} waiting to retry (concurrencyPolicy Forbid)`,
    });
    // Another run holds the schedule when the retry comes (here: a manual one claimed while A was out of the set).
    await redis.zrem(keys.active('s'), a);
    const m = occurrenceKey('s', now, 'manual');
    await store.enqueueManual({ schedule: 's', key: m, dueMs: now, origin: 'manual', by: 't', retentionMs: 120_000 });
    expect((await store.claim(req(m, now, now, { origin: 'manual', concurrencyPolicy: 'Forbid', lockMs: 60_000 }))).status).toBe('claimed');
    await sleep(Math.max(0, retryAt - (await redisNow())) + 20);
    expect((await store.claim(req(a, now - 2000, now - 2000, { concurrencyPolicy: 'Forbid' }))).status).toBe('held');
    expect(await record(a)).toMatchObject({ state: 'retrying' });
    await store.finish(m, 1, { state: 'succeeded', retentionMs: 120_000 });
    expect(await store.claim(req(a, now - 2000, now - 2000, { concurrencyPolicy: 'Forbid' }))).toMatchObject({ status: 'claimed', attempt: 2 });
    expect(await store.finish(a, 2, { state: 'failed', error: 'boom again', ...retry, retries: 1 })).toEqual({ status: 'recorded' });
    expect(await record(a)).toMatchObject({ state: 'failed', error: 'boom again', attempt: 2 });
  });

  it('Replace: a newer occurrence ends one waiting to retry failed (replaced) and starts at once', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    const b = occurrenceKey('s', now - 1000);
    await failWithRetryLeft(a, now - 2000, { concurrencyPolicy: 'Replace' });
    const c = await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Replace' }));
    expect(c).toMatchObject({ status: 'claimed', replaced: [{ key: a, dueMs: now - 2000, fireMs: now - 2000 }] });
    expect(await record(a)).toMatchObject({ state: 'failed', reason: 'replaced', error: `replaced by ${b} (concurrencyPolicy Replace)` });
    // Its retry, delivered later, runs nothing.
    expect(await store.claim(req(a, now - 2000, now - 2000, { concurrencyPolicy: 'Replace' }))).toEqual({ status: 'final', state: 'failed' });
  });

  it('Replace: a started occurrence that finds a newer one running ends failed (replaced), not skipped', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    const b = occurrenceKey('s', now - 1000);
    const retryAt = await failWithRetryLeft(a, now - 2000, { concurrencyPolicy: 'Replace' });
    await redis.zrem(keys.active('s'), a); // as if B started while A was out of the set (policy changed by a reload)
    expect((await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Replace', lockMs: 60_000 }))).status).toBe('claimed');
    await sleep(Math.max(0, retryAt - (await redisNow())) + 20);
    expect(await store.claim(req(a, now - 2000, now - 2000, { concurrencyPolicy: 'Replace' }))).toEqual({
      status: 'failed',
      reason: 'replaced',
      error: `replaced by ${b} (concurrencyPolicy Replace)`,
    });
    expect(await record(a)).toMatchObject({ state: 'failed', reason: 'replaced' });
  });

  it('maxConcurrent: one waiting to retry keeps its slot', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    const b = occurrenceKey('s', now - 1000);
    await failWithRetryLeft(a, now - 2000, { maxConcurrent: 1 });
    expect((await store.claim(req(b, now - 1000, now - 1000, { maxConcurrent: 1 }))).status).toBe('held');
    expect(await record(b)).toMatchObject({ state: 'scheduled' });
  });

  it('keeps the place until it is final, however late the retry is taken up; a hand-over keeps it the same way', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    const retryAt = await failWithRetryLeft(a, now - 2000);
    expect(Number(await redis.zscore(keys.active('s'), a))).toBe(retryAt + 1000);
    // Nobody takes the retry up within the lock after its retry time (every replica gone for a while).
    await sleep(Math.max(0, retryAt + 1000 - (await redisNow())) + 20);
    const b = occurrenceKey('s', now - 1000);
    expect(await store.claim(req(b, now - 1000, now - 1000, { concurrencyPolicy: 'Forbid', lockMs: 60_000 }))).toEqual({
      status: 'skipped',
      reason: `overlap: ${a} waiting to retry (concurrencyPolicy Forbid)`,
    });
    expect(await store.claim(req(a, now - 2000, now - 2000, { concurrencyPolicy: 'Forbid', lockMs: 60_000 }))).toMatchObject({ status: 'claimed', attempt: 2 });
    // A hand-over (SIGTERM): A keeps its place past the lock, so a new occurrence is skipped until A is final.
    expect(await store.release(a, 2, 'shutdown', 100)).toBe(true);
    await sleep(150);
    const c = occurrenceKey('s', now);
    expect(await store.claim(req(c, now, now, { concurrencyPolicy: 'Forbid' }))).toEqual({
      status: 'skipped',
      reason: `overlap: ${a} handed over, to be claimed again (concurrencyPolicy Forbid)`,
    });
  });

  it('abandon with a minimum age decides "too late" on the Redis clock: a younger occurrence is left alone', async () => {
    const now = await redisNow();
    const [a, b] = offer('s', [{ dueMs: now - 5000, fireMs: now - 5000 }, { dueMs: now - 3000, fireMs: now - 3000 }], { catchUp: 'all' });
    await store.plan([a!, b!], planOpts);
    // Fired 5 s ago on the Redis clock: younger than 60 s.
    expect(await store.abandon(a!.key, 'missed', 'too late', 120_000, { minAgeMs: 60_000 })).toEqual({ outcome: 'too-early' });
    expect(await record(a!.key)).toMatchObject({ state: 'scheduled' });
    // Fired 3 s ago: older than 2 s.
    expect(await store.abandon(b!.key, 'missed', 'too late', 120_000, { minAgeMs: 2000 })).toEqual({ outcome: 'recorded', state: 'missed' });
    expect(await store.abandon(b!.key, 'missed', 'too late', 120_000)).toEqual({ outcome: 'unchanged' });
  });

  it('an occurrence that started and is abandoned (schedule removed while it waits to retry) ends failed, not skipped', async () => {
    const now = await redisNow();
    const a = occurrenceKey('s', now - 2000);
    await failWithRetryLeft(a, now - 2000);
    expect(await store.abandon(a, 'skipped', 'schedule removed', 120_000)).toEqual({ outcome: 'recorded', state: 'failed' });
    expect(await record(a)).toMatchObject({ state: 'failed', reason: 'schedule removed', error: 'boom' });
    expect(await redis.zscore(keys.active('s'), a)).toBeNull();
    const b = occurrenceKey('s', now - 1000);
    await store.plan(offer('s', [{ dueMs: now - 1000, fireMs: now - 1000 }], { catchUp: 'all' }), planOpts);
    expect(await store.abandon(b, 'skipped', 'schedule removed', 120_000)).toEqual({ outcome: 'recorded', state: 'skipped' });
  });
});

describe('retries and suspension (claim/finish)', () => {
  it('a failure with retries left becomes retrying with backoff; the next claim waits for retryAt', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    await store.claim(req(key, now, now, { lockMs: 10_000 }));
    const f = await store.finish(key, 1, { state: 'failed', error: 'boom', retentionMs: 120_000, retries: 2, retryBackoffMs: 400, retryBackoffMaxMs: 1000 });
    expect(f.status).toBe('retrying');
    if (f.status === 'retrying') {
      expect(f.retryAtMs - now).toBeGreaterThanOrEqual(200);
      expect(f.retryAtMs - now).toBeLessThan(400 + 500);
    }
    expect(await record(key)).toMatchObject({ state: 'retrying', error: 'boom' });
    expect((await store.claim(req(key, now, now))).status).toBe('early');
    await sleep(450);
    expect(await store.claim(req(key, now, now))).toMatchObject({ status: 'claimed', token: 2, attempt: 2 });
    expect((await record(key))!.stalls).toBe(0);
    const g = await store.finish(key, 2, { state: 'failed', retentionMs: 120_000, retries: 2, retryBackoffMs: 400, retryBackoffMaxMs: 1000 });
    expect(g.status).toBe('retrying'); // second failure: delay doubles (800, capped at 1000) × jitter
    if (g.status === 'retrying') expect(g.retryAtMs - (await redisNow())).toBeGreaterThanOrEqual(300);
    await sleep(1050);
    await store.claim(req(key, now, now));
    expect(await store.finish(key, 3, { state: 'failed', retentionMs: 120_000, retries: 2 })).toEqual({ status: 'recorded' });
    expect(await record(key)).toMatchObject({ state: 'failed', attempt: 3 });
  });

  it('a scheduled occurrence of a suspended schedule is recorded skipped; a manual one still runs', async () => {
    const now = await redisNow();
    await redis.hset(keys.suspended, 's', JSON.stringify({ sinceMs: now }));
    const key = occurrenceKey('s', now);
    expect(await store.claim(req(key, now, now))).toEqual({ status: 'skipped', reason: 'suspended' });
    const m = occurrenceKey('s', now, 'manual');
    await store.enqueueManual({ schedule: 's', key: m, dueMs: now, origin: 'manual', by: 't', retentionMs: 120_000 });
    expect((await store.claim(req(m, now, now, { origin: 'manual' }))).status).toBe('claimed');
  });
});

describe('last result per schedule (every final state)', () => {
  const lastResult = async (schedule: string) => parseLastResult((await redis.hget(keys.lastResult, schedule)) ?? '');

  it('keeps the latest final state and the consecutive failures: failed adds, succeeded resets, missed/skipped keep', async () => {
    const now = await redisNow();
    const run = async (dueMs: number, state: 'succeeded' | 'failed') => {
      const key = occurrenceKey('s', dueMs);
      const c = await store.claim(req(key, dueMs, dueMs));
      expect(c.status).toBe('claimed');
      expect(await store.finish(key, 1, { state, reason: state === 'failed' ? 'job failed' : '', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    };
    expect(await lastResult('s')).toBeUndefined();
    await run(now - 5000, 'failed');
    await run(now - 4000, 'failed');
    expect(await lastResult('s')).toMatchObject({ state: 'failed', consecutiveFailures: 2, dueMs: now - 4000, reason: 'job failed' });
    // Missed by the starting deadline (claim script) and skipped at planning (plan script): the failures stay.
    const late = occurrenceKey('s', now - 3000);
    expect((await store.claim(req(late, now - 3000, now - 3000, { startingDeadlineMs: 10 }))).status).toBe('missed');
    expect(await lastResult('s')).toMatchObject({ state: 'missed', consecutiveFailures: 2, reason: 'starting deadline exceeded' });
    const r = await store.plan(offer('s', [{ dueMs: now + 5000, fireMs: now + 5000 }], { suspend: true }), planOpts);
    expect(r.finals).toHaveLength(1);
    expect(await lastResult('s')).toMatchObject({ state: 'skipped', consecutiveFailures: 2, dueMs: now + 5000 });
    await run(now - 2000, 'succeeded');
    const ok = await lastResult('s');
    expect(ok).toMatchObject({ state: 'succeeded', consecutiveFailures: 0, dueMs: now - 2000, reason: '' });
    expect(ok!.endMs).toBeGreaterThanOrEqual(now);
    // A stale completion changes nothing; another schedule has its own entry.
    expect(await store.finish(occurrenceKey('s', now - 2000), 1, { state: 'failed', retentionMs: 120_000 })).toEqual({ status: 'refused' });
    expect(await lastResult('s')).toMatchObject({ state: 'succeeded', consecutiveFailures: 0 });
    expect(await lastResult('other')).toBeUndefined();
  });

  it('a retry is not a final state; a failure recorded by the sweep or abandon counts', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now);
    await store.claim(req(key, now, now, { lockMs: 10_000 }));
    expect((await store.finish(key, 1, { state: 'failed', retentionMs: 120_000, retries: 1, retryBackoffMs: 10_000 })).status).toBe('retrying');
    expect(await lastResult('s')).toBeUndefined();
    // Abandoned while waiting to retry (schedule removed): a started occurrence ends failed.
    expect(await store.abandon(key, 'skipped', 'schedule removed', 120_000)).toEqual({ outcome: 'recorded', state: 'failed' });
    expect(await lastResult('s')).toMatchObject({ state: 'failed', consecutiveFailures: 1, reason: 'schedule removed' });
  });
});

describe('backfill backlog', () => {
  const RETENTION = 120_000;
  const HOUR = 3_600_000;
  /** `n` hourly due times of `schedule` ending an hour before now, oldest first. */
  const hours = (schedule: string, now: number, n: number) => {
    const base = Math.floor(now / HOUR) * HOUR - n * HOUR;
    return Array.from({ length: n }, (_, i) => ({ key: occurrenceKey(schedule, base + i * HOUR), dueMs: base + i * HOUR }));
  };
  const enqueue = (schedule: string, items: { key: string; dueMs: number }[], policy: 'Allow' | 'Forbid' = 'Forbid') =>
    store.enqueueBackfill({ schedule, items, policy, by: 'test', retentionMs: RETENTION });
  const admit = (cap: number) => store.admitBackfill({ cap, retentionMs: RETENTION });
  const claimReq = (schedule: string, it: { key: string; dueMs: number }, fireMs: number, over: Partial<ClaimRequest> = {}) =>
    req(it.key, it.dueMs, fireMs, { schedule, origin: 'backfill', lockMs: 60_000, retentionMs: RETENTION, concurrencyPolicy: 'Forbid', ...over });
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

// Calendars and blackouts through the plan script: what the windows fix (a skipped due time) is recorded as given,
// whatever the Redis clock says; what they delay keeps its reason when recorded, and its starting deadline counts
// from the original fire time, decided on TIME (runner/engine/windows.ts, planner.ts offerOf, lua/plan.lua).
const MIN = 60_000;
const JOB = 'job: {kind: http, url: "http://127.0.0.1:1/"}';
/** An hour of horizon: the offers below reach minutes into the past. */
const windowPlanOpts = { horizonMs: 3_600_000, retentionMs: 7_200_000, catchUpGraceMs: 1000, replica: 'a' };
/** A cron (UTC) that fires once a year, at the minute of `ms`. */
const cronAt = (ms: number): string => {
  const d = new Date(ms);
  return `${d.getUTCMinutes()} ${d.getUTCHours()} ${d.getUTCDate()} ${d.getUTCMonth() + 1} *`;
};
const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

async function windowedSchedule(extra: string, head = '', cron = '* * * * *') {
  const res = await parseScheduleText(`${head}schedules:\n  - name: s\n    cron: "${cron}"\n    timeZone: UTC\n${extra}    ${JOB}\n`, 'w.yaml');
  expect(res.errors.map((e) => e.format())).toEqual([]);
  return res.schedules[0]!;
}
/** Offers `dues` (fire time = due time: no jitter) of `s` to the plan script; @returns their records, in order. */
async function planWindowed(s: Awaited<ReturnType<typeof windowedSchedule>>, dues: number[]) {
  const items = offerOf(s, dues.map((d) => ({ dueMs: d, fireMs: d })));
  const out = await store.plan(items, windowPlanOpts);
  const recs = await Promise.all(items.map(async (it) => toRunRecord(await redis.hgetall(keys.occurrence(it.key)))));
  return { out, recs };
}

describe('calendars and blackouts in the plan script (Redis TIME)', () => {
  it('a calendar-skipped occurrence is recorded skipped with its calendar, even overdue, past its deadline or suspended', async () => {
    const now = await redisNow();
    const m = Math.floor(now / MIN) * MIN;
    const cal = `calendars:\n  - {name: freeze, ranges: [{from: "${day(now - 2 * 86_400_000)}", to: "${day(now + 2 * 86_400_000)}"}]}\n`;
    const dues = Array.from({ length: 10 }, (_, i) => m - (10 - i) * MIN);
    for (const extra of ['', '    startingDeadline: 1s\n', '    suspend: true\n']) {
      await redis.flushall();
      const s = await windowedSchedule(`    calendar: {exclude: freeze}\n${extra}`, cal);
      const { out, recs } = await planWindowed(s, dues);
      expect(out.toEnqueue).toEqual([]);
      expect(recs.map((r) => `${r!.state} ${r!.reason}`)).toEqual(dues.map(() => 'skipped calendar freeze'));
    }
  });

  it('skipped due times take no catch-up place: of overdue ones, the latest the blackout lets run is the one that runs late', async () => {
    const now = await redisNow();
    const m = Math.floor(now / MIN) * MIN;
    // Every other minute is in a skip window; all ten are overdue (catch-up grace 1 s).
    const s = await windowedSchedule('    catchUp: latest\n    blackouts: [{name: odd, cron: "*/2 * * * *", duration: 1m, action: skip}]\n');
    const dues = Array.from({ length: 10 }, (_, i) => m - (10 - i) * MIN);
    const { recs } = await planWindowed(s, dues);
    const skipped = recs.flatMap((r, i) => (r!.state === 'skipped' ? [i] : []));
    expect(skipped).toHaveLength(5);
    for (const i of skipped) expect(recs[i]!.reason).toBe('blackout odd');
    const late = recs.flatMap((r, i) => (r!.state === 'scheduled' ? [i] : []));
    expect(late).toEqual([Math.max(...recs.flatMap((r, i) => (r!.state === 'skipped' ? [] : [i])))]);
    expect(recs[late[0]!]!.reason).toBe('catch-up: run late (catchUp latest)');
    for (const [i, r] of recs.entries()) if (r!.state !== 'skipped' && i !== late[0]) expect(r).toMatchObject({ state: 'missed', reason: 'catch-up: superseded by a later overdue occurrence' });
  });

  it('a delayed run keeps its reason and fires at the window end; late, it keeps it after the catch-up reason', async () => {
    const now = await redisNow();
    const m = Math.floor(now / MIN) * MIN;
    // A window from m-2m to m+3m (ahead of TIME): the occurrence due at m-1m is delayed to m+3m and runs then.
    // (Schedules that fire once, at the minute offered: no later due time in the window takes its place.)
    const ahead = await windowedSchedule(`    startingDeadline: 10m\n    blackouts: [{name: maint, cron: "${cronAt(m - 2 * MIN)}", duration: 5m, action: delay}]\n`, '', cronAt(m - MIN));
    const why = `delayed: blackout maint until ${new Date(m + 3 * MIN).toISOString()}`;
    const a = await planWindowed(ahead, [m - MIN]);
    expect(a.out.toEnqueue).toEqual([{ key: expect.any(String), reason: why }]);
    expect(a.recs[0]).toMatchObject({ state: 'scheduled', reason: why, fireMs: m + 3 * MIN });
    // A window that ended 4 minutes ago: the delayed run is overdue on TIME and runs late, both reasons kept.
    await redis.flushall();
    const past = await windowedSchedule(`    blackouts: [{name: maint, cron: "${cronAt(m - 8 * MIN)}", duration: 4m, action: delay}]\n`, '', cronAt(m - 7 * MIN));
    const p = await planWindowed(past, [m - 7 * MIN]);
    const whyPast = `delayed: blackout maint until ${new Date(m - 4 * MIN).toISOString()}`;
    expect(p.recs[0]).toMatchObject({ state: 'scheduled', reason: `catch-up: run late (catchUp latest); ${whyPast}`, fireMs: m - 4 * MIN });
  });

  it('the starting deadline of a delayed run counts from its original fire time, on TIME', async () => {
    const now = await redisNow();
    const m = Math.floor(now / MIN) * MIN;
    // Due (and first meant to fire) at m-7m, delayed 3 minutes to m-4m, starting deadline 5m: counted from the
    // original fire time it passed at m-2m (missed); counted from the delayed one it would pass only at m+1m.
    const s = await windowedSchedule(`    startingDeadline: 5m\n    blackouts: [{name: maint, cron: "${cronAt(m - 8 * MIN)}", duration: 4m, action: delay}]\n`, '', cronAt(m - 7 * MIN));
    const { out, recs } = await planWindowed(s, [m - 7 * MIN]);
    const why = `delayed: blackout maint until ${new Date(m - 4 * MIN).toISOString()}`;
    expect(out.toEnqueue).toEqual([]);
    expect(recs[0]).toMatchObject({ state: 'missed', reason: `starting deadline exceeded (${why})` });
    // The same delay and deadline an hour ahead of TIME: nothing passed yet, it is recorded to run.
    await redis.flushall();
    const later = await windowedSchedule(`    startingDeadline: 5m\n    blackouts: [{name: maint, cron: "${cronAt(m + 60 * MIN)}", duration: 4m, action: delay}]\n`, '', cronAt(m + 61 * MIN));
    const l = await planWindowed(later, [m + 61 * MIN]);
    expect(l.recs[0]).toMatchObject({ state: 'scheduled', reason: `delayed: blackout maint until ${new Date(m + 64 * MIN).toISOString()}`, fireMs: m + 64 * MIN });
  });
});

describe('waiting for Redis replicas (ReplicaWait)', () => {
  it('claim and finish report how many Redis replicas acknowledged within the timeout (none here), on their own connection', async () => {
    const durable = new Redis(priv.server.url);
    try {
      const waiting = new Store(redis, keys, { redis: durable, replicas: 1, timeoutMs: 150, target: priv.server.url });
      const now = await redisNow();
      const [item] = offer('s', [{ dueMs: now - 50, fireMs: now - 50 }]);
      await store.plan([item!], planOpts);
      const t0 = performance.now();
      const c = await waiting.claim(req(item!.key, item!.dueMs, item!.fireMs));
      // This server has no replica: WAIT gave up after its timeout with 0 acknowledgements (the claim is made).
      expect(c).toMatchObject({ status: 'claimed', acked: 0 });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
      const f = await waiting.finish(item!.key, (c as { token: number }).token, { state: 'succeeded', retentionMs: 120_000 });
      expect(f).toEqual({ status: 'recorded', acked: 0 });
      // The WAITs went on the durable connection, the scripts too; without ReplicaWait nothing says acked.
      const names = (await redis.client('LIST')) as string;
      expect(names).toContain('cmd=wait');
      const plain = await store.finish(item!.key, 1, { state: 'succeeded', retentionMs: 120_000 });
      expect(plain).toEqual({ status: 'refused' });
    } finally {
      durable.disconnect();
    }
  });
});

describe('membership heartbeat and capabilities (engine/handoffs.ts)', () => {
  it("writes the caller's capabilities with every heartbeat, so a member whose registration lapsed (and lost them to another's heartbeat) has them again at its next one", async () => {
    await redis.del(keys.replicas, keys.replicaDigests, keys.replicaCapabilities);
    await store.heartbeat('rare', 'd', 100, 'handler:common handler:rare');
    await store.heartbeat('common', 'd', 10_000, 'handler:common');
    expect(await redis.hgetall(keys.replicaCapabilities)).toEqual({ rare: 'handler:common handler:rare', common: 'handler:common' });
    // 'rare' starved past its TTL: the next heartbeat of another member drops it, and its capabilities with it.
    await sleep(150);
    expect((await store.heartbeat('common', 'd', 10_000, 'handler:common')).members.map((m) => m.replica)).toEqual(['common']);
    expect(await redis.hgetall(keys.replicaCapabilities)).toEqual({ common: 'handler:common' });
    // Back: its next heartbeat publishes them again, with the same value as before (published only on change,
    // they stayed gone and no replica handed it a delivery again).
    await store.heartbeat('rare', 'd', 10_000, 'handler:common handler:rare');
    expect(await redis.hgetall(keys.replicaCapabilities)).toEqual({ rare: 'handler:common handler:rare', common: 'handler:common' });
    // '' removes the caller's entry (no handler registered any more); none given leaves it as it is.
    await store.heartbeat('common', 'd', 10_000, '');
    await store.heartbeat('rare', 'd', 10_000);
    expect(await redis.hgetall(keys.replicaCapabilities)).toEqual({ rare: 'handler:common handler:rare' });
  });
});
