/**
 * What becomes of an occurrence when it is planned — run it, or record it missed/skipped with a reason — is
 * decided by the plan script on the Redis clock (runner/redis/lua/plan.lua states the rules: suspended,
 * starting deadline, catch-up). Deciding it here, on this host's estimate of Redis time, would let a stale
 * estimate (a host clock step) record final states that Redis time does not support.
 *
 * This module prepares an offer for that decision: it adds to each candidate the one fact the script cannot
 * derive alone, the fire time of the occurrence the catch-up policy's `keep` places later in the same offer.
 */

import type { PlanPolicy } from '../redis/store.js';

/**
 * Start of the reason the plan script records on a catch-up run (an overdue occurrence the catch-up policy
 * keeps; keep in step with runner/redis/lua/plan.lua). Such runs are late by definition and go to the backlog lane, not ahead of occurrences that are on time (enqueue.ts).
 */
export const CATCH_UP_RUN_REASON = 'catch-up: run late';

/** Whether a recorded reason marks a catch-up run. */
export function isCatchUpRun(reason: string | undefined): boolean {
  return reason?.startsWith(CATCH_UP_RUN_REASON) ?? false;
}

/** One occurrence to offer. Times UTC ms. */
export interface Candidate {
  dueMs: number;
  fireMs: number;
}

/** How many of the newest overdue occurrences of one offer run (catchUp none: 0, latest: 1, all: maxCatchUpRuns). */
export function catchUpKeep(policy: Pick<PlanPolicy, 'catchUp' | 'maxCatchUpRuns'>): number {
  return policy.catchUp === 'none' ? 0 : policy.catchUp === 'latest' ? 1 : Math.max(0, policy.maxCatchUpRuns);
}

/**
 * For candidates of ONE schedule in due-time order, the fire time of the candidate {@link catchUpKeep}
 * positions later (the candidate itself when keep is 0), or null when the offer has none: the plan script
 * records an overdue candidate missed exactly when that one is overdue too.
 * @returns one value per candidate, same order.
 */
export function keepFireTimes(candidates: readonly Candidate[], policy: Pick<PlanPolicy, 'catchUp' | 'maxCatchUpRuns'>): (number | null)[] {
  const keep = catchUpKeep(policy);
  return candidates.map((_, i) => candidates[i + keep]?.fireMs ?? null);
}
