/**
 * Acceptance: one clock under a host clock step. One replica's wall clock is stepped by an hour (forward or
 * back) with libfaketime while Redis' clock, and the other processes', stay put; the replica runs alone or
 * beside a healthy one. Whatever the stepped host's clock says, no occurrence is recorded missed or skipped
 * (none was overdue on the Redis clock), nothing starts before its fire time on the Redis clock, every due time
 * runs exactly once, and the stepped replica says what happened (log line, metrics, readiness).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../support/fake-clock.js';
import { Flock, sleep, until } from '../support/flock.js';
import type { ReplicaProcess } from '../support/replica.js';

const HOUR_S = 3600;

const get = async (url: string): Promise<{ status: number; text: string }> => {
  const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: r.status, text: await r.text() };
};

/** The value of an unlabelled-or-replica-labelled metric sample (first match), NaN when absent. */
function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ').pop());
}

describe('a host clock step on one replica', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  for (const stepS of [HOUR_S, -HOUR_S]) {
    for (const beside of [false, true]) {
      const title = `${stepS > 0 ? 'forward' : 'back'} by an hour, ${beside ? 'beside a healthy replica' : 'alone'}`;
      it(`${title}: nothing missed, nothing early, every due time once, and the step is reported`, async () => {
        flock = await Flock.start();
        const clock = new FakeClock(flock.dir);
        const file = flock.writeSchedules(`schedules:
  - name: st
    cron: "*/2 * * * * *"
    job: { kind: http, url: ${flock.receiver.url}/st }
`);
        const stepped = await flock.startReplica({ name: 'stepped', schedules: file, faketimeFile: clock.file });
        if (beside) await flock.startReplica({ name: 'healthy', schedules: file });
        const from = Date.now() + 1000;
        await sleep(6000);
        const stepAt = Date.now();
        clock.set(stepS);
        await sleep(20_000);
        const to = Date.now() - 3000;
        // Let late runs finish before reading what happened.
        await sleep(3000);

        const runs = await flock.runs('st');
        // No occurrence was overdue on the Redis clock (the flock was never down): none may be missed or skipped.
        const notRun = runs.filter((r) => r.state === 'missed' || r.state === 'skipped');
        expect(notRun.map((r) => `${r.key} ${r.state}: ${r.reason}`)).toEqual([]);
        // Every due time ran exactly once, the hour around the step included.
        const counts = flock.receiver.countByOccurrence();
        for (let d = Math.ceil(from / 2000) * 2000; d <= to; d += 2000) {
          const key = `st@${new Date(d).toISOString()}`;
          expect(counts.get(key) ?? 0, key).toBe(1);
        }
        expect([...counts].filter(([, n]) => n > 1)).toEqual([]);
        // Nothing ran early on the Redis clock, and runs after a short disruption are on time.
        for (const r of runs.filter((x) => x.state === 'succeeded')) {
          expect(r.firstStartMs!, r.key).toBeGreaterThanOrEqual(r.fireMs);
          if (r.fireMs > stepAt + 5000) expect(r.latenessMs!, r.key).toBeLessThan(2000);
        }
        for (const d of flock.receiver.of('st')) expect(Date.parse(d.body.startedAt)).toBeGreaterThanOrEqual(Date.parse(d.body.fireAt));
        // Nothing was recorded an hour away from the Redis clock.
        for (const r of runs) expect(Math.abs(r.dueMs - Date.now()), r.key).toBeLessThan(10 * 60_000);

        // The stepped replica noticed at once and says so: a log line, the step counter, its skew, readiness.
        const line = await stepped.waitForLog((l) => l.msg === 'host clock stepped', 5000, 'step log line');
        expect(Math.abs(Number(line.stepMs) - stepS * 1000)).toBeLessThan(5000);
        const m = await get(`${stepped.adminUrl}/metrics`);
        expect(metric(m.text, 'cronflock_clock_steps_total')).toBeGreaterThanOrEqual(1);
        expect(Math.abs(metric(m.text, 'cronflock_clock_skew_seconds') + stepS)).toBeLessThan(5);
        const ready = await get(`${stepped.adminUrl}/readyz`);
        expect(ready.status).toBe(503);
        expect(ready.text).toContain('host clock');
        if (beside) {
          const healthy = flock.replicas.find((r) => r.name === 'healthy')!;
          expect((await get(`${healthy.adminUrl}/readyz`)).status).toBe(200);
        }

        // Back in bounds: the replica is ready again.
        clock.set(0);
        await until(async () => (await get(`${stepped.adminUrl}/readyz`)).status === 200, 10_000, 'ready after the clock is back');
        expectReplicaAlive(stepped);
      });
    }
  }
});

function expectReplicaAlive(r: ReplicaProcess): void {
  expect(r.child.exitCode).toBeNull();
}
