/**
 * Due-time iteration: the fixed, strictly increasing set of instants of a parsed cron expression in a zone, looked
 * up with `next` / `last` in cached windows (DST policy and design: ./cron.ts's module doc). Validation is
 * ./cron-syntax.ts's job.
 */
import { CronExpression, CronFieldCollection } from 'cron-parser';
import type { DueTimes } from './cron.js';
import { DAY_MS, MAX_SUPPORTED_MS, MIN_SUPPORTED_MS, instantsForWall, zoneTimeline, type ZoneTimeline } from './zone.js';

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
export class CronDueTimes implements DueTimes {
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
