/**
 * Concurrency groups and rate limits across a flock of three replica processes (issue 17, points 3 and 4):
 * a group's runs at once, counted by the receiver, never exceed maxConcurrent, also when a replica is SIGKILLed
 * mid-run (its slot frees with its lease and every occurrence still runs); a rate limit's starts (Redis clock,
 * from the run records) never exceed max in any window, and no occurrence is dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flock, sleep } from '../support/flock.js';
import { maxInFlight } from '../support/receiver.js';
import { sumMetric } from '../support/metrics.js';
import { startGroupFlock, startsOverLimit } from '../support/gates.js';

describe('a concurrency group across three replicas', () => {
  let flock: Flock;
  const names = Array.from({ length: 8 }, (_, i) => `g${i}`);

  beforeAll(async () => {
    flock = await startGroupFlock(
      {
        groups: { 'cluster-prod': '{maxConcurrent: 2}' },
        group: 'cluster-prod',
        names,
        cron: '*/2 * * * * *',
        timeout: '20s',
      },
      ['--lock', '2s'],
    );
    flock.receiver.holdFor = () => 300;
  });
  afterAll(() => flock?.close());

  it('never runs more than maxConcurrent at once, runs every occurrence once, and survives a SIGKILLed holder', async () => {
    const t0 = Math.ceil(Date.now() / 2000) * 2000 + 2000;
    await sleep(t0 + 10_000 - Date.now());
    // Kill a replica while it holds a slot (its request is in flight at the receiver).
    const inFlight = () => flock.receiver.deliveries.filter((d) => d.answeredMs === undefined && d.abortedMs === undefined);
    await flock.receiver.waitFor(() => inFlight().some((d) => d.body.replica !== 'r1'), 10_000, 'a run in flight on r2 or r3');
    const victimName = inFlight().find((d) => d.body.replica !== 'r1')!.body.replica;
    const victim = flock.replicas.find((r) => r.name === victimName)!;
    victim.signal('SIGKILL');
    const killedMs = Date.now();
    const t1 = t0 + 20_000;
    // The interval, then time for the backlog (8 × 300 ms per 2 s on 2 slots) and the lapsed lease to clear.
    await sleep(t1 + 12_000 - Date.now());

    const deliveries = flock.receiver.deliveries.filter((d) => names.includes(d.body.schedule));
    expect(maxInFlight(deliveries, Date.now())).toBeLessThanOrEqual(2);
    // While the victim's claim held a slot, one slot was left: the group still ran (the killed run's slot freed).
    expect(deliveries.some((d) => d.receivedMs > killedMs + 100 && d.body.replica !== victimName)).toBe(true);

    const counts = flock.receiver.countByOccurrence();
    const runs = new Map((await flock.runs()).map((r) => [r.key, r]));
    const problems: string[] = [];
    for (const n of names) {
      for (let d = t0; d <= t1; d += 2000) {
        const key = `${n}@${new Date(d).toISOString()}`;
        const rec = runs.get(key);
        // Every occurrence ends in exactly one recorded state, succeeded; the one the victim held ran again.
        if (rec?.state !== 'succeeded') problems.push(`${key}: ${rec?.state ?? 'no record'} ${rec?.reason ?? ''}`);
        const c = counts.get(key) ?? 0;
        if (c < 1 || (c > 1 && (rec?.stalls ?? 0) === 0)) problems.push(`${key}: ${c} deliveries, ${rec?.stalls ?? 0} stalls`);
      }
    }
    expect(problems).toEqual([]);
    // Waiting is recorded: some run started late because of the group, and says so, and the metrics count it.
    expect([...runs.values()].some((r) => /^group cluster-prod \d+\.\d s$/.test(r.waited ?? ''))).toBe(true);
    const live = flock.replicas.filter((r) => r.name !== victimName);
    const texts = await Promise.all(live.map(async (r) => (await fetch(`${r.adminUrl}/metrics`)).text()));
    expect(sumMetric(texts, 'cronflock_gate_wait_seconds_count', { gate: 'group cluster-prod' })).toBeGreaterThan(0);
    expect(texts.every((t) => /^cronflock_group_waiting\{[^}]*group="cluster-prod"[^}]*\} \d+$/m.test(t))).toBe(true);
  });
});

describe('a rate limit across three replicas', () => {
  let flock: Flock;
  const names = Array.from({ length: 5 }, (_, i) => `r${i}`);

  beforeAll(async () => {
    flock = await startGroupFlock({
      groups: { api: '{rateLimit: {max: 3, per: 1s}}' },
      group: 'api',
      names,
      cron: '*/2 * * * * *',
      timeout: '5s',
    });
  });
  afterAll(() => flock?.close());

  it('starts at most max in any window of length per, pushes the rest back, and drops none', async () => {
    const t0 = Math.ceil(Date.now() / 2000) * 2000 + 2000;
    const t1 = t0 + 16_000;
    await sleep(t1 + 6000 - Date.now());
    const runs = (await flock.runs()).filter((r) => names.includes(r.schedule) && r.dueMs >= t0 && r.dueMs <= t1);
    expect(runs).toHaveLength(names.length * 9);
    expect(runs.filter((r) => r.state !== 'succeeded').map((r) => `${r.key} ${r.state} ${r.reason ?? ''}`)).toEqual([]);
    expect(startsOverLimit(runs.map((r) => r.firstStartMs!), 3, 1000)).toEqual([]);
    // Pushed back, not dropped: 5 due at once, 3 a second, so 2 of each round start about a second late.
    const late = runs.filter((r) => (r.latenessMs ?? 0) >= 500);
    expect(late.length).toBeGreaterThanOrEqual(9);
    expect(late.every((r) => /^rate limit of group api \d+\.\d s$/.test(r.waited ?? ''))).toBe(true);
    expect(Math.max(...runs.map((r) => r.latenessMs ?? 0))).toBeLessThan(5000);
  });
});
