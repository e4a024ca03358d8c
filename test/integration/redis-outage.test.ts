/**
 * Acceptance: a Redis restart (AOF on) during a run. Promised (README, "Redis outages"):
 * - occurrences due after Redis is back run exactly once;
 * - occurrences due during the outage each end in exactly one final state: those already planned run late
 *   (or are missed if their starting deadline passed), those not yet planned follow the catch-up policy
 *   (default `latest`: the newest runs, the others are recorded missed); none runs twice;
 * - a run in flight keeps its claim through an outage shorter than about 2/3 of the lock (it renews every
 *   lock/3 and retries quickly); a longer outage aborts it and it is re-claimed with a new fencing token.
 */
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { Flock, sleep, until } from '../support/flock.js';
import { cronAt, readEvents } from '../support/events.js';

const SLOW = new URL('../fixtures/jobs/slow.mjs', import.meta.url).pathname;

describe('Redis restart', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('loses and duplicates nothing across a restart; outage occurrences end in one final state each', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const longDue = Math.ceil(Date.now() / 1000) * 1000 + 6000;
    const file = flock.writeSchedules(`schedules:
  - name: tick
    cron: "* * * * * *"
    job: { kind: http, url: ${flock.receiver.url}/tick, timeout: 5s }
  - name: long
    cron: "${cronAt(longDue)}"
    job: { kind: module, path: ${SLOW}, params: { ms: 9000, events: ${events} } }
`);
    for (const n of ['r1', 'r2']) await flock.startReplica({ name: n, schedules: file, args: ['--lock', '6s'] });
    await until(() => readEvents(events).some((e) => e.event === 'start'), 20_000, 'long run start');
    // The outage starts 1.5 s after a renewal of the long run's claim (its record's leaseUntil moves), so that it
    // ends (~4.3 s after that renewal, under the 6 s lease) past the point where the job's process would fire its
    // signal if it did not hear from its replica (lease end − margin − grace = 4.3 s, module-sandbox.ts): the
    // replica answers throughout, so the process must leave the lease to it.
    const rec = new Keyspace().occurrence(`long@${new Date(longDue).toISOString()}`);
    flock.redisClient.on('error', () => undefined); // it reconnects after the restart; refused connects meanwhile are expected
    const lease0 = await flock.redisClient.hget(rec, 'leaseUntil');
    await until(async () => (await flock.redisClient.hget(rec, 'leaseUntil')) !== lease0, 10_000, 'a renewal');
    const renewedAt = Date.now();
    await sleep(1500);
    const downAt = Date.now();
    const lease1 = await flock.redisClient.hget(rec, 'leaseUntil');
    await flock.redis.stop('SIGTERM'); // graceful: the AOF is flushed
    await sleep(2500);
    await flock.redis.restart();
    const backAt = Date.now();
    await until(async () => (await flock.redisClient.hget(rec, 'leaseUntil')) !== lease1, 6_000, 'the renewal after the outage');
    console.log(`outage ${downAt - renewedAt}..${backAt - renewedAt} ms after a renewal; renewed again at ${Date.now() - renewedAt} ms (lease 6000 ms)`);
    await sleep(10_000 - (Date.now() - backAt));

    // Nothing ran twice.
    const dup = [...flock.receiver.countByOccurrence()].filter(([, n]) => n > 1);
    expect(dup).toEqual([]);

    const runs = await flock.runs('tick');
    const byDue = new Map(runs.map((r) => [r.dueMs, r]));
    const delivered = new Set(flock.receiver.of('tick').map((d) => Date.parse(d.body.dueAt)));
    // Due after Redis is back (plus a second to reconnect): run exactly once, recorded succeeded.
    for (let d = Math.ceil((backAt + 1500) / 1000) * 1000; d <= backAt + 8000; d += 1000) {
      expect(delivered.has(d), `due ${new Date(d).toISOString()} delivered`).toBe(true);
      expect(byDue.get(d)?.state).toBe('succeeded');
    }
    // Due during the outage: one final state each, agreeing with the receiver.
    let missed = 0;
    for (let d = Math.ceil(downAt / 1000) * 1000; d < backAt; d += 1000) {
      const r = byDue.get(d);
      expect(r, `record for ${new Date(d).toISOString()}`).toBeDefined();
      expect(['succeeded', 'missed']).toContain(r!.state);
      expect(delivered.has(d)).toBe(r!.state === 'succeeded');
      if (r!.state === 'missed') missed++;
    }
    expect(missed).toBeGreaterThanOrEqual(0);

    // The long run went on: one start, one success, token 1.
    await until(async () => (await flock.runs('long'))[0]?.state === 'succeeded', 15_000, 'long success');
    const [long] = await flock.runs('long');
    expect(long).toMatchObject({ fencingToken: 1, attempt: 1 });
    expect(readEvents(events).filter((e) => e.event === 'start')).toHaveLength(1);
  });

  // A user's break-it run: a 3 s job whose Redis stopped mid-run for 20 s ended inside its lease, its finish could
  // not be sent, and the delivery came back after the restart and ran the job a second time (attempt 2, "stalled").
  it('records a run that ended while Redis was down once Redis is back, with the run\'s duration, and does not run it again', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 5000;
    const file = flock.writeSchedules(`schedules:
  - name: ends-in-outage
    cron: "${cronAt(dueMs)}"
    job: { kind: module, path: ${SLOW}, params: { ms: 1500, events: ${events} } }
`);
    // The job (1.5 s) ends well inside its lease (4 s), with Redis already down.
    for (const n of ['r1', 'r2']) await flock.startReplica({ name: n, schedules: file, args: ['--lock', '4s'] });
    flock.redisClient.on('error', () => undefined);
    await until(() => readEvents(events).some((e) => e.event === 'start'), 20_000, 'the run started');
    await flock.redis.stop('SIGTERM'); // graceful: the AOF keeps the claim
    await until(() => readEvents(events).some((e) => e.event === 'end'), 10_000, 'the job ended during the outage');
    await sleep(5000); // the lease (4 s from the claim) is long over on any clock
    await flock.redis.restart();
    await until(async () => (await flock.runs('ends-in-outage'))[0]?.state === 'succeeded', 20_000, 'the outcome recorded');
    await sleep(5000); // a second run, if any, would start within the lock + stall check
    const starts = readEvents(events).filter((e) => e.event === 'start');
    expect(starts, 'one run of the job').toHaveLength(1);
    const [rec] = await flock.runs('ends-in-outage');
    expect(rec).toMatchObject({ state: 'succeeded', attempt: 1, fencingToken: 1, replica: starts[0]!.replica, result: '{"slept":1500}' });
    // Its end is when the run ended (the replica's Redis-clock time, sent with the finish), not when Redis took
    // the finish: the recorded duration is the job's 1.5 s, not the outage's 5 s + restart.
    const durationMs = rec!.endMs! - rec!.startMs!;
    expect(durationMs, 'recorded duration (ms)').toBeGreaterThanOrEqual(1400);
    expect(durationMs, 'recorded duration (ms)').toBeLessThan(4000);
  });
});

describe('Redis outage in the log', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('says in words which Redis is unreachable since when, never the client internals, in every failure line', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:\n  - { name: tick, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/tick, timeout: 5s } }\n`);
    const r = await flock.startReplica({ name: 'r1', schedules: file, args: ['--tick', '200ms'] });
    const downAt = Date.now();
    await flock.redis.stop('SIGTERM');
    const url = flock.redis.url;
    const line = (cause: string): RegExp => new RegExp(`^planning failed: Redis ${url.replace(/[.]/g, '\\.')} unreachable since (\\S+) \\(${cause}\\); retrying$`);
    // The first failures may come between the close and the reconnect attempt's answer (more often on a busy
    // host): they say the connection closed; from the first refused reconnect on, they say why.
    const first = await r.waitForLog((l) => /^planning failed/.test(l.msg ?? ''), 20_000, 'planning failed');
    expect(first.msg).toMatch(line('nothing accepts connections there \\(connection refused\\)|the connection to Redis closed; reconnecting'));
    const planning = await r.waitForLog((l) => /^planning failed/.test(l.msg ?? '') && /refused/.test(l.msg ?? ''), 20_000, 'planning failed, refused');
    expect(planning.msg).toMatch(line('nothing accepts connections there \\(connection refused\\)'));
    const since = Date.parse(String(planning.unreachableSince));
    expect(since).toBeGreaterThanOrEqual(downAt - 1000);
    expect(planning).toMatchObject({ redis: url, hint: expect.stringMatching(/is Redis running/) });
    await sleep(2000); // more ticks, renewals, clock syncs fail meanwhile
    const failures = r.lines.filter((l) => Number(l.level) >= 40 && l.time !== undefined && Date.parse(String(l.time)) >= downAt);
    expect(failures.length).toBeGreaterThan(1);
    for (const l of failures) expect(JSON.stringify(l)).not.toMatch(/enableOfflineQueue|Stream isn't writeable|maxRetriesPerRequest|max retries per request|Connection is closed/);
    await flock.redis.restart();
  });
});

describe('writes Redis acknowledged and then lost', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('re-plans an occurrence whose record, pending entry and job vanished (failover, fsync loss)', async () => {
    flock = await Flock.start();
    const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 6000;
    const file = flock.writeSchedules(`schedules:
  - name: once
    cron: "${cronAt(dueMs)}"
    job: { kind: http, url: ${flock.receiver.url}/once }
`);
    await flock.startReplica({ name: 'r1', schedules: file });
    const keys = new Keyspace();
    const key = `once@${new Date(dueMs).toISOString()}`;
    await until(async () => (await flock.redisClient.exists(keys.occurrence(key))) === 1, 10_000, 'planned');
    // What a failover to a replica that had not received these writes looks like: the record, its pending
    // entry, its job, and the plan mark written by the same plan call (Redis loses a suffix of writes) are gone.
    await flock.redisClient.del(keys.planMarks);
    const queue = new Queue(keys.queueName, { connection: flock.redisClient, prefix: keys.ns });
    await queue.remove(keys.jobId(key));
    await queue.close();
    await flock.redisClient.del(keys.occurrence(key));
    await flock.redisClient.zrem(keys.pending, key);
    await until(() => flock.receiver.of('once').length === 1, 20_000, 'the occurrence runs anyway');
    // The record is finished just after the receiver answers.
    await until(async () => (await flock.runs('once'))[0]?.state === 'succeeded', 5_000, 'its record');
    const [rec] = await flock.runs('once');
    expect(rec).toMatchObject({ key, state: 'succeeded' });
    await sleep(2000);
    expect(flock.receiver.of('once')).toHaveLength(1);
  });
});
