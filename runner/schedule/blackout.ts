/**
 * Blackout (maintenance) windows of a schedule, as pure functions of the definition (no I/O, no clock).
 *
 * A window is either a cron plus a duration (`[start, start + duration)` for every due time of the cron) or
 * the days of a calendar (maximal runs of consecutive days, each a whole local day in the calendar's zone).
 * Windows of one blackout that overlap or touch form one window: a delayed occurrence waits for the end of all
 * of them.
 */
import type { DueTimes } from './cron.js';
import { dayStartMs, localDay, type Calendar } from './calendar.js';
import { zoneTimeline } from './zone.js';

/** What a blackout does: see README "Calendars and blackout windows". */
export type BlackoutAction = 'skip' | 'delay' | 'abort';

/** The most windows one blackout merges when looking for the end of a window (cron windows that overlap forever). */
const MAX_MERGED = 10_000;

/** One compiled blackout of a schedule. Times are UTC ms. */
export interface BlackoutWindow {
  /** Name in reasons: `skipped: blackout <name>`. */
  readonly name: string;
  readonly action: BlackoutAction;
  /** True when instant `atMs` is inside one of the windows. */
  contains(atMs: number): boolean;
  /**
   * End (exclusive) of the window that contains `atMs`, windows that overlap or touch merged; null when `atMs`
   * is in no window, or when the window does not end within {@link MAX_MERGED} windows (calendar: 10 years).
   */
  endOf(atMs: number): number | null;
  /** The first window start strictly after `afterMs` and at most `untilMs`; null when none. */
  nextStart(afterMs: number, untilMs: number): number | null;
}

/**
 * Windows `[s, s + durationMs)` for every due time `s` of `starts`.
 *
 * Only `starts.next` is used (its windows are cached for forward queries; `last` is a search, ~1 ms for a
 * weekly cron), and the stretch of time around the latest answer — inside one window, or in the gap before the
 * next start — is remembered: the planner asks about fire times close to each other (and every schedule that
 * names the same blackout shares it), so most questions cost a comparison.
 */
export function cronBlackout(name: string, action: BlackoutAction, starts: DueTimes, durationMs: number): BlackoutWindow {
  /** Instants in [fromMs, toMs) are all inside a window (`inside`) or all outside every window. */
  let known = { fromMs: 0, toMs: 0, inside: false };
  const contains = (atMs: number): boolean => {
    if (atMs >= known.fromMs && atMs < known.toMs) return known.inside;
    // A window holds atMs exactly when one starts in (atMs - duration, atMs].
    const first = starts.next(atMs - durationMs);
    if (first !== null && first <= atMs) known = { fromMs: first, toMs: first + durationMs, inside: true };
    else {
      // No window holds atMs, and none starts before `first`: outside until then (or for good).
      known = { fromMs: atMs, toMs: first ?? Infinity, inside: false };
    }
    return known.inside;
  };
  return {
    name,
    action,
    contains,
    endOf(atMs) {
      if (!contains(atMs)) return null;
      const first = starts.next(atMs - durationMs)!;
      // Windows that start before the current one ends extend it (the latest start at or before atMs among them).
      let end = first + durationMs;
      for (let i = 0, n = starts.next(first); n !== null && n <= end; n = starts.next(n), i++) {
        if (i >= MAX_MERGED) return null;
        end = n + durationMs;
      }
      return end;
    },
    nextStart(afterMs, untilMs) {
      const n = starts.next(afterMs);
      return n !== null && n <= untilMs ? n : null;
    },
  };
}

/** Windows on the days of `calendar`: each run of consecutive days, from the first day's start to the day after the last. */
export function calendarBlackout(name: string, action: BlackoutAction, calendar: Calendar): BlackoutWindow {
  const zone = zoneTimeline(calendar.timeZone);
  return {
    name,
    action,
    contains(atMs) {
      return calendar.containsDay(localDay(zone, atMs));
    },
    endOf(atMs) {
      let day = localDay(zone, atMs);
      if (!calendar.containsDay(day)) return null;
      for (let i = 0; calendar.containsDay(day + 1); i++, day++) if (i >= 3660) return null;
      return dayStartMs(zone, day + 1);
    },
    nextStart(afterMs, untilMs) {
      let day = localDay(zone, afterMs);
      const last = localDay(zone, untilMs);
      for (let inside = calendar.containsDay(day); day < last; ) {
        day++;
        const now = calendar.containsDay(day);
        if (now && !inside) {
          const start = dayStartMs(zone, day);
          return start > afterMs && start <= untilMs ? start : null;
        }
        inside = now;
      }
      return null;
    },
  };
}
