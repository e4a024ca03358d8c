/**
 * A replay guard for signed requests: remembers each accepted signature until its timestamp leaves the
 * tolerance window, and refuses the same signature a second time. Outside the window the timestamp check
 * refuses it anyway, so memory stays bounded by the requests of one window.
 */
import { DEFAULT_TOLERANCE_S } from './signature.js';

/** See {@link createReplayGuard}. */
export interface ReplayGuard {
  /** True the first time `signature` is offered (and records it); false for a replay. */
  firstUse(signature: string, timestampS: number): boolean;
}

/**
 * An in-memory replay guard for one receiver process. With several receiver processes behind a load balancer,
 * a replay can reach another process: refuse replays there with the fencing guard on a shared store, or dedupe
 * by the notification's `id`.
 * @param o.toleranceS the tolerance the signatures are checked with (default 300 s).
 */
export function createReplayGuard(o: { toleranceS?: number } = {}): ReplayGuard {
  const tolerance = o.toleranceS ?? DEFAULT_TOLERANCE_S;
  const seen = new Map<string, number>(); // signature → forget after (unix s)
  return {
    firstUse(signature, timestampS) {
      const now = Math.floor(Date.now() / 1000);
      for (const [s, until] of seen) {
        if (until >= now) break; // insertion order is roughly time order
        seen.delete(s);
      }
      if (seen.has(signature)) return false;
      seen.set(signature, timestampS + 2 * tolerance);
      return true;
    },
  };
}
