/**
 * Helpers of the concurrency-group and rate-limit tests (issue 17): a flock of three replica processes on one
 * group's schedule file, and the rate limit's rule checked on the run records' start times.
 */
import { Flock } from './flock.js';
import { groupScheduleFile } from './schedules.js';

/**
 * A flock of replicas r1, r2, r3 (each with `replicaArgs`) on a schedule file of group schedules (see
 * {@link groupScheduleFile}; their url is the flock receiver's `/hook`).
 */
export async function startGroupFlock(o: Omit<Parameters<typeof groupScheduleFile>[0], 'url'>, replicaArgs: string[] = []): Promise<Flock> {
  const flock = await Flock.start();
  const file = flock.writeSchedules(groupScheduleFile({ ...o, url: `${flock.receiver.url}/hook` }));
  for (const n of ['r1', 'r2', 'r3']) await flock.startReplica({ name: n, schedules: file, args: replicaArgs });
  return flock;
}

/**
 * The windows of length `perMs` that hold more than `max` of `startsMs` (Redis ms, any order), as
 * "N starts in a … b": empty when a rate limit of max per perMs held (a sliding window: any window, not buckets).
 */
export function startsOverLimit(startsMs: readonly number[], max: number, perMs: number): string[] {
  const s = [...startsMs].sort((a, b) => a - b);
  const over: string[] = [];
  for (let i = max; i < s.length; i++) if (s[i]! - s[i - max]! < perMs) over.push(`${max + 1} starts in ${s[i - max]} … ${s[i]}`);
  return over;
}
