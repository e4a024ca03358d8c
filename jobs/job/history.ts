/**
 * History limits (Kubernetes CronJob `successfulJobsHistoryLimit` and `failedJobsHistoryLimit`): of a schedule's
 * finished Jobs, the newest N that succeeded and the newest M that failed are kept, the older ones deleted
 * (the CronJob controller's `removeOldestJobs`). "Newest" is by scheduled time (the due time annotation), then
 * name; running Jobs and Jobs already being deleted are neither counted nor deleted.
 */
import { jobOutcome, scheduledTimeMs, type BatchJob } from './state.js';

/** The limits; see the module docs. */
export interface HistoryLimits {
  successful: number;
  failed: number;
}

/** The Jobs to delete, oldest first. Pure. */
export function jobsBeyondHistory<T extends BatchJob>(jobs: readonly T[], limits: HistoryLimits): T[] {
  const byState = { succeeded: [] as T[], failed: [] as T[] };
  for (const j of jobs) {
    if (j.metadata?.deletionTimestamp) continue;
    const o = jobOutcome(j);
    if (o.state !== 'running') byState[o.state].push(j);
  }
  const oldestFirst = (a: T, b: T): number =>
    scheduledTimeMs(a) - scheduledTimeMs(b) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
  const beyond = (list: T[], keep: number): T[] => list.sort(oldestFirst).slice(0, Math.max(0, list.length - keep));
  return [...beyond(byState.succeeded, limits.successful), ...beyond(byState.failed, limits.failed)].sort(oldestFirst);
}
