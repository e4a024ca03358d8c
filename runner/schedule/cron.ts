/**
 * Due times of a cron expression in an IANA time zone (pure logic, no I/O).
 *
 * Design: cron-parser 5 parses the expression and walks the *calendar* (which days match: day-of-month,
 * month, day-of-week, `L`, `#`, `H`) in UTC only, on wall-clock time: a naive local date-time represented as
 * UTC ms, so cron-parser never does any zone or DST arithmetic (its own DST handling is wrong around
 * transitions: `next()` from inside a repeated hour returns the second pass of a fixed-hour slot, and
 * `prev()` is wrong, cron-parser issue #378). Times of day come from the parsed second/minute/hour values.
 * Wall times are then mapped to instants by ./zone.ts with our DST policy (RFC 5545 §3.3.5):
 * - gap (spring forward): a wall time that does not exist fires once, read with the offset in force before
 *   the gap (02:30 → 03:30 summer time) when the hour field is fixed; it is dropped when the hour is `*`;
 * - fold (fall back): a repeated wall time fires only in the first pass when the hour field is fixed; in both
 *   passes when the hour is `*` (an hourly job still runs every real hour, no instant repeats).
 *
 * The due times are one fixed, strictly increasing set of instants; `next` and `last` are lookups in that
 * set, computed in windows (see {@link CronDueTimes}), so `next` is monotone in its argument and does not
 * depend on where a search starts or on what was asked before.
 *
 * Day-of-month and day-of-week combine with the Vixie cron rule (crontab(5)): when both are restricted a
 * day matches if EITHER matches; when one is `*` (or `?`) only the other counts. cron-parser implements it.
 * Note that cron-parser treats `*\/2` in a day field as restricted (Vixie treats any field starting with `*`
 * as unrestricted); cronflock follows cron-parser.
 *
 * This module compiles and shares compiled expressions; validation and its messages live in ./cron-syntax.ts,
 * due-time iteration in ./cron-due.ts.
 */
import { CronDueTimes } from './cron-due.js';
import { neverFires, parseCron } from './cron-syntax.js';
import { isValidTimeZone } from './zone.js';

export { CronError, type CronErrorCode } from './cron-syntax.js';
export { minGapMs } from './cron-due.js';

/**
 * True when `tz` names a time zone this Node's tz database knows (case-insensitive, as ECMA-402). Offset
 * strings (`+05:00`) and the empty string are refused. Re-exported from ./zone.ts.
 */
export { isValidTimeZone };

/**
 * The due times of one schedule: a fixed, strictly increasing set of instants (UTC ms, whole seconds).
 * Instances come from {@link compileCron}, which hands the same instance to every schedule with the same
 * expression and zone; they cache computed windows and are not safe to share across worker threads (they are
 * fine to share within one thread).
 */
export interface DueTimes {
  /**
   * The first due time strictly after `afterMs` (UTC ms), or null when there is none within 401 years
   * (longer than the 400-year Gregorian cycle, so null means "never again") or before year 9999.
   * Monotone in `afterMs` and independent of earlier calls.
   * @throws TypeError when `afterMs` is not a finite number.
   */
  next(afterMs: number): number | null;
  /**
   * The latest due time at or before `atMs` (UTC ms), or null when there is none within 401 years before.
   * Agrees with forward iteration: `next(last(t) - 1) === last(t)` and `next(last(t))` is after `t`.
   * @throws TypeError when `atMs` is not a finite number.
   */
  last(atMs: number): number | null;
  /**
   * True when the hour field is not a wildcard (it does not list all 24 hours; `*\/2` is fixed, `0-23` is
   * not). Decides the DST policy (RFC 5545 §3.3.5, see the module doc).
   */
  readonly fixedHour: boolean;
  /** The cron expression as given to {@link compileCron} (trimmed). */
  readonly expression: string;
  /** The IANA zone as given to {@link compileCron}, in which the expression's wall-clock times are read. */
  readonly timeZone: string;
}

/** Options of {@link compileCron}. */
export interface CompileCronOptions {
  /**
   * Seed for `H` (hashed) fields, so that every replica picks the same values for a schedule while different
   * schedules spread out. Pass the schedule name. Default (also for ''): the expression and zone, which is
   * deterministic but gives every schedule with the same expression the same values.
   */
  hashSeed?: string;
}
/**
 * Compiles a cron expression in a time zone into its due times. Validates eagerly, so that a config loader
 * can refuse a schedule before anything is scheduled.
 *
 * Accepted: 5 fields (minute hour day-of-month month day-of-week), 6 fields (seconds first), the macros
 * `@yearly @annually @monthly @weekly @daily @hourly @minutely @secondly @weekdays @weekends`; ranges, lists,
 * steps, names (`jan`, `mon`), `L` (last day of month / last weekday `5L`), `#` (`1#2` = second Monday),
 * `?` (= `*`), `H` (hashed, seeded by `opts.hashSeed`). Day-of-month and day-of-week combine with the Vixie
 * cron OR rule (see the module doc).
 *
 * @param expression the cron expression (surrounding whitespace ignored).
 * @param timeZone IANA zone name (`Europe/Berlin`, `UTC`) in which the expression's wall times are read.
 * @param opts `hashSeed`: see {@link CompileCronOptions}.
 * @returns the due times (see {@link DueTimes}).
 * @throws CronError with `field: 'cron'` and code
 *   - `CRON_SYNTAX`: not a cron expression (wrong number of fields, bad value, out-of-range value, a step
 *     larger than its field such as `*\/90` in minutes, which cron-parser would accept silently);
 *   - `CRON_TZ_PREFIX`: a `CRON_TZ=` or `TZ=` prefix (the zone belongs in the timeZone field);
 *   - `CRON_UNSUPPORTED`: `W` (nearest weekday) or `@reboot`;
 *   - `CRON_NEVER_FIRES`: valid but matches no date, e.g. `0 0 30 2 *`, `0 0 31 2,4 *`;
 *   or with `field: 'timeZone'` and code `ZONE_UNKNOWN` for a zone the tz database does not know.
 */
export function compileCron(expression: string, timeZone: string, opts: CompileCronOptions = {}): DueTimes {
  // Schedules that share an expression and a zone share its due times (and their window cache): what a
  // replica holds grows with distinct expressions, not with schedules. The hash seed only matters for `H`.
  const cacheKey =
    typeof expression === 'string' && typeof timeZone === 'string'
      ? `${expression.trim()}\u0000${timeZone}\u0000${/h/i.test(expression) && !expression.trim().startsWith('@') ? (opts.hashSeed ?? '') : ''}`
      : undefined;
  const shared = cacheKey === undefined ? undefined : compiled.get(cacheKey)?.deref();
  if (shared) return shared;
  const due = compileCronUncached(expression, timeZone, opts);
  if (cacheKey !== undefined) {
    compiled.set(cacheKey, new WeakRef(due));
    forget.register(due, cacheKey);
  }
  return due;
}

/** Compiled expressions by (expression, zone, seed when it matters), held weakly: unused ones are collected. */
const compiled = new Map<string, WeakRef<DueTimes>>();
const forget = new FinalizationRegistry<string>((key) => {
  if (compiled.get(key)?.deref() === undefined) compiled.delete(key);
});

/** Validates (./cron-syntax.ts), builds the due times (./cron-due.ts), and refuses an expression that never fires. */
function compileCronUncached(expression: string, timeZone: string, opts: CompileCronOptions): DueTimes {
  const { expr, shown, parsed } = parseCron(expression, timeZone, opts);
  const due = new CronDueTimes(expr, timeZone, parsed);
  // The calendar repeats every 400 years: no matching day within them means none ever.
  if (due.firstMatchingDayMs(Date.UTC(2000, 0, 1)) === null) throw neverFires(shown, expr);
  return due;
}
