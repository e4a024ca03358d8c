/**
 * Where the history lives in Redis: apart from the run records (short-lived claim state, `--retention`), so that
 * what happened stays readable for `--history` (default 30 d) at a few hundred bytes per occurrence. The Lua side
 * (`attemptsWith`, `recordHistory` in runner/redis/lua/includes/history.lua) derives the same names from a run record's
 * key; keep the two in step.
 */
import type { Keyspace } from '../redis/keys.js';

/** Key names of the history of one flock (all under its hash tag, like every other key). */
export class HistoryKeys {
  constructor(private readonly keys: Keyspace) {}

  /** ZSET of a schedule's finished occurrences: member = packed entry (entry.ts), score = due time (ms). */
  history(schedule: string): string {
    return `${this.keys.ns}:hist:${schedule}`;
  }
  /** LIST of the claims of an open occurrence claimed by an older version, one packed attempt each (this version keeps them in the record field `att`); folded into its history entry when final. */
  attempts(occurrenceKey: string): string {
    return `${this.keys.ns}:att:${occurrenceKey}`;
  }
  /** HASH schedule → `<due ms>|<entry>`: its latest finished occurrence by due time. */
  get last(): string {
    return `${this.keys.ns}:last`;
  }
  /** HASH of a schedule's outcomes per hour: field `<state code><hour mod 26>` → `<hour>:<count>` (hour = ms / 3.6e6). */
  counts(schedule: string): string {
    return `${this.keys.ns}:cnt:${schedule}`;
  }
  /** LIST of the log lines of one attempt (attempt 0: engine lines about the occurrence outside an attempt). */
  log(occurrenceKey: string, attempt: number): string {
    return `${this.keys.ns}:log:${occurrenceKey}:${attempt}`;
  }
  /** HASH of flock-wide settings the scripts read: `historyMs`. */
  get config(): string {
    return `${this.keys.ns}:config`;
  }
  /** STREAM of actions taken on the flock (trigger, suspend, resume, backfill): who, when, what, why. */
  get audit(): string {
    return `${this.keys.ns}:audit`;
  }
}
