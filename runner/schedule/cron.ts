/**
 * INTERFACE STUB (to be implemented): due times of a cron expression in an IANA time zone.
 */
export interface DueTimes {
  /** The first due time strictly after `afterMs` (UTC ms), or null when none exists in the search limit. */
  next(afterMs: number): number | null;
  /** The latest due time at or before `atMs` (UTC ms), or null. Agrees with forward iteration. */
  last(atMs: number): number | null;
  /** True when the hour field is not a wildcard (decides the DST policy, RFC 5545 §3.3.5). */
  readonly fixedHour: boolean;
}
