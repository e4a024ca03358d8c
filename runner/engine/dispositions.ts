/**
 * What becomes of each occurrence when it is planned: run it, or record it missed/skipped with a reason.
 * Pure: the same inputs give the same answer on every replica (first record wins in Redis anyway).
 *
 * Rules (Kubernetes CronJob semantics, made explicit and recorded instead of dropped):
 * - a suspended schedule's occurrences are `skipped: suspended`;
 * - an occurrence whose starting deadline has passed is `missed` (CronJob `startingDeadlineSeconds`);
 * - occurrences planned more than `catchUpGraceMs` after their fire time are overdue (the whole flock, or
 *   Redis, was away): `catchUp: latest` runs the newest overdue one, `all` runs the newest `maxCatchUpRuns`
 *   (oldest first), `none` runs none; the others are `missed` with the reason.
 */

/**
 * Start of the reason recorded on a catch-up run (an overdue occurrence the catch-up policy keeps). Such runs
 * are late by definition and go to the backlog lane, not ahead of occurrences that are on time (enqueue.ts).
 */
export const CATCH_UP_RUN_REASON = 'catch-up: run late';

/** Whether a recorded reason marks a catch-up run. */
export function isCatchUpRun(reason: string | undefined): boolean {
  return reason?.startsWith(CATCH_UP_RUN_REASON) ?? false;
}

/** Catch-up policy after downtime. */
export type CatchUpPolicy = 'none' | 'latest' | 'all';

/** Schedule fields the decision needs. */
export interface DispositionPolicy {
  suspend: boolean;
  startingDeadlineMs: number | null;
  catchUp: CatchUpPolicy;
  maxCatchUpRuns: number;
}

/** One occurrence to decide on. */
export interface Candidate {
  dueMs: number;
  fireMs: number;
}

/** The decision for one candidate. */
export interface Disposition {
  disposition: 'run' | 'missed' | 'skipped';
  reason: string;
}

/**
 * Decides for candidates of ONE schedule, given in due-time order.
 * @param nowMs current Redis time estimate.
 * @returns one decision per candidate, same order.
 */
export function decide(
  candidates: readonly Candidate[],
  policy: DispositionPolicy,
  nowMs: number,
  catchUpGraceMs: number,
): Disposition[] {
  const out: Disposition[] = candidates.map(() => ({ disposition: 'run', reason: '' }));
  const overdue: number[] = [];
  candidates.forEach((c, i) => {
    if (policy.suspend) out[i] = { disposition: 'skipped', reason: 'suspended' };
    else if (policy.startingDeadlineMs !== null && c.fireMs + policy.startingDeadlineMs < nowMs) {
      out[i] = { disposition: 'missed', reason: 'starting deadline exceeded' };
    } else if (c.fireMs + catchUpGraceMs < nowMs) overdue.push(i);
  });
  const keep = policy.catchUp === 'none' ? 0 : policy.catchUp === 'latest' ? 1 : Math.max(0, policy.maxCatchUpRuns);
  const dropped = overdue.slice(0, Math.max(0, overdue.length - keep));
  const why =
    policy.catchUp === 'none'
      ? 'catch-up: none (overdue when planned)'
      : policy.catchUp === 'latest'
        ? 'catch-up: superseded by a later overdue occurrence'
        : `catch-up: more than maxCatchUpRuns (${policy.maxCatchUpRuns}) overdue`;
  for (const i of dropped) out[i] = { disposition: 'missed', reason: why };
  // The ones kept say so in their record: it explains why they start late.
  for (const i of overdue.slice(dropped.length)) out[i] = { disposition: 'run', reason: `${CATCH_UP_RUN_REASON} (catchUp ${policy.catchUp})` };
  return out;
}
