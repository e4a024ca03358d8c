/**
 * Acceptance: stall recovery and fencing with real replica processes and real signals.
 * - SIGKILL the claimant of a running occurrence: another replica re-claims it once, within the bound.
 * - SIGSTOP the claimant past its lock, then SIGCONT: re-claimed elsewhere; the stale job's AbortSignal fires
 *   at its lease end while its replica is still stopped, and its process ends before the re-claim; one success.
 * - SIGTERM the claimant: it hands the run over at once (or finishes within the grace) and claims nothing new.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, until } from '../support/flock.js';
import { cronAt, readEvents } from '../support/events.js';
import type { ReplicaProcess } from '../support/replica.js';

const SLOW = new URL('../fixtures/jobs/slow.mjs', import.meta.url).pathname;

async function setup(flock: Flock, jobMs: number, replicaArgs: string[], n = 3) {
  const events = join(flock.dir, 'events.jsonl');
  const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 8000;
  const file = flock.writeSchedules(`schedules:
  - name: long
    cron: "${cronAt(dueMs)}"
    job: { kind: module, path: ${SLOW}, params: { ms: ${jobMs}, events: ${events} } }
`);
  const replicas: ReplicaProcess[] = [];
  for (let i = 1; i <= n; i++) replicas.push(await flock.startReplica({ name: `r${i}`, schedules: file, args: replicaArgs }));
  const key = `long@${new Date(dueMs).toISOString()}`;
  await until(() => readEvents(events).some((e) => e.event === 'start'), 20_000, 'first start');
  const first = readEvents(events).find((e) => e.event === 'start')!;
  const claimant = replicas.find((r) => r.name === first.replica)!;
  return { events, key, first, claimant, replicas };
}

describe('stall recovery and fencing', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('re-claims a SIGKILLed claimant’s run once, on another replica, within the default bound (10 s)', async () => {
    flock = await Flock.start();
    const { events, key, first, claimant } = await setup(flock, 4000, []);
    const killedAt = Date.now();
    claimant.signal('SIGKILL');
    await until(() => readEvents(events).some((e) => e.event === 'start' && e.token === 2), 15_000, 're-claim');
    const second = readEvents(events).find((e) => e.event === 'start' && e.token === 2)!;
    expect(second.replica).not.toBe(first.replica);
    expect(second.attempt).toBe(2);
    expect(second.at - killedAt).toBeLessThanOrEqual(10_000);
    await until(async () => (await flock.runs('long'))[0]?.state === 'succeeded', 15_000, 'success');
    const [rec] = await flock.runs('long');
    expect(rec).toMatchObject({ key, state: 'succeeded', fencingToken: 2, attempt: 2, stalls: 1, replica: second.replica });
    const starts = readEvents(events).filter((e) => e.event === 'start');
    expect(starts.map((e) => e.token)).toEqual([1, 2]); // re-claimed once
  });

  it('stops a SIGSTOPped claimant’s job at its lease end, before the re-claim, and records one success', async () => {
    flock = await Flock.start();
    const { events, first, claimant } = await setup(flock, 7000, ['--lock', '2s']);
    const stoppedAt = Date.now();
    claimant.signal('SIGSTOP');
    await until(() => readEvents(events).some((e) => e.event === 'start' && e.token === 2), 15_000, 're-claim');
    const second = readEvents(events).find((e) => e.event === 'start' && e.token === 2)!;
    expect(second.replica).not.toBe(first.replica);
    // The stale job's signal fired while its replica was still stopped, at the lease end (lock 2 s) at the latest,
    // and before the other replica's claim: its process's own watchdog, not the stopped replica, fired it.
    const abort = readEvents(events).find((e) => e.event === 'abort' && e.token === 1)!;
    expect(abort).toBeDefined();
    expect(abort.replica).toBe(first.replica);
    expect(abort.at).toBeLessThan(second.at);
    expect(abort.at).toBeLessThanOrEqual(stoppedAt + 2000 + 150);
    const contAt = Date.now();
    claimant.signal('SIGCONT');
    await claimant.waitForLog((l) => l.msg === 'claim lost; run aborted' || String(l.msg).startsWith('completion refused'), 10_000, 'the resumed replica gives the claim up');
    await until(async () => (await flock.runs('long'))[0]?.state === 'succeeded', 15_000, 'success');
    const [rec] = await flock.runs('long');
    expect(rec).toMatchObject({ state: 'succeeded', fencingToken: 2, replica: second.replica });
    // The stale job, which ignores its signal, never reached its end: its process ended at the lease end.
    expect(readEvents(events).filter((e) => e.event === 'end' && e.token === 1)).toEqual([]);
    expect(contAt).toBeGreaterThan(abort.at);
  });

  it('hands a run over at once on SIGTERM after the grace period, and the stopping replica claims nothing new', async () => {
    flock = await Flock.start();
    // A long lock: a hand-over that waited for stall detection would take ≥ 10 s; "at once" is far below.
    const { events, first, claimant } = await setup(flock, 20_000, ['--lock', '10s', '--grace', '1s'], 2);
    const termAt = Date.now();
    claimant.signal('SIGTERM');
    await until(() => readEvents(events).some((e) => e.event === 'start' && e.token === 2), 15_000, 'hand-over');
    const second = readEvents(events).find((e) => e.event === 'start' && e.token === 2)!;
    expect(second.replica).not.toBe(first.replica);
    expect(second.at - termAt).toBeLessThan(1_000 + 3_000);
    const abort = readEvents(events).find((e) => e.event === 'abort' && e.token === 1);
    expect(abort).toBeDefined();
    const exit = await claimant.exited;
    expect(exit.code).toBe(0);
    const stopLog = claimant.lines.findIndex((l) => String(l.msg).startsWith('stopping'));
    expect(claimant.lines.slice(stopLog).filter((l) => l.msg === 'run started')).toEqual([]);
    const [rec] = await flock.runs('long');
    expect(rec).toMatchObject({ state: 'running', fencingToken: 2, handovers: 1, stalls: 0 });
  });

  it('lets a run finish within the grace period on SIGTERM instead of handing it over', async () => {
    flock = await Flock.start();
    const { events, first, claimant } = await setup(flock, 2000, ['--grace', '15s'], 2);
    claimant.signal('SIGTERM');
    const exit = await claimant.exited;
    expect(exit.code).toBe(0);
    const [rec] = await flock.runs('long');
    expect(rec).toMatchObject({ state: 'succeeded', fencingToken: 1, replica: first.replica, handovers: 0 });
    expect(readEvents(events).filter((e) => e.event === 'start')).toHaveLength(1);
  });
});
