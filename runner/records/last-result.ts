/**
 * The latest final state of each schedule, flock-wide, as the scripts keep it in `{ns}:lastresult` (one field
 * per schedule, written atomically with every final state: runner/redis/lua/includes/last-result.lua). What the health
 * metrics read for `cronflock_schedule_last_result` and `cronflock_schedule_consecutive_failures`: one HSCAN
 * page covers hundreds of schedules, where reading run records would cost several commands per schedule.
 */

/** A schedule's latest final state. Times are Redis UTC ms. */
export interface LastResult {
  state: 'succeeded' | 'failed' | 'missed' | 'skipped';
  /** Occurrences that ended `failed` since the latest `succeeded` (missed and skipped ones neither add nor reset). */
  consecutiveFailures: number;
  /** Due time of the occurrence that ended last; NaN when unknown. */
  dueMs: number;
  /** When it became final. */
  endMs: number;
  reason: string;
}

const STATES = new Set<string>(['succeeded', 'failed', 'missed', 'skipped']);

/**
 * Parses one field value `<consecutive failures>|<state>|<dueMs>|<endMs>|<reason>`.
 * @returns undefined for a value this version cannot read (written by another version, or damaged).
 */
export function parseLastResult(raw: string): LastResult | undefined {
  const parts = raw.split('|');
  if (parts.length < 5 || !STATES.has(parts[1]!)) return undefined;
  const consecutiveFailures = Number(parts[0]);
  const endMs = Number(parts[3]);
  if (!Number.isInteger(consecutiveFailures) || !Number.isFinite(endMs)) return undefined;
  return {
    state: parts[1] as LastResult['state'],
    consecutiveFailures,
    dueMs: parts[2] === '' ? NaN : Number(parts[2]),
    endMs,
    reason: parts.slice(4).join('|'),
  };
}
