/**
 * Redis turns (engine/options.ts `redisTurnMs`): the instants, on the Redis clock, at which every replica sends
 * its on-time claims and its finishes. Being multiples of the turn, they are the same on every replica without
 * any coordination, so the calls of one turn reach Redis together and share its wake-ups.
 */

/**
 * The first turn at or after `atMs`.
 * @param atMs an instant on the Redis clock (ms since the epoch)
 * @param turnMs the turn (ms, > 0)
 * @returns the smallest multiple of `turnMs` that is ≥ `atMs` (ms)
 */
export function nextTurnMs(atMs: number, turnMs: number): number {
  return Math.ceil(atMs / turnMs) * turnMs;
}
