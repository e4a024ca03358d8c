/**
 * Acceptance (README, "Run policies": an occurrence that has started keeps its place until it ends): a run whose
 * claimant stalled keeps its place under concurrencyPolicy Forbid while it waits to be claimed again, with real
 * replica processes and real signals.
 * - The holder of a Forbid run is SIGKILLed; its lease lapses and the next due time comes before anyone
 *   re-delivers it: that occurrence is recorded skipped (overlap with the stalled run) and does not run; the
 *   stalled run is claimed again (token 2) and succeeds; later ones run (nothing blocks the schedule).
 * - Redis is killed (SIGKILL) while a Forbid run is in flight and restarted from its AOF after the lease and the
 *   next due time have passed (the user's report): the occurrence due meanwhile is skipped or missed, never run
 *   before the run in flight, which is claimed again and finishes first.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';
import { readEvents } from '../support/events.js';
import type { RunRecord } from '../../runner/records/runs.js';
import { occurrenceKey } from '../../runner/schedule/occurrence.js';

const SLOW = new URL('../fixtures/jobs/slow.mjs', import.meta.url).pathname;

/** Start/end spans of the runs of the events file, by start time; a run that has not ended ends at Infinity. */
function spans(events: string): { key: string; token: number; start: number; end: number }[] {
  const ev = readEvents(events);
  return ev
    .filter((e) => e.event === 'start')
    .map((s) => ({ key: s.key, token: s.token, start: s.at, end: ev.find((e) => e.event === 'end' && e.key === s.key && e.token === s.token)?.at ?? Infinity }))
    .sort((a, b) => a.start - b.start);
}

/** Occurrences of `runs` due after `afterMs` and before `beforeMs`. */
function dueBetween(runs: RunRecord[], afterMs: number, beforeMs: number): RunRecord[] {
  return runs.filter((r) => r.dueMs > afterMs && r.dueMs < beforeMs).sort((a, b) => a.dueMs - b.dueMs);
}

describe('a stalled run keeps its place (concurrencyPolicy Forbid)', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  // The replica that holds the run checks for stalled BullMQ jobs every lock/2 (1 s); the second one, started once
  // the run has begun, only every minute (with a 60 s lock), so nobody re-delivers the stalled run while the next
  // due time comes and goes (without that, a race decides which of the two is claimed first); a replica started
  // (or resumed) afterwards re-delivers it.
  const quick = ['--lock', '2s'];
  const slowStallCheck = ['--lock', '60s', '--stalled-interval', '60s'];

  it('skips the occurrence due while its claimant is dead (overlap), then claims it again and finishes it first', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const file = flock.writeSchedules(`schedules:
  - name: fb
    cron: "*/6 * * * * *"
    concurrencyPolicy: Forbid
    job: { kind: module, path: ${SLOW}, params: { ms: 8000, events: ${events} } }
`);
    const r1 = await flock.startReplica({ name: 'r1', schedules: file, args: quick });
    await until(() => readEvents(events).some((e) => e.event === 'start'), 20_000, 'first run');
    const first = readEvents(events).find((e) => e.event === 'start')!;
    await flock.startReplica({ name: 'r2', schedules: file, args: slowStallCheck });
    r1.signal('SIGKILL');
    const killedAt = Date.now();
    const firstDue = Date.parse(first.key.split('@')[1]!);
    // The lease (2 s) lapses; the next due time (6 s later) comes and is decided by the other replica.
    const next = await (async () => {
      let r: RunRecord | undefined;
      await until(async () => {
        r = (await flock.runs('fb')).find((x) => x.dueMs === firstDue + 6000 && x.state !== 'scheduled');
        return r !== undefined;
      }, 15_000, 'next occurrence decided');
      return r!;
    })();
    expect(next).toMatchObject({ state: 'skipped', reason: `overlap: ${first.key} stalled, to be claimed again (concurrencyPolicy Forbid)` });
    // A replica that checks for stalled jobs re-delivers the stalled run: claimed again (token 2), it succeeds.
    await flock.startReplica({ name: 'r3', schedules: file, args: quick });
    // Generous: quiet, the run finishes ~15 s after r3 starts; on a loaded CI host r3's start, its stall check and the
    // 8 s run took past 60 s (seen once, 2026-12-02).
    await until(async () => (await flock.runs('fb')).find((r) => r.key === first.key)?.state === 'succeeded', 120_000, 'stalled run finished');
    const stalled = (await flock.runs('fb')).find((r) => r.key === first.key)!;
    expect(stalled).toMatchObject({ state: 'succeeded', fencingToken: 2, attempt: 2, stalls: 1 });
    // Nothing ran beside it, and the stalled run was the first to run after the kill.
    const s = spans(events).filter((x) => x.start > killedAt);
    expect(s[0]).toMatchObject({ key: first.key, token: 2 });
    // The schedule is not blocked for ever: a later occurrence runs once the stalled one is final.
    await until(() => spans(events).some((x) => x.key !== first.key && x.end < Infinity), 15_000, 'a later run');
    const after = spans(events).filter((x) => x.start > killedAt);
    for (let i = 1; i < after.length; i++) expect(after[i]!.start).toBeGreaterThanOrEqual(after[i - 1]!.end);
  }, 240_000);

  it('across a Redis kill -9 and restart (AOF): the run in flight is claimed again and finishes before later ones start', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const file = flock.writeSchedules(`schedules:
  - name: slow
    cron: "*/10 * * * * *"
    concurrencyPolicy: Forbid
    job: { kind: module, path: ${SLOW}, params: { ms: 8000, events: ${events} } }
`);
    const r1 = await flock.startReplica({ name: 'r1', schedules: file, args: quick });
    await until(() => readEvents(events).some((e) => e.event === 'start'), 25_000, 'first run');
    const first = readEvents(events).find((e) => e.event === 'start')!;
    const firstDue = Date.parse(first.key.split('@')[1]!);
    await flock.startReplica({ name: 'r2', schedules: file, args: slowStallCheck });
    await flock.redis.stop('SIGKILL');
    r1.signal('SIGSTOP'); // its stall check would race the next due time; it resumes once that one is decided
    const downAt = Date.now();
    // The lease lapses (2 s) and the next due time (10 s later) passes while Redis is away.
    await sleep(Math.max(0, firstDue + 11_000 - Date.now()));
    await flock.redis.restart();
    const backAt = Date.now();
    // Decided once Redis is back (by r2), while the run in flight is open but not running.
    await until(async () => (await flock.runs('slow').catch(() => [])).some((x) => x.dueMs === firstDue + 10_000 && x.state !== 'scheduled'), 20_000, 'next occurrence decided');
    r1.signal('SIGCONT');
    await until(async () => (await flock.runs('slow').catch(() => [])).find((r) => r.key === first.key)?.state === 'succeeded', 60_000, 'run in flight finished');
    const rec = (await flock.runs('slow')).find((r) => r.key === first.key)!;
    expect(rec.fencingToken).toBeGreaterThanOrEqual(2);
    // After the restart, the run in flight ran first; nothing overlapped it.
    const s = spans(events).filter((x) => x.start > downAt);
    expect(s[0]).toMatchObject({ key: first.key });
    for (let i = 1; i < s.length; i++) expect(s[i]!.start).toBeGreaterThanOrEqual(s[i - 1]!.end);
    // Due while Redis was away: recorded skipped (overlap with the open run), never run before it ended.
    const due = dueBetween(await flock.runs('slow'), firstDue, backAt);
    expect(due.map((r) => [r.key, r.state, r.reason])).toEqual([
      [occurrenceKey('slow', firstDue + 10_000), 'skipped', `overlap: ${first.key} stalled, to be claimed again (concurrencyPolicy Forbid)`],
    ]);
  });
});
