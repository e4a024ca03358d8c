/**
 * Acceptance (issue 16, point 1): occurrences delivered in batches (`--batch-size`), with real replica processes
 * and real signals.
 * - SIGKILL the replica that holds a batch: every occurrence it had is re-claimed by the other replicas (none
 *   twice, none lost), each fencing token of an occurrence above the one before, within the lock + stall check;
 *   the same with `--batch-size 1` (one job per occurrence), which stays supported beside the default of 50.
 * - SIGTERM the replica that holds a batch: the occurrences of the batch it has not started are handed over at
 *   once (not after its running runs end), and it starts nothing after it began stopping.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, until } from '../support/flock.js';
import { cronAt, readEvents, type JobEvent } from '../support/events.js';
import type { ReplicaProcess } from '../support/replica.js';
import { Keyspace } from '../../runner/redis/keys.js';

const SLOW = new URL('../fixtures/jobs/slow.mjs', import.meta.url).pathname;

/** `n` schedules due once, at the same second `dueMs` (one fire-time slot: jitter 0), each a slow job. */
function schedules(n: number, dueMs: number, jobMs: number, events: string): string {
  let y = 'schedules:\n';
  for (let i = 0; i < n; i++) {
    y += `  - name: b${i}\n    cron: "${cronAt(dueMs)}"\n    job: { kind: module, isolation: thread, path: ${SLOW}, params: { ms: ${jobMs}, events: ${events} } }\n`;
  }
  return y;
}

const starts = (events: string): JobEvent[] => readEvents(events).filter((e) => e.event === 'start');

/** The batch job named in each occurrence's record (field `bj`, written at enqueue, read by the sweep). */
async function batchJobs(flock: Flock, keys: string[]): Promise<(string | null)[]> {
  const ks = new Keyspace();
  return Promise.all(keys.map((k) => flock.redisClient.hget(ks.occurrence(k), 'bj')));
}

describe('batched delivery', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  // Batch 50 is the default; batch 1 (one job per occurrence, no `bj`) must keep the same promises.
  it.each([50, 1])('--batch-size %i: re-claims every occurrence of a SIGKILLed holder on the other replicas, none twice, none lost, tokens rising', async (batchSize) => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const n = 12;
    const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 10_000;
    const file = flock.writeSchedules(schedules(n, dueMs, 3000, events));
    const replicas: ReplicaProcess[] = [];
    for (let i = 1; i <= 3; i++) replicas.push(await flock.startReplica({ name: `r${i}`, schedules: file, args: ['--batch-size', String(batchSize), '--lock', '1s'] }));
    await until(() => starts(events).length === n, 25_000, 'every occurrence started');
    const keys = [...new Set(starts(events).map((e) => e.key))];
    expect(keys).toHaveLength(n);
    const bjs = await batchJobs(flock, keys);
    if (batchSize > 1) {
      // Delivered in batch jobs, not one job each.
      expect(bjs.every((b) => b !== null && b.startsWith('b-'))).toBe(true);
      expect(new Set(bjs).size).toBeLessThan(n);
    } else expect(bjs).toEqual(keys.map(() => null)); // one job each: no record names a batch
    // The holder of the most runs: it took at least one batch with several occurrences.
    const byReplica = new Map<string, string[]>();
    for (const e of starts(events)) byReplica.set(e.replica, [...(byReplica.get(e.replica) ?? []), e.key]);
    const [victimName, victimKeys] = [...byReplica.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
    expect(victimKeys.length).toBeGreaterThan(1);
    const victim = replicas.find((r) => r.name === victimName)!;
    const killedAt = Date.now();
    victim.signal('SIGKILL');
    // Each of its occurrences re-claimed elsewhere with token 2, within lock (1 s) + stall check (0.5 s) + slack:
    // far sooner than the sweep (5 s after the claim) would find it.
    await until(() => victimKeys.every((k) => starts(events).some((e) => e.key === k && e.token === 2)), 20_000, 're-claims');
    for (const k of victimKeys) {
      const again = starts(events).find((e) => e.key === k && e.token === 2)!;
      expect(again.replica).not.toBe(victimName);
      expect(again.at - killedAt).toBeLessThan(5_000);
    }
    await until(async () => (await flock.runs()).filter((r) => r.state === 'succeeded').length === n, 20_000, 'all succeeded');
    // Re-delivered by the split of the stalled batch (batch 1: BullMQ's stall check), not found later by the sweep.
    for (const r of replicas) expect(r.lines.filter((l) => String(l.msg).startsWith('sweeper re-enqueued'))).toEqual([]);
    const recs = await flock.runs();
    expect(recs).toHaveLength(n);
    for (const k of keys) {
      const tokens = starts(events).filter((e) => e.key === k).map((e) => e.token);
      // None twice (one start per token), tokens rising, one success per occurrence.
      expect(new Set(tokens).size).toBe(tokens.length);
      expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
      expect(tokens).toEqual(victimKeys.includes(k) ? [1, 2] : [1]);
      const rec = recs.find((r) => r.key === k)!;
      expect(rec).toMatchObject({ state: 'succeeded', fencingToken: tokens.at(-1) });
      if (victimKeys.includes(k)) expect(rec.stalls).toBe(1);
    }
  });

  it('hands the unstarted occurrences of a batch over at once on SIGTERM, while its running ones finish', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const n = 8;
    const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 8_000;
    const file = flock.writeSchedules(schedules(n, dueMs, 15_000, events));
    // r1 alone plans them (one batch) and runs two at once: the other six wait in it for a run slot.
    const r1 = await flock.startReplica({ name: 'r1', schedules: file, args: ['--batch-size', '50', '--concurrency', '2', '--grace', '30s'] });
    await until(() => starts(events).length === 2, 20_000, 'two runs started on r1');
    const bjs = await batchJobs(flock, starts(events).map((e) => e.key));
    expect(bjs[0]).toMatch(/^b-/);
    await flock.startReplica({ name: 'r2', schedules: file, args: ['--concurrency', '50'] });
    expect(starts(events)).toHaveLength(2); // the six are still waiting in r1's batch
    const termAt = Date.now();
    r1.signal('SIGTERM');
    await until(() => starts(events).length === n, 10_000, 'hand-over of the unstarted six');
    const handed = starts(events).slice(2);
    for (const e of handed) {
      expect(e.replica).toBe('r2');
      expect(e.token).toBe(1); // never claimed before: handed over unstarted
      expect(e.at - termAt).toBeLessThan(5_000); // at once, not when r1's runs end (15 s)
    }
    const exit = await r1.exited;
    expect(exit.code).toBe(0);
    const stopLog = r1.lines.findIndex((l) => String(l.msg).startsWith('stopping'));
    expect(r1.lines.slice(stopLog).filter((l) => l.msg === 'run started')).toEqual([]);
    await until(async () => (await flock.runs()).filter((r) => r.state === 'succeeded').length === n, 30_000, 'all succeeded');
    const recs = await flock.runs();
    expect(recs.filter((r) => r.replica === 'r1').every((r) => r.fencingToken === 1 && r.handovers === 0)).toBe(true);
  });
});
