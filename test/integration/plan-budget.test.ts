/**
 * The planner's budget per tick (`--plan-budget`, planner.ts): a tick records for at most the budget and leaves
 * the rest of the due schedules to a tick that starts at once, offering them again from the same due time.
 * Unbounded ticks snowballed under overload (issue 16's collapse: ticks of 20–30 s, the membership lapsed and every
 * replica planned every schedule). Here the budget is 0 (one plan chunk of 500 occurrences per tick) and the first
 * tick has more than that to offer (200 schedules × the 3 s lookahead): ticks must defer, and still every due time
 * gets exactly one record — a deferred schedule that advanced anyway would leave due times without one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Flock, sleep, until } from '../support/flock.js';

const NOOP = fileURLToPath(new URL('../../bench/noop.mjs', import.meta.url));

describe('plan budget', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('defers what does not fit in a tick and still records every due time once', async () => {
    flock = await Flock.start();
    const names = Array.from({ length: 200 }, (_, i) => `p${i}`);
    const file = flock.writeSchedules(
      `schedules:\n${names.map((n) => `  - { name: ${n}, cron: "* * * * * *", jitter: 0s, job: { kind: module, path: ${JSON.stringify(NOOP)}, isolation: none } }\n`).join('')}`,
    );
    const r = await flock.startReplica({ name: 'r1', schedules: file, args: ['--plan-budget', '0s'], env: { CRONFLOCK_LOG_LEVEL: 'info' } });
    const startedAt = Date.now();
    await until(() => r.lines.some((l) => l.msg?.startsWith('plan budget spent')), 20_000, 'a tick that deferred');
    const said = r.lines.find((l) => l.msg?.startsWith('plan budget spent')) as { deferred?: number; offered?: number; of?: number };
    expect(said.deferred).toBeGreaterThan(0);
    expect(said.offered).toBeLessThan(said.of!);
    await sleep(6_000);
    const endAt = Date.now();
    const silent: string[] = [];
    const doubled: string[] = [];
    for (const n of names) {
      const dues = (await flock.runs(n)).map((x) => x.dueMs);
      const seen = new Set<number>();
      for (const d of dues) if (seen.has(d)) doubled.push(`${n}@${d}`); else seen.add(d);
      // from the first full second after start to 3 s before the end (all planned by then: lookahead 3 s)
      for (let d = Math.ceil(startedAt / 1000) * 1000 + 1000; d <= endAt - 3000; d += 1000) if (!seen.has(d)) silent.push(`${n}@${new Date(d).toISOString()}`);
    }
    expect(silent.slice(0, 10)).toEqual([]);
    expect(doubled).toEqual([]);
  });
});
