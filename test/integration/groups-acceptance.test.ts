/**
 * Acceptance tests of issue 17 for concurrency groups and rate limits, at the scale the issue states, on a flock
 * of three replica processes, a real redis-server and an HTTP receiver that counts calls in flight.
 *
 * 1. 1,000 schedules on `0 * * * * *` (every minute at :00, jitter 0) in `cluster-prod: {maxConcurrent: 2}`, jobs
 *    of 200 ms, one replica SIGKILLed while it has a run in flight. What a user expects, and what is checked:
 *    - Never more than 2 calls in flight at the receiver at once (arrival to answer or abort).
 *    - 2 slots × 200 ms is at most 10 runs a second, so 1,000 occurrences due at once cannot all start: the
 *      schedules carry `startingDeadline: 20s`, and an occurrence that got no slot within it is recorded
 *      `missed` with the group in its reason (`starting deadline exceeded: waited for group cluster-prod 20.0 s`).
 *      That is its one recorded state; nothing is left open and nothing is dropped silently.
 *    - One minute boundary is covered (the first that leaves the replicas time to plan it): each of its 1,000
 *      occurrence keys has a run record, final, either `succeeded` or `missed` as above. The receiver saw at
 *      least one answered delivery of each `succeeded` key, and more than one delivery only for a key whose
 *      record counts a stall (a run whose claimant died, or was too slow to renew its lease, before it
 *      recorded the end runs again: at least once, never twice unrecorded); none of a `missed` one. The run the
 *      victim had in flight ends `succeeded` with a stall recorded (a started run has no deadline left to miss).
 *    - The SIGKILL hits a replica other than r1 about 2 s after the boundary, while one of its runs is in flight
 *      at the receiver; the group keeps running on the others (its slot frees when the lease, `--lock 2s`,
 *      lapses), and the deliveries it held are moved on by the stall check and end as above.
 *    - Each replica runs with `--concurrency 1000` (live occurrences held at once) so that every occurrence is
 *      delivered, and asks the group, before its deadline; with the default 200, 400 of the 1,000 would sit in
 *      the queue behind the waiters and, past their deadline, be recorded missed without a gate named.
 *    The Redis cost of the minute is logged (claim calls per occurrence, counted by the SMEMBERS of the group's
 *    holders that each gated claim makes; Redis CPU seconds): a figure for the report, not an assertion.
 * 2. `api: {rateLimit: {max: 10, per: 1s}}` shared by 12 schedules on `* * * * * *` (12 starts/s wanted, 10/s
 *    allowed) for 60 s, `startingDeadline: 5s`: in any 1 s window the run records' start times (Redis clock)
 *    hold at most 10 starts (the sliding window's burst is `max`); every occurrence of the 60 s is `succeeded`
 *    or `missed` past its deadline with the rate limit in its reason; and the limit is used (≥ 7/s on average,
 *    generous for a loaded host).
 * Runtime: 2.5–3 min for the file on a loaded 2-core host (the first test waits up to a minute for its boundary;
 * the second runs its 60 s). Both run at the issue's scale; nothing is scaled down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';
import { maxInFlight } from '../support/receiver.js';
import { startGroupFlock, startsOverLimit } from '../support/gates.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { FINAL_STATES } from '../../runner/records/runs.js';

const isoKey = (schedule: string, dueMs: number): string => `${schedule}@${new Date(dueMs).toISOString()}`;

/** `field:value` pairs of one INFO section as numbers where they parse. */
async function info(flock: Flock, section: string): Promise<Map<string, string>> {
  const text = await flock.redisClient.info(section);
  return new Map(text.split('\r\n').filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]));
}
const calls = (stats: Map<string, string>, cmd: string): number => Number(/calls=(\d+)/.exec(stats.get(`cmdstat_${cmd}`) ?? '')?.[1] ?? 0);
const cpuS = (cpu: Map<string, string>): number => Number(cpu.get('used_cpu_sys')) + Number(cpu.get('used_cpu_user'));

describe('1,000 schedules in a group of 2 across three replicas, one SIGKILLed', () => {
  let flock: Flock;
  const N = 1000;
  const names = Array.from({ length: N }, (_, i) => `s${String(i).padStart(4, '0')}`);
  const DEADLINE_MS = 20_000;

  beforeAll(async () => {
    flock = await startGroupFlock(
      {
        groups: { 'cluster-prod': '{maxConcurrent: 2}' },
        group: 'cluster-prod',
        names,
        cron: '0 * * * * *',
        timeout: '20s',
        startingDeadline: '20s',
      },
      ['--lock', '2s', '--concurrency', '1000'],
    );
    flock.receiver.holdFor = () => 200;
  });
  afterAll(() => flock?.close());

  it('never runs more than 2 at once and ends every occurrence of the minute in exactly one recorded state', async () => {
    // The first minute boundary at least 8 s away: time to plan 1,000 occurrences (lookahead 3 s) on a busy host.
    const t0 = Math.ceil((Date.now() + 8000) / 60_000) * 60_000;
    const keys = names.map((n) => isoKey(n, t0));
    await sleep(t0 - 1000 - Date.now());
    await flock.redisClient.config('RESETSTAT');
    const cpu0 = cpuS(await info(flock, 'cpu'));
    await sleep(t0 + 2000 - Date.now());

    // Kill a replica other than r1 while one of its runs is in flight at the receiver.
    const open = () => flock.receiver.deliveries.filter((d) => d.answeredMs === undefined && d.abortedMs === undefined);
    await flock.receiver.waitFor(() => open().some((d) => d.body.replica !== 'r1'), 15_000, 'a run in flight on r2 or r3');
    const held = open().filter((d) => d.body.replica !== 'r1').at(-1)!; // the latest: furthest from its answer
    const victim = flock.replicas.find((r) => r.name === held.body.replica)!;
    victim.signal('SIGKILL');
    const killedMs = Date.now();

    // Until every occurrence of the minute is final (the deadline, then the lapsed lease and the stall check).
    const ks = new Keyspace();
    const finals = new Set<string>(FINAL_STATES);
    let polls = 0;
    await until(
      async () => {
        polls++;
        const pipe = flock.redisClient.pipeline();
        for (const k of keys) pipe.hget(ks.occurrence(k), 'state');
        const res = (await pipe.exec()) ?? [];
        return res.every(([err, s]) => !err && finals.has(s as string));
      },
      t0 + 55_000 - Date.now(),
      'every occurrence of the minute final',
    );
    const doneMs = Date.now();
    const stats = await info(flock, 'commandstats');
    const cpu1 = cpuS(await info(flock, 'cpu'));
    // Each gated claim reads the group's holders once (gates.lua gateFree): its SMEMBERS count is the claims'.
    const claims = calls(stats, 'smembers');
    console.log(
      `redis cost of the minute (${((doneMs - t0) / 1000).toFixed(1)} s, ${polls} polls): ${claims} gated claims = ` +
        `${(claims / N).toFixed(1)} per occurrence; evalsha ${calls(stats, 'evalsha')}; ` +
        `redis cpu ${(cpu1 - cpu0).toFixed(1)} s = ${(((cpu1 - cpu0) * 100_000) / (doneMs - t0 + 1000)).toFixed(0)}% of a core`,
    );

    const deliveries = flock.receiver.deliveries.filter((d) => keys.includes(d.body.occurrence));
    expect(maxInFlight(deliveries, Date.now())).toBeLessThanOrEqual(2);
    // The group kept running on the live replicas after the kill.
    expect(deliveries.filter((d) => d.receivedMs > killedMs + 100 && d.body.replica !== victim.name).length).toBeGreaterThan(10);

    const runs = new Map((await flock.runs()).map((r) => [r.key, r]));
    const answered = new Map<string, number>();
    const delivered = new Map<string, number>();
    for (const d of deliveries) {
      delivered.set(d.body.occurrence, (delivered.get(d.body.occurrence) ?? 0) + 1);
      if (d.answeredMs !== undefined) answered.set(d.body.occurrence, (answered.get(d.body.occurrence) ?? 0) + 1);
    }
    const problems: string[] = [];
    const tally = { succeeded: 0, missed: 0 };
    for (const key of keys) {
      const rec = runs.get(key);
      const c = delivered.get(key) ?? 0;
      const a = answered.get(key) ?? 0;
      if (rec?.state === 'succeeded') {
        tally.succeeded++;
        // A run answered at the receiver whose claimant died (or stalled) before recording it runs again: at least
        // once, never more than once without a stall in the record.
        if (a < 1 || (c > 1 && rec.stalls === 0)) problems.push(`${key}: succeeded, ${c} deliveries (${a} answered), ${rec.stalls} stalls`);
        if (c > 1) {
          const ds = deliveries.filter((d) => d.body.occurrence === key);
          console.log(`${key}: ${rec.stalls} stalls, delivered ${ds.map((d) => `${d.body.replica} +${d.receivedMs - t0} ms ${d.answeredMs !== undefined ? 'answered' : 'aborted'}`).join(', ')}; kill at +${killedMs - t0} ms`);
        }
      } else if (rec?.state === 'missed') {
        tally.missed++;
        if (!/^starting deadline exceeded: waited for group cluster-prod \d+\.\d s$/.test(rec.reason ?? '')) problems.push(`${key}: missed, ${rec.reason}`);
        if (rec.endMs === undefined || rec.endMs < rec.fireMs + DEADLINE_MS) problems.push(`${key}: missed at ${rec.endMs}, before its deadline`);
        if (c > 0) problems.push(`${key}: missed, yet delivered ${c} times`);
      } else problems.push(`${key}: ${rec?.state ?? 'no record'} ${rec?.reason ?? ''}`);
    }
    console.log(`minute ${new Date(t0).toISOString()}: ${tally.succeeded} succeeded, ${tally.missed} missed; victim ${victim.name}`);
    expect(problems.slice(0, 20)).toEqual([]);
    // The run the victim had in flight ran again elsewhere once its lease lapsed.
    const victimRun = runs.get(held.body.occurrence);
    expect(victimRun?.state).toBe('succeeded');
    expect(victimRun?.stalls).toBeGreaterThanOrEqual(1);
    // The group kept its slots busy: 10/s is the ideal over the 20 s deadline; each hand-over of a slot waits for
    // the next waiter's re-ask (up to 200 ms), and the host is loaded: 67 of the ideal 200 were seen under load.
    expect(tally.succeeded).toBeGreaterThanOrEqual(30);
  });
});

describe('a rate limit of 10/s across three replicas for 60 s', () => {
  let flock: Flock;
  const names = Array.from({ length: 12 }, (_, i) => `api${i}`);
  const DEADLINE_MS = 5000;

  beforeAll(async () => {
    flock = await startGroupFlock({
      groups: { api: '{rateLimit: {max: 10, per: 1s}}' },
      group: 'api',
      names,
      cron: '* * * * * *',
      timeout: '5s',
      startingDeadline: '5s',
    });
  });
  afterAll(() => flock?.close());

  it('starts at most 10 in any 1 s window, uses the limit, and records every other occurrence missed past its deadline', async () => {
    const t0 = Math.ceil(Date.now() / 1000) * 1000 + 3000;
    const t1 = t0 + 60_000; // occurrences due in [t0, t1)
    await sleep(t1 + DEADLINE_MS + 2000 - Date.now());
    const finals = new Set<string>(FINAL_STATES);
    const inRange = async () => (await flock.runs()).filter((r) => names.includes(r.schedule) && r.dueMs >= t0 && r.dueMs < t1);
    await until(async () => (await inRange()).every((r) => finals.has(r.state)), 15_000, 'every occurrence of the 60 s final');
    const runs = await inRange();
    expect(runs).toHaveLength(names.length * 60);

    const wrong = runs.filter(
      (r) =>
        !(r.state === 'succeeded' ||
          (r.state === 'missed' &&
            /^starting deadline exceeded: waited for rate limit of group api \d+\.\d s$/.test(r.reason ?? '') &&
            (r.endMs ?? 0) >= r.fireMs + DEADLINE_MS)),
    );
    expect(wrong.slice(0, 20).map((r) => `${r.key} ${r.state} ${r.reason ?? ''} end-fire ${(r.endMs ?? 0) - r.fireMs} ms`)).toEqual([]);

    const starts = runs.filter((r) => r.firstStartMs !== undefined).map((r) => r.firstStartMs!);
    expect(startsOverLimit(starts, 10, 1000).slice(0, 10)).toEqual([]);
    const missed = runs.filter((r) => r.state === 'missed').length;
    console.log(`rate limit: ${starts.length} started, ${missed} missed of ${runs.length}; starts from ${Math.min(...starts) - t0} ms to ${Math.max(...starts) - t0} ms after t0`);
    // 10/s over 60 s is 600 starts; the limit is used, not only respected.
    expect(starts.length).toBeGreaterThanOrEqual(420);
  });
});
