/**
 * A replica whose planning falls behind says so (issue 16, the overload collapse): when a tick offers occurrences
 * whose fire time passed more than the catch-up grace ago, the plan script records them missed or as catch-up
 * runs instead of running them on time, and the replica warns once (at most every 5 s) with how many, how far
 * behind, how long the tick took and where its time went (membership view, plan script, enqueue, promotion,
 * sweep). Here the replica is SIGSTOPped past its lookahead (a starved host or a GC pause in production), so its
 * first tick after SIGCONT plans late.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, sleep } from '../support/flock.js';

describe('planning behind', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('warns with the overdue count and the tick\'s phases when a tick plans after the fire times', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(
      `schedules:\n${Array.from({ length: 5 }, (_, i) => `  - { name: s${i}, cron: "* * * * * *", catchUp: none, job: { kind: http, url: ${flock.receiver.url}/s${i}, timeout: 5s } }\n`).join('')}`,
    );
    const r = await flock.startReplica({ name: 'r1', schedules: file });
    await sleep(2_000);
    expect(r.lines.some((l) => l.msg?.startsWith('planning is behind'))).toBe(false); // on time: silent
    r.signal('SIGSTOP');
    await sleep(6_000); // > lookahead (3 s) + catch-up grace (1 s): the next tick offers overdue due times
    r.signal('SIGCONT');
    const line = await r.waitForLog((l) => l.msg?.startsWith('planning is behind') === true, 20_000, 'planning-behind warning');
    expect(line.level).toBe(40);
    expect(line.overdue).toBeGreaterThan(0);
    expect(line.behindMs).toBeGreaterThan(1_000);
    expect(Object.keys(line.phasesMs as object).sort()).toEqual(['enqueue', 'plan', 'promote', 'sweep', 'view']);
  });

  it('stays silent when a reload divides planning anew and the replicas take schedules over (found by a user: a warning after every change)', async () => {
    flock = await Flock.start();
    // 8 schedules that stay as they are, 4 whose cron each change changes.
    const yaml = (every: number): string =>
      `schedules:\n${Array.from({ length: 12 }, (_, i) => `  - { name: s${i}, cron: "*/${i < 8 ? 1 : every} * * * * *", catchUp: none, job: { kind: http, url: ${flock.receiver.url}/s${i}, timeout: 5s } }\n`).join('')}`;
    const file = flock.writeSchedules(yaml(2));
    // Reloaded by SIGHUP only (not when the file is written), so that the two apply each change at other times.
    const r1 = await flock.startReplica({ name: 'r1', schedules: file, args: ['--no-watch'] });
    const r2 = await flock.startReplica({ name: 'r2', schedules: file, args: ['--no-watch'] });
    await sleep(3_000);
    for (const every of [3, 2, 3]) {
      flock.writeSchedules(yaml(every));
      // One after the other, as replicas apply a change: planning is undivided between, divided again after.
      r1.signal('SIGHUP');
      await sleep(1_500);
      r2.signal('SIGHUP');
      await sleep(4_000);
    }
    // The reloads divided planning anew (each replica took schedules over), and nothing was behind.
    const changes = [r1, r2].flatMap((r) => r.lines.filter((l) => l.msg === 'planning membership changed'));
    expect(changes.some((l) => Number(l.gained) > 0), JSON.stringify(changes)).toBe(true);
    expect([r1, r2].flatMap((r) => r.lines.filter((l) => l.msg?.startsWith('planning is behind')))).toEqual([]);
  }, 60_000);
});
