/**
 * Calendars: named sets of local days, each in its own IANA time zone (pure logic, no I/O).
 *
 * A calendar answers "is this instant on one of my days?" by taking the instant's local date in the calendar's
 * zone: a day is a local day there (00:00 to 24:00 wall time, 23 or 25 hours long on DST days). What a cron
 * cannot write is written here: explicit dates, yearly dates, date ranges, weekdays, days of an iCalendar file
 * (ics.ts), and set algebra over other calendars (`include`: union, `exclude`: minus), then optionally `nth`:
 * only the nth matching day of each month (1 the first, -1 the last), e.g. the last business day.
 *
 * Rules, in this order (see README "Calendars and blackout windows"):
 * 1. the *days* of a calendar are the union of its own sources (dates, yearly, ranges, weekdays, ics) and of its
 *    `include` calendars; a calendar with neither has every day;
 * 2. minus every instant an `exclude` calendar contains;
 * 3. with `nth`, only the nth day of each month (in the calendar's zone) that is left after 1 and 2.
 * A referenced calendar keeps its own zone: `business-days` in Europe/Berlin that excludes `holidays-us` in
 * America/New_York excludes the instants of a US holiday, i.e. from 06:00 Berlin time on that date. `nth`
 * counts days of the calendar's own zone; where the calendars it looks through have other zones, a day
 * counts when the calendar contains its local noon.
 *
 * Cost: a calendar whose whole tree is in one zone is a function of the local day, memoized per day (a map
 * lookup after the first call); months for `nth` are memoized too. Compiled once per load and shared by every
 * schedule that names it (a million schedules can share a few calendars).
 */
import { DAY_MS, instantsForWall, zoneTimeline, type ZoneTimeline } from './zone.js';

/** A local day: days since 1970-01-01 of the wall calendar (day 0 is a Thursday). */
export type DayNumber = number;

/** Weekday names as written in schedule files, index = JavaScript's getUTCDay (0 = Sunday). */
export const WEEKDAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

/** The most memoized days per calendar before the memo is cleared (bounded memory, ~27 years of days). */
const MEMO_LIMIT = 10_000;

/** `YYYY-MM-DD` (years 1000-9998) to its day number; null when it is not a real date (2026-02-30). */
export function parseIsoDay(text: string): DayNumber | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1000 || y > 9998) return null;
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return null;
  return ms / DAY_MS;
}

/** `MM-DD` (a yearly date; 02-29 is allowed and matches in leap years only) to [month 1-12, day]; null if invalid. */
export function parseMonthDay(text: string): [number, number] | null {
  const m = /^(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  const [mo, d] = [Number(m[1]), Number(m[2])];
  if (mo < 1 || mo > 12 || d < 1) return null;
  const days = new Date(Date.UTC(2024, mo, 0)).getUTCDate(); // 2024: a leap year, so 02-29 passes
  return d <= days ? [mo, d] : null;
}

/**
 * Weekday items (`MON`, `mon`, `Monday`, or a range `MON-FRI`, wrapping `FRI-MON`) to weekday indexes
 * (0 = Sunday). @returns null when an item is not one.
 */
export function parseWeekday(item: string): number[] | null {
  const one = (s: string): number | null => {
    const i = WEEKDAY_NAMES.indexOf(s.trim().slice(0, 3).toUpperCase() as (typeof WEEKDAY_NAMES)[number]);
    if (i < 0) return null;
    const full = ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY'][i]!;
    const t = s.trim().toUpperCase();
    return t.length === 3 || t === full ? i : null;
  };
  const parts = item.split('-');
  if (parts.length === 1) {
    const i = one(item);
    return i === null ? null : [i];
  }
  if (parts.length !== 2) return null;
  const [a, b] = [one(parts[0]!), one(parts[1]!)];
  if (a === null || b === null) return null;
  const out: number[] = [];
  for (let i = a; ; i = (i + 1) % 7) {
    out.push(i);
    if (i === b) break;
  }
  return out;
}

/** The date of a day number as `YYYY-MM-DD`. */
export function formatDay(day: DayNumber): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** Local day of instant `atMs` in `zone`. */
export function localDay(zone: ZoneTimeline, atMs: number): DayNumber {
  return Math.floor(zone.wallAtMs(atMs) / DAY_MS);
}

/**
 * The first instant (UTC ms) of local day `day` in `zone`: local midnight, or, when midnight falls in a DST
 * gap, the instant the clocks jump past it (RFC 5545 §3.3.5, as cron.ts reads a missing fixed hour).
 */
export function dayStartMs(zone: ZoneTimeline, day: DayNumber): number {
  return wallToInstantMs(zone, day * DAY_MS);
}

/** The instant of local noon of `day` in `zone` (a gap or fold at noon reads as cron.ts reads a fixed hour). */
export function noonMs(zone: ZoneTimeline, day: DayNumber): number {
  return wallToInstantMs(zone, day * DAY_MS + DAY_MS / 2);
}

/**
 * The instant (UTC ms) of wall time `wallMs` (naive local ms, see zone.ts) in `zone`, read as cron.ts reads a
 * fixed hour (RFC 5545 §3.3.5): in a DST gap with the offset before it, in a fold the first pass.
 */
export function wallToInstantMs(zone: ZoneTimeline, wallMs: number): number {
  const out: number[] = [];
  instantsForWall(zone.segments(wallMs - 2 * DAY_MS, wallMs + 2 * DAY_MS), wallMs, true, out);
  return out[0] ?? wallMs - zone.offsetAtMs(wallMs);
}

/** The own day sources of a calendar, already parsed (the loader turns file text into this). */
export interface DaySources {
  /** Explicit dates. */
  dates?: readonly DayNumber[];
  /** Yearly dates as [month 1-12, day]. */
  yearly?: readonly (readonly [number, number])[];
  /** Inclusive ranges [from, to] of days. */
  ranges?: readonly (readonly [DayNumber, DayNumber])[];
  /** Weekday indexes, 0 = Sunday. */
  weekdays?: readonly number[];
  /** More days, e.g. those of an iCalendar file (see ics.ts): a pure function of the day. */
  extra?: readonly ((day: DayNumber) => boolean)[];
}

/** What {@link Calendar} is built from. */
export interface CalendarInit extends DaySources {
  /** The calendar's name, used in reasons (`skipped: calendar holidays`). */
  name: string;
  /** IANA zone its days are local days of. */
  timeZone: string;
  /** Calendars whose days are added (union). */
  include?: readonly Calendar[];
  /** Calendars whose instants are taken away. */
  exclude?: readonly Calendar[];
  /** Keep only these ranks among the matching days of each month: 1 = first, -1 = last (never 0). */
  nth?: readonly number[];
}

/** A compiled calendar. Build with `new Calendar(init)` after its include/exclude calendars. */
export class Calendar {
  readonly name: string;
  readonly timeZone: string;
  readonly #zone: ZoneTimeline;
  readonly #own: ((day: DayNumber) => boolean) | null;
  readonly #include: readonly Calendar[];
  readonly #exclude: readonly Calendar[];
  readonly #nth: readonly number[] | null;
  /** True when every calendar below this one has the same zone: then the calendar is a function of the day. */
  readonly #uniform: boolean;
  readonly #memo = new Map<DayNumber, boolean>();
  readonly #months = new Map<number, readonly DayNumber[]>();

  /** @throws RangeError when `timeZone` is unknown or `nth` holds 0. */
  constructor(init: CalendarInit) {
    this.name = init.name;
    this.timeZone = init.timeZone;
    this.#zone = zoneTimeline(init.timeZone);
    this.#own = ownDays(init);
    this.#include = init.include ?? [];
    this.#exclude = init.exclude ?? [];
    if (init.nth?.some((n) => n === 0 || !Number.isInteger(n))) throw new RangeError('nth must be a whole number other than 0');
    this.#nth = init.nth && init.nth.length > 0 ? [...init.nth] : null;
    this.#uniform = [...this.#include, ...this.#exclude].every((c) => c.#uniform && c.timeZone === this.timeZone);
  }

  /** True when instant `atMs` (UTC ms) lies on one of this calendar's days. */
  contains(atMs: number): boolean {
    const day = localDay(this.#zone, atMs);
    if (this.#uniform || this.#nth) return this.containsDay(day);
    return this.#baseAt(atMs, day);
  }

  /**
   * True when local day `day` of this calendar's zone is one of its days. Exact when all calendars below share
   * the zone; otherwise decided at the day's local noon.
   */
  containsDay(day: DayNumber): boolean {
    const known = this.#memo.get(day);
    if (known !== undefined) return known;
    const v = this.#nth ? this.#nthDay(day) : this.#baseDay(day);
    if (this.#memo.size >= MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(day, v);
    return v;
  }

  /**
   * Why `atMs` is not in this calendar: the name of the calendar that decided (an `exclude` calendar that
   * holds it, or the calendar whose days it is not on), with ` (nth …)` when only `nth` left it out; null when
   * the calendar contains it.
   */
  whyNot(atMs: number): string | null {
    if (this.contains(atMs)) return null;
    const day = localDay(this.#zone, atMs);
    const at = atMs;
    for (const c of this.#exclude) if (c.contains(at)) return c.name;
    const hasSources = this.#own !== null || this.#include.length > 0;
    if (hasSources && !(this.#own?.(day) ?? false) && !this.#include.some((c) => c.contains(at))) {
      // Not one of its days: name the include that explains it best (its own exclusion), else this calendar.
      if (this.#own === null && this.#include.length === 1) return this.#include[0]!.whyNot(at) ?? this.name;
      return this.name;
    }
    return `${this.name} (not day ${this.#nth!.join(' or ')} of the month)`;
  }

  /** Union of own and included days, minus excluded, for day `day` (no nth). */
  #baseDay(day: DayNumber): boolean {
    if (!this.#uniform) return this.#baseAt(noonMs(this.#zone, day), day);
    const inSet = this.#own === null && this.#include.length === 0 ? true : (this.#own?.(day) ?? false) || this.#include.some((c) => c.containsDay(day));
    return inSet && !this.#exclude.some((c) => c.containsDay(day));
  }

  #baseAt(atMs: number, day: DayNumber): boolean {
    const inSet = this.#own === null && this.#include.length === 0 ? true : (this.#own?.(day) ?? false) || this.#include.some((c) => c.contains(atMs));
    return inSet && !this.#exclude.some((c) => c.contains(atMs));
  }

  #nthDay(day: DayNumber): boolean {
    const date = new Date(day * DAY_MS);
    const monthKey = date.getUTCFullYear() * 12 + date.getUTCMonth();
    let matching = this.#months.get(monthKey);
    if (!matching) {
      const first = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / DAY_MS;
      const next = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / DAY_MS;
      const list: DayNumber[] = [];
      for (let d = first; d < next; d++) if (this.#baseDay(d)) list.push(d);
      matching = list;
      if (this.#months.size >= MEMO_LIMIT / 30) this.#months.clear();
      this.#months.set(monthKey, matching);
    }
    return this.#nth!.some((n) => (n > 0 ? matching[n - 1] : matching[matching.length + n]) === day);
  }
}

/** The own sources as one day test, or null when the calendar has none. */
function ownDays(s: DaySources): ((day: DayNumber) => boolean) | null {
  const tests: ((day: DayNumber) => boolean)[] = [];
  if (s.dates && s.dates.length > 0) {
    const set = new Set(s.dates);
    tests.push((d) => set.has(d));
  }
  if (s.yearly && s.yearly.length > 0) {
    const set = new Set(s.yearly.map(([m, d]) => m * 100 + d));
    tests.push((d) => {
      const date = new Date(d * DAY_MS);
      return set.has((date.getUTCMonth() + 1) * 100 + date.getUTCDate());
    });
  }
  if (s.ranges && s.ranges.length > 0) {
    const ranges = s.ranges.map(([a, b]) => [a, b] as const);
    tests.push((d) => ranges.some(([a, b]) => d >= a && d <= b));
  }
  if (s.weekdays && s.weekdays.length > 0) {
    const set = new Set(s.weekdays);
    tests.push((d) => set.has(weekdayOf(d)));
  }
  for (const extra of s.extra ?? []) tests.push(extra);
  if (tests.length === 0) return null;
  return tests.length === 1 ? tests[0]! : (d) => tests.some((t) => t(d));
}

/** Weekday index (0 = Sunday) of a day number. */
export function weekdayOf(day: DayNumber): number {
  return (((day + 4) % 7) + 7) % 7;
}

/**
 * A schedule's view of the calendars: `calendar: {include, exclude, nth}` in a schedule file, read in the
 * schedule's zone (for `nth`). Built as an unnamed calendar over the named ones; the reason of an exclusion
 * names the calendar that decided, never the schedule.
 */
export class CalendarSelection {
  readonly #cal: Calendar;

  constructor(o: { timeZone: string; include: readonly Calendar[]; exclude: readonly Calendar[]; nth?: readonly number[] }) {
    this.#cal = new Calendar({ name: o.include.map((c) => c.name).join('+') || 'calendar', timeZone: o.timeZone, include: o.include, exclude: o.exclude, ...(o.nth ? { nth: o.nth } : {}) });
  }

  /** True when due time `dueMs` is allowed. */
  allows(dueMs: number): boolean {
    return this.#cal.contains(dueMs);
  }

  /** `calendar <name>` for an excluded due time (the calendar that decided), null for an allowed one. */
  exclusion(dueMs: number): string | null {
    const why = this.#cal.whyNot(dueMs);
    if (why === null) return null;
    return `calendar ${why}`;
  }
}
