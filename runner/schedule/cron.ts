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
 */
import { CronExpression, CronExpressionParser, CronFieldCollection } from 'cron-parser';
import {
  DAY_MS,
  MAX_SUPPORTED_MS,
  MIN_SUPPORTED_MS,
  instantsForWall,
  isValidTimeZone,
  suggestTimeZones,
  zoneTimeline,
  type ZoneTimeline,
} from './zone.js';

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

/** Why {@link compileCron} refused its input. */
export type CronErrorCode = 'CRON_SYNTAX' | 'CRON_NEVER_FIRES' | 'CRON_TZ_PREFIX' | 'CRON_UNSUPPORTED' | 'ZONE_UNKNOWN';

/**
 * A refused cron expression or time zone. `field` names the schedule field at fault (`timeZone` for
 * `ZONE_UNKNOWN`, `cron` otherwise); `message` says what is wrong and how to fix it; `cause` holds
 * cron-parser's own error when there is one.
 */
export class CronError extends Error {
  readonly code: CronErrorCode;
  readonly field: 'cron' | 'timeZone';
  constructor(code: CronErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CronError';
    this.code = code;
    this.field = code === 'ZONE_UNKNOWN' ? 'timeZone' : 'cron';
  }
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

const MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly', '@minutely', '@secondly', '@weekdays', '@weekends'];

interface FieldInfo {
  readonly name: string;
  /** Number of distinct values (the largest sensible step). */
  readonly size: number;
  readonly range: string;
  /** What may be written in the field besides the forms every field takes (see {@link EVERY_FIELD}). */
  readonly values: string;
}
/** Forms every field takes. */
const EVERY_FIELD = '* (any), ranges a-b, steps */n, a-b/n and a/n, lists a,b,c, and H (hashed)';
const SECOND: FieldInfo = { name: 'second', size: 60, range: '0-59', values: 'numbers 0-59' };
const FIVE_FIELDS: readonly FieldInfo[] = [
  { name: 'minute', size: 60, range: '0-59', values: 'numbers 0-59' },
  { name: 'hour', size: 24, range: '0-23', values: 'numbers 0-23' },
  { name: 'day-of-month', size: 31, range: '1-31', values: 'numbers 1-31, L (the last day of the month), ? (= *)' },
  { name: 'month', size: 12, range: '1-12', values: 'numbers 1-12 or names jan-dec' },
  {
    name: 'day-of-week',
    size: 7,
    range: '0-7',
    values: 'numbers 0-7 (0 and 7 are Sunday) or names sun-sat, nL (the last weekday n of the month, e.g. 5L), n#k (the k-th weekday n, e.g. 1#2 = the second Monday), ? (= *)',
  },
];

/** The fields of a 5- or 6-field expression. */
const fieldsOf = (parts: readonly string[]): readonly FieldInfo[] => (parts.length === 6 ? [SECOND, ...FIVE_FIELDS] : FIVE_FIELDS);

/** A refusal that names the field in words, what is wrong with it, and what the field allows. */
function fieldError(shown: string, info: FieldInfo, part: string, why: string, cause?: unknown): CronError {
  return new CronError(
    'CRON_SYNTAX',
    `cron ${shown}: the ${info.name} field ${JSON.stringify(part)} ${why}; use what the ${info.name} field allows: ${info.values}; ${EVERY_FIELD}`,
    cause === undefined ? undefined : { cause },
  );
}
const HOW_TO_WRITE =
  'write 5 fields "minute hour day-of-month month day-of-week" (e.g. "*/15 * * * *", "30 2 * * 1-5"), ' +
  `6 with seconds first (e.g. "*/10 * * * * *"), or one of ${MACROS.join(', ')}`;

/** Instants handled: a margin inside what ./zone.ts supports, so that padded segment queries stay inside. */
const DOMAIN_LO_MS = MIN_SUPPORTED_MS + 8 * DAY_MS;
const DOMAIN_HI_MS = MAX_SUPPORTED_MS - 8 * DAY_MS;
/** Search horizon of next/last: longer than the 400-year Gregorian cycle after which every calendar repeats. */
const SEARCH_LIMIT_MS = 401 * 366 * DAY_MS;
/** Segments are fetched this far around a window, so that walls near its ends are classified correctly. */
const PAD_MS = 3 * DAY_MS;
/**
 * A window stops after this many wall times (once it covers its first instants). Small, because a replica keeps
 * one compiled expression per distinct (cron, zone) and 100k of them must fit in memory: 128 instants × 2 windows
 * is ~2 KB per expression, and a miss (~20 µs) is then paid once per 128 sequential due times.
 */
const WINDOW_WALLS = 128;
const MIN_SPAN_MS = 60_000;
const MAX_SPAN_MS = 366 * DAY_MS;
/** Windows kept per expression (a small LRU), so interleaved lookups at two places do not recompute. */
const CACHED_WINDOWS = 2;

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

function compileCronUncached(expression: string, timeZone: string, opts: CompileCronOptions): DueTimes {
  if (typeof expression !== 'string') throw new CronError('CRON_SYNTAX', `the cron expression must be a string; ${HOW_TO_WRITE}`);
  const expr = expression.trim();
  const shown = JSON.stringify(expr);
  if (expr === '') throw new CronError('CRON_SYNTAX', `the cron expression is empty; ${HOW_TO_WRITE}`);

  const prefix = /^(CRON_TZ|TZ)\s*=\s*(\S*)\s*(.*)$/i.exec(expr);
  if (prefix) {
    throw new CronError(
      'CRON_TZ_PREFIX',
      `cron ${shown}: a ${prefix[1]}= prefix is not supported; put the zone in the timeZone field ` +
        `(timeZone: ${prefix[2] || '<zone>'}) and write the cron without it (${JSON.stringify(prefix[3] ?? '')})`,
    );
  }

  let body = expr;
  if (expr.startsWith('@')) {
    const macro = expr.toLowerCase();
    if (macro === '@reboot') {
      throw new CronError(
        'CRON_UNSUPPORTED',
        `cron ${shown}: @reboot has no due time (cronflock schedules by the clock, not by process start); ` +
          'run start-up work from your deployment instead, or give a time such as "@daily"',
      );
    }
    if (!MACROS.includes(macro)) throw new CronError('CRON_SYNTAX', `cron ${shown}: unknown macro; ${HOW_TO_WRITE}`);
    body = macro;
  } else {
    checkFields(expr, shown);
  }

  const hashSeed = opts.hashSeed ? opts.hashSeed : `${expr}@${timeZone}`;
  let parsed: CronExpression;
  try {
    parsed = CronExpressionParser.parse(body, { tz: 'UTC', hashSeed, strict: false });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (/explicit day of month/i.test(why)) throw neverFires(shown, expr, err);
    throw faultyField(expr, shown, hashSeed, err) ??
      new CronError('CRON_SYNTAX', `cron ${shown} is not valid: its fields are valid one by one but not together; ${HOW_TO_WRITE}`, { cause: err });
  }

  if (typeof timeZone !== 'string' || !isValidTimeZone(timeZone)) {
    const zone = String(timeZone);
    const near = typeof timeZone === 'string' ? suggestTimeZones(timeZone) : [];
    const hint = near.length > 0 ? `did you mean ${near.map((n) => JSON.stringify(n)).join(' or ')}? ` : '';
    throw new CronError(
      'ZONE_UNKNOWN',
      `time zone ${JSON.stringify(zone)} is not a known IANA time zone; ${hint}` +
        'use a tz database name such as "Europe/Berlin", "America/New_York" or "UTC" (offsets such as "+02:00" are not zones)',
    );
  }

  const due = new CronDueTimes(expr, timeZone, parsed);
  // The calendar repeats every 400 years: no matching day within them means none ever.
  if (due.firstMatchingDayMs(Date.UTC(2000, 0, 1)) === null) throw neverFires(shown, expr);
  return due;
}

/**
 * The first field that cron-parser refuses on its own (every other field `*`), as a refusal in our words: the field's
 * name, what is wrong (from cron-parser's message, translated), and what the field allows. cron-parser's own words
 * ("got range NaN-2") stay in `cause`. Undefined when every field parses alone.
 */
function faultyField(expr: string, shown: string, hashSeed: string, cause: unknown): CronError | undefined {
  const parts = expr.split(/\s+/);
  const infos = fieldsOf(parts);
  for (let i = 0; i < parts.length; i++) {
    const probe = parts.map((p, j) => (j === i ? p : '*')).join(' ');
    try {
      CronExpressionParser.parse(probe, { tz: 'UTC', hashSeed, strict: false });
    } catch (err) {
      const info = infos[i]!;
      return fieldError(shown, info, parts[i]!, fieldProblem(info, parts[i]!, err instanceof Error ? err.message : String(err)), cause);
    }
  }
  return undefined;
}

/** cron-parser's complaint about one field, in words (never its own: "Constraint error, got range NaN-2 …"). */
function fieldProblem(info: FieldInfo, part: string, why: string): string {
  let m: RegExpExecArray | null;
  if (/cannot repeat at every 0|step: 0/i.test(why)) return 'has a step of 0, which never advances; use a step of 1 or more';
  if (info.name === 'day-of-month' && /L/i.test(part) && !/^L$/i.test(part)) {
    return `uses "L" in a way that is not supported${/L-\d/i.test(part) ? ' ("L-n", n days before the last day, is not)' : ''}; only "L" alone, the last day of the month, is`;
  }
  if ((m = /Invalid range: ([^,\s]+), min\((\d+)\) > max\((\d+)\)/i.exec(why))) {
    return `has the range ${m[1]}, which runs backwards; write the smaller value first (ranges do not wrap around: use a list such as 22-23,0-2)`;
  }
  if ((m = /cannot resolve alias "([^"]*)"/i.exec(why))) return `has "${m[1]}", which is not a name this field knows`;
  if (/occurrence number/i.test(why)) return 'has "#" without a number from 1 to 5 after it (n#k is the k-th weekday n of the month)';
  if (/incompatible/i.test(why)) return 'combines "#" with a list (","), which is not supported';
  if (/standalone L/i.test(why)) return 'has "L" alone, which this field does not take; write nL for the last weekday n of the month (e.g. 5L)';
  if (/NaN/.test(why)) return 'has a range or step with a side missing; write both ends (a-b) and a number after "/"';
  if ((m = /got value (\d+) expected range/i.exec(why))) return `has the value ${m[1]}, outside ${info.range}`;
  return 'is not valid';
}

/** Field count, `W`, and steps larger than their field (which cron-parser accepts and quietly reduces). */
function checkFields(expr: string, shown: string): void {
  const parts = expr.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) {
    throw new CronError('CRON_SYNTAX', `cron ${shown} has ${parts.length} field${parts.length === 1 ? '' : 's'}; ${HOW_TO_WRITE}`);
  }
  const infos = fieldsOf(parts);
  parts.forEach((part, i) => {
    const info = infos[i] as FieldInfo;
    if (info.name === 'day-of-month' && /w/i.test(part)) {
      throw new CronError(
        'CRON_UNSUPPORTED',
        `cron ${shown}: "W" (nearest weekday, in "${part}") is not supported by cron-parser; ` +
          'list the days instead (e.g. "0 9 * * 1-5" for weekdays, "0 9 * * 1#1" for the first Monday, ' +
          '"0 9 L * *" for the last day of the month), or let the job skip days that are not weekdays',
      );
    }
    for (const item of part.split(',')) {
      const step = /\/(\d+)$/.exec(item);
      if (step && Number(step[1]) > info.size) {
        const longer =
          info.name === 'second'
            ? ' (for minutes, step the minute field, e.g. "0 */2 * * * *")'
            : info.name === 'minute'
              ? ' (for hours, step the hour field, e.g. "0 */2 * * *"; periods such as 90 minutes do not fit one cron expression)'
              : info.name === 'hour'
                ? ' (for days, step the day-of-month field, e.g. "0 0 */2 * *")'
                : '';
        throw fieldError(
          shown,
          info,
          part,
          `has the step ${step[1]} (in "${item}"), larger than the field's ${info.size} values (${info.range}), so it ` +
            `would only ever match the start of the range; use a step of at most ${info.size}${longer}`,
        );
      }
    }
  });
}

function neverFires(shown: string, expr: string, cause?: unknown): CronError {
  const parts = expr.split(/\s+/);
  const [dom, month] = parts.length === 6 ? [parts[3], parts[4]] : [parts[2], parts[3]];
  return new CronError(
    'CRON_NEVER_FIRES',
    `cron ${shown} can never fire: no date matches day-of-month "${dom ?? '?'}" in month "${month ?? '?'}" ` +
      '(February has at most 29 days; April, June, September and November have 30); ' +
      'choose days that exist in those months, add months, or use "L" for the last day of the month',
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Smallest gap (ms) between consecutive due times, sampled from the first due time after `fromMs` over up
 * to 2000 due times or 400 days, whichever comes first. Used to refuse a jitter window that reaches the next
 * due time. Gaps shortened by DST (e.g. `30 1,3 * * *` on a spring-forward day, 1 h instead of 2 h) count.
 * @param due compiled due times.
 * @param fromMs start of the sample (UTC ms, exclusive).
 * @returns the smallest gap in ms, or Infinity when fewer than 2 due times fall in the sample.
 */
export function minGapMs(due: DueTimes, fromMs: number): number {
  const limit = fromMs + 400 * DAY_MS;
  let prev = due.next(fromMs);
  if (prev === null) return Infinity;
  let min = Infinity;
  for (let count = 1; count < 2000; count++) {
    const n = due.next(prev);
    if (n === null || n > limit) break;
    if (n - prev < min) min = n - prev;
    prev = n;
  }
  return min;
}

/** All due instants in `[lo, hi)`, sorted, no duplicates. */
interface Window {
  readonly lo: number;
  readonly hi: number;
  readonly instants: readonly number[];
}

/**
 * The due times of one compiled expression.
 *
 * The set of due instants is computed in windows `[lo, hi)` of instants. For a window starting at `a`, the
 * zone's segments around it give the smallest and largest offsets `oMin`, `oMax`; every wall time in
 * `[a + oMin, b + oMax)` is enumerated (matching days from cron-parser × times of day) and mapped to instants
 * with {@link instantsForWall}; instants outside `[a, b)` are discarded. Since the mapping of a wall time does
 * not depend on the window, the union of windows is one fixed set, whatever the windows were.
 *
 * Measured on this 2-core machine (Node 20.20, tsx; see the `performance` test in cron.test.ts, which also
 * prints its figure): sequential `next()` on `*\/2 * * * * *` costs 0.1–0.4 µs amortised (0.7–1 µs in the
 * days around a DST transition, where windows enumerate an extra hour of wall times); a cache miss costs
 * ~40 µs. `0 3 * * *`: 4.6 µs sequential, ~60 µs on a miss. `0 0 29 2 *`: a miss costs ~2 ms (cron-parser
 * walks months). For comparison, cron-parser's own `next()` costs 8–13 µs (daily, secondly) to 1.3 ms
 * (yearly) per call, which is why it is asked once per matching day and not at all when every day matches.
 */
class CronDueTimes implements DueTimes {
  readonly expression: string;
  readonly timeZone: string;
  readonly fixedHour: boolean;
  readonly #zone: ZoneTimeline;
  /** cron-parser on the day fields only (time 00:00:00), in UTC, i.e. over wall-clock days. */
  readonly #days: CronExpression;
  readonly #hours: readonly number[];
  readonly #minutes: readonly number[];
  readonly #seconds: readonly number[];
  /** Day-of-month, month and day-of-week are all `*`: every day matches, no need to ask cron-parser. */
  readonly #everyDay: boolean;
  #windows: Window[] = [];
  #spanMs = DAY_MS;

  constructor(expression: string, timeZone: string, parsed: CronExpression) {
    this.expression = expression;
    this.timeZone = timeZone;
    const f = parsed.fields;
    this.#hours = [...f.hour.values].sort((a, b) => a - b);
    this.#minutes = [...f.minute.values].sort((a, b) => a - b);
    this.#seconds = [...f.second.values].sort((a, b) => a - b);
    this.fixedHour = new Set(this.#hours).size < 24;
    this.#everyDay = f.dayOfMonth.isWildcard && f.dayOfWeek.isWildcard && new Set(f.month.values).size === 12;
    this.#zone = zoneTimeline(timeZone);
    const dayFields = CronFieldCollection.from(f, { second: [0], minute: [0], hour: [0] });
    this.#days = new CronExpression(dayFields, { tz: 'UTC', currentDate: new Date(0) });
  }

  next(afterMs: number): number | null {
    assertFinite(afterMs, 'afterMs');
    let a = Math.max(Math.floor(afterMs) + 1, DOMAIN_LO_MS);
    const cached = this.#cachedWindow(a);
    if (cached) {
      const i = lowerBound(cached.instants, a);
      if (i < cached.instants.length) return cached.instants[i]!;
      a = cached.hi;
    }
    const limit = Math.min(a + SEARCH_LIMIT_MS, DOMAIN_HI_MS);
    while (a < limit) {
      const w = this.#window(a, limit);
      if (w.instants.length > 0) {
        this.#remember(w);
        return w.instants[0]!;
      }
      a = w.hi;
    }
    return null;
  }

  last(atMs: number): number | null {
    assertFinite(atMs, 'atMs');
    const end = Math.min(Math.floor(atMs) + 1, DOMAIN_HI_MS); // due times < end
    let hi = end;
    for (const w of this.#windows) {
      if (w.lo < end && end <= w.hi) {
        const i = lowerBound(w.instants, end) - 1;
        if (i >= 0) return w.instants[i]!;
        hi = w.lo;
        break;
      }
    }
    const stop = Math.max(end - SEARCH_LIMIT_MS, DOMAIN_LO_MS);
    let span = Math.max(MIN_SPAN_MS, Math.min(this.#spanMs, DAY_MS));
    while (hi > stop) {
      const lo = Math.max(hi - span, stop);
      let best: number | null = null;
      for (let a = lo; a < hi; ) {
        const w = this.#window(a, hi);
        const i = lowerBound(w.instants, hi) - 1;
        if (i >= 0) best = w.instants[i]!;
        a = w.hi;
      }
      if (best !== null) return best;
      hi = lo;
      span = Math.min(span * 2, 64 * 366 * DAY_MS);
    }
    return null;
  }

  /**
   * First matching day (wall ms of its midnight) at or after the wall day containing `wallMs`, or null when
   * cron-parser finds none within its loop limit (10,000 steps, i.e. at least decades).
   */
  firstMatchingDayMs(wallMs: number): number | null {
    const day = Math.floor(wallMs / DAY_MS) * DAY_MS;
    if (this.#everyDay) return day;
    this.#days.reset(new Date(day - 1));
    try {
      return this.#days.next().getTime();
    } catch (err) {
      if (err instanceof Error && /loop limit|time span/i.test(err.message)) return null;
      throw err;
    }
  }

  #cachedWindow(a: number): Window | undefined {
    const ws = this.#windows;
    for (let i = 0; i < ws.length; i++) {
      const w = ws[i]!;
      if (w.lo <= a && a < w.hi) {
        if (i > 0) {
          ws.splice(i, 1);
          ws.unshift(w);
        }
        return w;
      }
    }
    return undefined;
  }

  #remember(w: Window): void {
    this.#windows.unshift(w);
    if (this.#windows.length > CACHED_WINDOWS) this.#windows.pop();
  }

  /** All due instants in `[a, hi)` for some `hi > a` (≤ `maxB` unless the window is empty). */
  #window(a: number, maxB: number): Window {
    // Any due instant t ≥ a comes from a wall time W > t − 1 day ≥ a − 1 day (|offset| < 1 day). If the first
    // matching day at or after a − 1 day is d, no wall time lies in [a − 1 day, d), so no instant in [a, d − 1 day).
    const d = this.firstMatchingDayMs(a - DAY_MS);
    if (d === null) return { lo: a, hi: Infinity, instants: [] };
    if (d - DAY_MS > a) return { lo: a, hi: d - DAY_MS, instants: [] };

    const b0 = Math.min(a + this.#spanMs, maxB);
    const segs = this.#zone.segments(a - PAD_MS, b0 + PAD_MS);
    let oMin = Infinity;
    let oMax = -Infinity;
    for (const s of segs) {
      if (s.offsetMs < oMin) oMin = s.offsetMs;
      if (s.offsetMs > oMax) oMax = s.offsetMs;
    }
    const walls: number[] = [];
    const end = this.#enumerateWalls(a + oMin, b0 + oMax, a + oMax, walls);
    // Instants below hi come from walls below hi + oMax ≤ end: all enumerated.
    const hi = end === Infinity ? Infinity : Math.min(b0, end - oMax);

    const mapped: number[] = [];
    for (const w of walls) instantsForWall(segs, w, this.fixedHour, mapped);
    mapped.sort((x, y) => x - y);
    const instants: number[] = [];
    for (const t of mapped) {
      if (t >= a && t < hi && t !== instants[instants.length - 1]) instants.push(t);
    }

    // Aim for a few hundred walls per window next time.
    if (end < b0 + oMax) this.#spanMs = Math.max(MIN_SPAN_MS, Math.min(hi - a, MAX_SPAN_MS));
    else if (walls.length < WINDOW_WALLS / 4) this.#spanMs = Math.min(this.#spanMs * 2, MAX_SPAN_MS);
    return { lo: a, hi, instants };
  }

  /**
   * Appends the wall times in `[wa, wb)` to `walls`, in order, stopping early once {@link WINDOW_WALLS} of
   * them are ≥ `minStopWall` (those before it only serve instants at the window's start).
   * @returns `end` such that every wall time in `[wa, end)` was appended (`end` may exceed `wb` when the
   *   next matching day lies beyond it; Infinity when cron-parser finds no further matching day).
   */
  #enumerateWalls(wa: number, wb: number, minStopWall: number, walls: number[]): number {
    const H = this.#hours;
    const M = this.#minutes;
    const S = this.#seconds;
    let day = Math.floor(wa / DAY_MS) * DAY_MS;
    let fromMs = wa - day;
    let counted = 0;
    for (;;) {
      const d = this.firstMatchingDayMs(day);
      if (d === null) return Infinity;
      if (d >= wb) return d;
      // Odometer over hour × minute × second, starting at the first time of day ≥ fromMs.
      let ih = 0;
      let im = 0;
      let is = 0;
      if (d === day && fromMs > 0) {
        const sec = Math.ceil(fromMs / 1000);
        const h = Math.floor(sec / 3600);
        const m = Math.floor((sec % 3600) / 60);
        ih = lowerBound(H, h);
        if (H[ih] === h) {
          im = lowerBound(M, m);
          if (M[im] === m) {
            is = lowerBound(S, sec % 60);
            if (is === S.length) {
              is = 0;
              im++;
            }
          }
          if (im === M.length) {
            im = 0;
            ih++;
          }
        }
      }
      while (ih < H.length) {
        const w = d + ((H[ih]! * 60 + M[im]!) * 60 + S[is]!) * 1000;
        if (w >= wb) return wb;
        walls.push(w);
        if (w >= minStopWall && ++counted >= WINDOW_WALLS) return w + 1;
        if (++is === S.length) {
          is = 0;
          if (++im === M.length) {
            im = 0;
            ih++;
          }
        }
      }
      day = d + DAY_MS;
      fromMs = 0;
    }
  }
}

function assertFinite(v: number, name: string): void {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`${name} must be a finite number of ms, got ${String(v)}`);
}

/** Index of the first element ≥ x in a sorted array (its length when none). */
function lowerBound(arr: readonly number[], x: number): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
