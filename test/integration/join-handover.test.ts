/**
 * "Nothing silent" across the division of planning when replicas join (docs/design.md, "Planning divided by
 * rendezvous hashing"): the old owner stops offering a share at its first tick that sees the newcomer, having
 * planned it up to its lookahead; the newcomer offers it from its start, which resumes each schedule from the
 * latest due time anyone planned (its watermark), not from a guess. A due time between the old owner's last offer
 * and the newcomer's first would have no record at all. Here replicas join a running one while 12 schedules are
 * due every second, and one newcomer stalls past its membership TTL right after joining (its share goes back to
 * the others, then returns to it): every due time must have a record.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';

describe('division hand-over when replicas join', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('records every due time while replicas join, divide the schedules and a newcomer stalls past its TTL', async () => {
    flock = await Flock.start();
    const names = Array.from({ length: 12 }, (_, i) => `j${i}`);
    const file = flock.writeSchedules(
      `schedules:\n${names.map((n) => `  - { name: ${n}, cron: "* * * * * *", catchUp: none, job: { kind: http, url: ${flock.receiver.url}/${n}, timeout: 5s } }\n`).join('')}`,
    );
    await flock.startReplica({ name: 'r1', schedules: file });
    await until(async () => (await flock.runs('j0')).length >= 3, 30_000, 'r1 planning alone');
    const from = Date.now();
    const r2 = await flock.startReplica({ name: 'r2', schedules: file });
    const divided = async (by: string[]): Promise<boolean> => {
      const recs = (await Promise.all(names.map((n) => flock.runs(n)))).flat().filter((r) => r.dueMs > Date.now() - 1_500);
      const planners = new Set(recs.map((r) => r.plannedBy));
      return by.every((b) => planners.has(b));
    };
    await until(() => divided(['r1', 'r2']), 30_000, 'r1 and r2 dividing the schedules');
    await flock.startReplica({ name: 'r3', schedules: file });
    await until(() => divided(['r1', 'r2', 'r3']), 30_000, 'r1, r2 and r3 dividing the schedules');
    // A newcomer whose event loop stalls past its TTL at once: its share goes to the others and comes back.
    r2.signal('SIGSTOP');
    await sleep(3_500);
    r2.signal('SIGCONT');
    await sleep(4_000);
    const to = Date.now() - 4_000; // due times up to here are planned (lookahead 3 s) by now
    const silent: string[] = [];
    for (const n of names) {
      const dues = new Set((await flock.runs(n)).map((r) => r.dueMs));
      for (let d = Math.ceil(from / 1000) * 1000; d <= to; d += 1000) if (!dues.has(d)) silent.push(`${n}@${new Date(d).toISOString()}`);
    }
    expect(silent).toEqual([]);
  });
});
