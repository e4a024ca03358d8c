/**
 * Calendars and blackout windows in the engine: what they decide about an occurrence, and the blackout abort
 * of runs in flight.
 *
 * {@link windowDisposition} is a pure function of the definition and the due time — no clock — so the planner
 * applies it when it builds its offer ({@link applyWindows}), BEFORE the time-based decision the plan script makes
 * on the Redis clock (suspended / missed / catch-up, runner/redis/lua/plan.lua): an occurrence the windows skip
 * travels with that fixed final state, which the script records as is; one they delay travels with its later fire
 * time, its reason and its original fire time, and only those the windows let run take part in the catch-up count.
 *
 * Rules (README "Calendars and blackout windows"):
 * - calendar: a due time outside the schedule's calendar is `skipped: calendar <name>` (the calendar that
 *   decided: `holidays` for Christmas in `business-days` that excludes `holidays`);
 * - blackouts are checked at the FIRE time (when the run would start): inside a `skip` or `abort` window →
 *   `skipped: blackout <name>`; inside a `delay` window → it keeps its due time (its identity) and fires at the
 *   window's end plus its own jitter offset (so delayed occurrences of many schedules spread as they would at
 *   their due time); reason `delayed: blackout <name> until <end>`. A delayed fire time that lands in another
 *   window is decided again (skipped, or delayed further);
 * - a window does not pile runs up (as catch-up after downtime does not, dispositions.ts): of the occurrences
 *   delayed to the same end, only the latest runs (with `catchUp: all`, the latest `maxCatchUpRuns`); the
 *   earlier ones are `skipped: blackout <name> (a later occurrence it delayed runs instead)`. Pure too: whether
 *   later due times are delayed to the same end follows from the definition;
 * - the starting deadline of a delayed occurrence counts from its ORIGINAL fire time ("run within 30 min of
 *   when it was meant to run, or not at all"): a window that ends later than that makes it `missed`, decided
 *   here; the rest is decided on the Redis clock: the plan script counts the deadline from the original fire
 *   time it is given, the claim script from the delayed one minus the delay ({@link startingDeadlineForClaimMs});
 * - `abort`: a run in flight when an abort window opens has its AbortSignal fired and is recorded
 *   `failed: blackout <name>`, without retries ({@link armBlackoutAbort}).
 */
import type { CalendarSelection } from '../schedule/calendar.js';
import type { DueTimes } from '../schedule/cron.js';
import type { BlackoutWindow } from '../schedule/blackout.js';
import { fireTimeMs } from '../schedule/occurrence.js';
import type { PlannedDelay, PlannedFixedState } from '../redis/store.js';
import type { Candidate } from './dispositions.js';

/** What the calendar and blackout rules make of one occurrence: it runs (maybe later), or a final state. */
export interface Disposition {
  disposition: 'run' | 'missed' | 'skipped';
  reason: string;
}

/** The compiled calendar and blackouts of a schedule (built by the config loader, runner/config/calendars.ts). */
export interface ScheduleWindows {
  /** Days the schedule runs on; null: every day. */
  readonly calendar: CalendarSelection | null;
  readonly blackouts: readonly BlackoutWindow[];
}

/** The schedule fields the window rules need. */
export interface WindowedSchedule {
  name: string;
  jitterMs: number;
  startingDeadlineMs: number | null;
  due: DueTimes;
  /** How many occurrences delayed to the same window end run: `all` keeps maxCatchUpRuns, otherwise 1. */
  catchUp?: 'none' | 'latest' | 'all';
  maxCatchUpRuns?: number;
  /** Absent or null: no calendar and no blackouts. */
  windows?: ScheduleWindows | null;
}

/** What the calendar and blackout rules decide; `fireMs` is the (possibly delayed) fire time. */
export interface WindowDecision extends Disposition {
  fireMs: number;
}

/** The most later due times looked at to find those delayed to the same window end (then it just runs). */
const MAX_LOOKED_AT = 10_000;
/** The most windows a delayed occurrence is moved through before it is skipped (windows back to back). */
const MAX_HOPS = 100;

/**
 * Decides an occurrence by the schedule's calendar and blackouts; clock-free.
 * @param dueMs the due time (UTC ms); @param fireMs its fire time (due + jitter offset).
 * @returns `run` (reason '' or `delayed: …`, fireMs maybe later), `skipped` (calendar / blackout) or `missed`
 *   (delayed past its starting deadline).
 */
export function windowDisposition(s: WindowedSchedule, dueMs: number, fireMs: number): WindowDecision {
  const d = delayDisposition(s, dueMs, fireMs);
  if (d.disposition !== 'run' || d.delayedBy === undefined) return strip(d);
  // Coalesce: skip this one when enough later due times are delayed to the same window end.
  const keep = s.catchUp === 'all' ? Math.max(1, s.maxCatchUpRuns ?? 1) : 1;
  const end = d.delayedBy.untilMs;
  let later = 0;
  for (let n = s.due.next(dueMs), seen = 0; n !== null && later < keep && seen < MAX_LOOKED_AT; n = s.due.next(n), seen++) {
    const nf = fireTimeMs(s.name, n, s.jitterMs);
    if (nf >= end) break; // fires after the window: not delayed by it
    const o = delayDisposition(s, n, nf);
    if (o.disposition === 'run' && o.delayedBy?.untilMs === end) later++;
  }
  if (later >= keep) return { disposition: 'skipped', reason: `blackout ${d.delayedBy.name} (a later occurrence it delayed runs instead)`, fireMs };
  return strip(d);
}

function strip(d: WindowDecision & { delayedBy?: unknown }): WindowDecision {
  return { disposition: d.disposition, reason: d.reason, fireMs: d.fireMs };
}

/** {@link windowDisposition} without the coalescing; says which window delayed it. */
function delayDisposition(s: WindowedSchedule, dueMs: number, fireMs: number): WindowDecision & { delayedBy?: { name: string; untilMs: number } } {
  const w = s.windows;
  if (!w) return { disposition: 'run', reason: '', fireMs };
  const excluded = w.calendar?.exclusion(dueMs) ?? null;
  if (excluded !== null) return { disposition: 'skipped', reason: excluded, fireMs };
  if (w.blackouts.length === 0) return { disposition: 'run', reason: '', fireMs };
  const offset = fireMs - dueMs;
  let at = fireMs;
  let delayedBy: { name: string; untilMs: number } | undefined;
  for (let hop = 0; ; hop++) {
    const stop = w.blackouts.find((b) => b.action !== 'delay' && b.contains(at));
    if (stop) return { disposition: 'skipped', reason: `blackout ${stop.name}`, fireMs };
    let end: number | null = null;
    let by: BlackoutWindow | undefined;
    for (const b of w.blackouts) {
      if (b.action !== 'delay' || !b.contains(at)) continue;
      const e = b.endOf(at);
      if (e === null) return { disposition: 'skipped', reason: `blackout ${b.name} (the window does not end)`, fireMs };
      if (end === null || e > end) [end, by] = [e, b];
    }
    if (end === null || !by) break;
    if (hop >= MAX_HOPS) return { disposition: 'skipped', reason: `blackout ${by.name} (windows follow each other without a gap)`, fireMs };
    delayedBy ??= { name: by.name, untilMs: end };
    delayedBy.untilMs = end;
    at = end + offset;
  }
  if (!delayedBy) return { disposition: 'run', reason: '', fireMs };
  const why = `delayed: blackout ${delayedBy.name} until ${new Date(delayedBy.untilMs).toISOString()}`;
  if (s.startingDeadlineMs !== null && at > fireMs + s.startingDeadlineMs) {
    return { disposition: 'missed', reason: `starting deadline exceeded (${why})`, fireMs };
  }
  return { disposition: 'run', reason: why, fireMs: at, delayedBy };
}

/** A candidate as the windows leave it, for the planner's offer (runner/redis/store.ts PlannedOccurrence). */
export interface WindowedCandidate extends Candidate {
  /** Set when the windows decided a final state (calendar, blackout skip, delayed past the starting deadline). */
  fixed?: PlannedFixedState;
  /** Set when a delay window moved `fireMs` (then the later fire time) away from the original fire time. */
  delay?: PlannedDelay;
}

/**
 * The planner's window step, for candidates of ONE schedule (any order): what {@link windowDisposition} makes of
 * each, as the plan script takes it. Clock-free; the plan script decides the rest on `TIME`.
 * @returns one entry per candidate, same order.
 */
export function applyWindows(candidates: readonly Candidate[], s: WindowedSchedule): WindowedCandidate[] {
  if (!s.windows) return candidates.map((c) => ({ dueMs: c.dueMs, fireMs: c.fireMs }));
  return candidates.map((c) => {
    const w = windowDisposition(s, c.dueMs, c.fireMs);
    const state = w.disposition;
    if (state !== 'run') return { dueMs: c.dueMs, fireMs: c.fireMs, fixed: { state, reason: w.reason } };
    if (w.reason === '') return { dueMs: c.dueMs, fireMs: c.fireMs };
    return { dueMs: c.dueMs, fireMs: w.fireMs, delay: { reason: w.reason, originalFireMs: c.fireMs } };
  });
}

/**
 * Which due times a schedule's calendar lets run, for the overdue rule (runner/records/health.ts `expected`): a
 * due time the calendar excludes is never owed a success. Blackouts are not consulted (see the README).
 * @returns the predicate, or undefined when the schedule has no calendar (every due time is expected).
 */
export function calendarExpects(s: Pick<WindowedSchedule, 'windows'>): ((dueMs: number) => boolean) | undefined {
  const calendar = s.windows?.calendar;
  return calendar ? (dueMs) => calendar.exclusion(dueMs) === null : undefined;
}

/**
 * The starting deadline to give the claim script for a delivered occurrence: the script counts it from the
 * recorded fire time, which for a delayed occurrence is the window's end; counted from the original fire time
 * instead (see the module doc), what is left is the deadline minus the delay (0 at least: never "no limit").
 * @returns ms, or null for no starting deadline.
 */
export function startingDeadlineForClaimMs(
  s: Pick<WindowedSchedule, 'name' | 'jitterMs' | 'startingDeadlineMs'>,
  o: { dueMs: number; fireMs: number; origin?: string },
): number | null {
  if (s.startingDeadlineMs === null || (o.origin ?? 'schedule') !== 'schedule') return s.startingDeadlineMs;
  const delayMs = o.fireMs - fireTimeMs(s.name, o.dueMs, s.jitterMs);
  return delayMs > 0 ? Math.max(0, s.startingDeadlineMs - delayMs) : s.startingDeadlineMs;
}

/** How far ahead one look for the next abort window goes (below Node's longest timer, 24.8 days). */
const ABORT_LOOKAHEAD_MS = 20 * 86_400_000;

/**
 * Arms the blackout abort of one run: calls `onOpen(name)` when an `abort` window of the schedule opens while
 * the run is in flight, or at once when the run is inside one already (a retry or a manual run that starts in
 * the window). One local timer per run, re-armed every 20 days at most; the window starts are a pure function
 * of the definition, `nowMs` is the Redis clock estimate.
 * @returns a function that disarms it (call when the run ends).
 */
export function armBlackoutAbort(s: WindowedSchedule, nowMs: () => number, onOpen: (name: string) => void): () => void {
  const aborting = s.windows?.blackouts.filter((b) => b.action === 'abort') ?? [];
  if (aborting.length === 0) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const check = (): void => {
    if (done) return;
    const now = nowMs();
    const open = aborting.find((b) => b.contains(now));
    if (open) {
      done = true;
      onOpen(open.name);
      return;
    }
    const until = now + ABORT_LOOKAHEAD_MS;
    let next = until;
    for (const b of aborting) next = Math.min(next, b.nextStart(now, until) ?? until);
    timer = setTimeout(check, Math.max(0, next - now) + 1);
    timer.unref?.();
  };
  check();
  return () => {
    done = true;
    if (timer) clearTimeout(timer);
  };
}

/** How far ahead {@link firstRunWithin} looks for a due time that runs: 5 years, in ms. */
export const NEVER_RUNS_HORIZON_MS = 5 * 365 * 86_400_000;
/** The most due times {@link firstRunWithin} decides (a per-minute schedule: about 70 days). */
const MAX_DECIDED = 100_000;

/**
 * Whether a schedule's calendar and blackouts leave any due time to run: decides its due times from `fromMs`
 * with {@link windowDisposition} until one runs (delayed counts; skipped and missed do not).
 * @returns `runs` at the first that runs; `never` with the distinct reasons (e.g. "calendar weekends",
 *   "blackout deploys") when none within `horizonMs` does, or when the cron has no due time left; `unknown` when
 *   the {@link MAX_DECIDED} due times looked at end before the horizon (a frequent schedule: not decided here).
 */
export function firstRunWithin(
  s: WindowedSchedule,
  fromMs: number,
  horizonMs: number = NEVER_RUNS_HORIZON_MS,
): { verdict: 'runs' | 'unknown' } | { verdict: 'never'; reasons: string[] } {
  if (!s.windows) return { verdict: 'runs' };
  const reasons = new Set<string>();
  let n = s.due.next(fromMs);
  for (let seen = 0; n !== null && n <= fromMs + horizonMs; n = s.due.next(n), seen++) {
    if (seen >= MAX_DECIDED) return { verdict: 'unknown' };
    const d = windowDisposition(s, n, fireTimeMs(s.name, n, s.jitterMs));
    if (d.disposition === 'run') return { verdict: 'runs' };
    reasons.add(d.reason.replace(/ \(.*\)$/s, '').replace(/ until .*$/, ''));
  }
  return { verdict: 'never', reasons: [...reasons] };
}
