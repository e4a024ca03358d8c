/**
 * Acceptance: one clock. Replicas whose host clocks are off by ±3 s produce no duplicate and no miss; and a
 * replica paused for longer than the retention of finished occurrences does not run an old one again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, sleep } from '../support/flock.js';

describe('clocks', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  function expectExactlyOnce(from: number, to: number, periodMs: number, schedule: string): void {
    const counts = flock.receiver.countByOccurrence();
    for (let d = Math.ceil(from / periodMs) * periodMs; d <= to; d += periodMs) {
      const key = `${schedule}@${new Date(d).toISOString()}`;
      expect(counts.get(key) ?? 0, key).toBe(1);
    }
  }

  it('runs each occurrence exactly once with host clocks skewed by -3 s, 0 and +3 s', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - name: a
    cron: "* * * * * *"
    jitter: 500ms
    job: { kind: http, url: ${flock.receiver.url}/a }
  - name: b
    cron: "*/2 * * * * *"
    jitter: 1500ms
    job: { kind: http, url: ${flock.receiver.url}/b }
`);
    await flock.startReplica({ name: 'behind', schedules: file, clockOffsetMs: -3000 });
    await flock.startReplica({ name: 'exact', schedules: file });
    await flock.startReplica({ name: 'ahead', schedules: file, clockOffsetMs: 3000 });
    const from = Date.now() + 2000;
    await sleep(20_000);
    const to = Date.now() - 4000;
    expect([...flock.receiver.countByOccurrence()].filter(([, n]) => n > 1)).toEqual([]);
    expectExactlyOnce(from, to, 1000, 'a');
    expectExactlyOnce(from, to, 2000, 'b');
    // Starts are never early on the shared clock, whatever the host clocks say.
    for (const d of flock.receiver.deliveries) expect(Date.parse(d.body.startedAt)).toBeGreaterThanOrEqual(Date.parse(d.body.fireAt));
    // The skewed hosts measured their skew against Redis.
    const ahead = flock.replicas.find((r) => r.name === 'ahead')!;
    const sync = await ahead.waitForLog((l) => l.msg === 'clock synchronised with Redis', 1000);
    expect(Math.abs(Number(sync.skewMs) + 3000)).toBeLessThan(200);
  });

  it('does not run old occurrences again after a pause longer than the record retention', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - name: a
    cron: "* * * * * *"
    job: { kind: http, url: ${flock.receiver.url}/a }
`);
    const args = ['--retention', '6s', '--horizon', '2s', '--lookahead', '2s', '--tick', '200ms'];
    await flock.startReplica({ name: 'steady', schedules: file, args });
    const paused = await flock.startReplica({ name: 'paused', schedules: file, args });
    await sleep(3000);
    paused.signal('SIGSTOP');
    await sleep(12_000); // twice the retention: records and finished jobs of early occurrences are gone
    paused.signal('SIGCONT');
    await sleep(5000);
    const dup = [...flock.receiver.countByOccurrence()].filter(([, n]) => n > 1);
    expect(dup).toEqual([]);
    // The paused replica is alive and works again (not merely silent).
    const before = flock.receiver.deliveries.length;
    await flock.replicas.find((r) => r.name === 'steady')!.stop();
    await sleep(4000);
    expect(flock.receiver.deliveries.length).toBeGreaterThan(before);
    expect([...flock.receiver.countByOccurrence()].filter(([, n]) => n > 1)).toEqual([]);
  });
});
