/**
 * A schedule's health at a given Redis time: when it fires next, and whether it is overdue — a run it should
 * have had did not succeed. One definition for every place that tells a person "this schedule stopped working":
 * the per-schedule metrics and alert rules, `cronflock status`, and the HTTP API and dashboard.
 *
 * Overdue (the rule, stated once): take the later of the schedule's latest success and the time since which it
 * exists as it is (`sinceMs`: a new or changed schedule is not overdue for what it never had to run). The first
 * expected occurrence whose fire time is after that is the first one still owed a success. Once its fire time
 * plus the schedule's grace has passed, the schedule is overdue by the time since then, and stays so (the
 * figure keeps growing) until a run succeeds — a schedule that fails every time does not look healthy between
 * two fire times. A suspended schedule is never overdue (it is paused on purpose; it is reported as
 * suspended). Expected occurrences are the due times of the cron, minus those a calendar excludes.
 *
 * Pure: no I/O; the caller reads the last success (`{ns}:lastok`), the definition and the suspension.
 */
import type { DueTimes } from '../schedule/cron.js';
import { fireTimeMs } from '../schedule/occurrence.js';

/** Grace after a fire time when a schedule has no timeout: how long a run may take before it counts as owed. */
export const DEFAULT_OVERDUE_GRACE_MS = 5 * 60_000;

/** Most due times looked at to skip excluded ones (a calendar that excludes everything ends the search). */
const MAX_EXCLUDED_SKIPS = 1_000;

/** What {@link scheduleHealth} needs of a schedule. Times are Redis UTC ms. */
export interface HealthInput {
  name: string;
  due: DueTimes;
  jitterMs: number;
  /** How long after a fire time a success may come before the schedule counts as overdue (see {@link overdueGraceMs}). */
  graceMs: number;
  /** Redis time of the schedule's latest success, flock-wide; undefined when it has none on record. */
  lastSuccessMs: number | undefined;
  /** Since when the schedule exists as it is now (e.g. when its definition was loaded); earlier occurrences are not owed. */
  sinceMs: number;
  /** Suspended at run time (`cronflock suspend`) or in its definition. */
  suspended: boolean;
  /** Whether a due time is expected to run (false: a calendar excludes it); default every due time. */
  expected?: (dueMs: number) => boolean;
}

/** A schedule's health at one instant. Times are Redis UTC ms; null when there is none. */
export interface ScheduleHealth {
  /** The next occurrence that has not fired yet: its due time and fire time. */
  nextDueMs: number | null;
  nextFireMs: number | null;
  /** The latest expected occurrence whose fire time plus the grace has passed: what a success was last owed for. */
  lastExpectedDueMs: number | null;
  lastExpectedFireMs: number | null;
  /**
   * When the schedule is (or becomes, unless a success comes first) overdue: the first owed fire time plus the
   * grace; null when suspended or nothing is owed. Callers that keep a health between two instants recompute
   * it once this instant (or the next fire time) has passed, or an input changed.
   */
  overdueFromMs: number | null;
  /** Since when the schedule is overdue (`overdueFromMs` once it has passed); null when it is not. */
  overdueSinceMs: number | null;
  /** How long it is overdue, ms; 0 when it is not. */
  overdueMs: number;
}

/**
 * The grace of a schedule: its timeout when it has one (a run may take that long), else
 * {@link DEFAULT_OVERDUE_GRACE_MS}; an explicit per-schedule grace wins.
 */
export function overdueGraceMs(s: { timeoutMs: number | null; overdueGraceMs?: number | null }): number {
  return s.overdueGraceMs ?? s.timeoutMs ?? DEFAULT_OVERDUE_GRACE_MS;
}

/** What the per-schedule metrics need of a schedule's health ({@link scheduleNextAndOverdue}). */
export type NextAndOverdue = Pick<ScheduleHealth, 'nextDueMs' | 'nextFireMs' | 'overdueFromMs' | 'overdueSinceMs' | 'overdueMs'>;

/**
 * The health of `s` at Redis time `nowMs` (see the module doc for the overdue rule).
 * @throws TypeError when `nowMs` is not a finite number (from the cron's iteration).
 */
export function scheduleHealth(s: HealthInput, nowMs: number): ScheduleHealth {
  const w = walker(s);
  const h = nextAndOverdue(s, nowMs, w);
  const lastExpectedDueMs = w.lastFiringBy(nowMs - s.graceMs);
  return {
    nextDueMs: h.nextDueMs,
    nextFireMs: h.nextFireMs,
    lastExpectedDueMs,
    lastExpectedFireMs: lastExpectedDueMs === null ? null : w.fire(lastExpectedDueMs),
    overdueFromMs: h.overdueFromMs,
    overdueSinceMs: h.overdueSinceMs,
    overdueMs: h.overdueMs,
  };
}

/**
 * {@link scheduleHealth} without the last expected occurrence: the next fire time and when the schedule is (or
 * becomes) overdue, by the same rule. For callers that apply the rule to every schedule often (the per-schedule
 * metrics, runner/admin/schedule-health.ts): the look-back to the last expected occurrence is the dearest part
 * (a cron window far behind the ones cached), and they do not show it.
 * @throws TypeError when `nowMs` is not a finite number (from the cron's iteration).
 */
export function scheduleNextAndOverdue(s: HealthInput, nowMs: number): NextAndOverdue {
  return nextAndOverdue(s, nowMs, walker(s));
}

/** The due-time walks of {@link scheduleHealth} over `s`'s expected occurrences. */
interface Walker {
  /** Fire time of the occurrence due at `dueMs` (remembered: the walks ask for the same ones several times). */
  fire(dueMs: number): number;
  /** The first expected occurrence whose fire time is after `t`. */
  firstFiringAfter(t: number): number | null;
  /** The latest expected occurrence whose fire time is at or before `t`. */
  lastFiringBy(t: number): number | null;
}

function walker(s: HealthInput): Walker {
  const expected = s.expected ?? (() => true);
  // A fire time costs a SHA-256 of the occurrence key; one health asks for the same few due times again and again.
  const fires = new Map<number, number>();
  const fire = (dueMs: number): number => {
    let f = fires.get(dueMs);
    if (f === undefined) fires.set(dueMs, (f = fireTimeMs(s.name, dueMs, s.jitterMs)));
    return f;
  };

  // The first expected occurrence whose fire time is after `t`: start at the latest due time at or before `t`,
  // whose fire time may still be after `t` (the jitter window), then go forward.
  const firstFiringAfter = (t: number): number | null => {
    let due = s.due.last(t);
    if (due === null || fire(due) <= t) due = s.due.next(t);
    for (let i = 0; due !== null && i < MAX_EXCLUDED_SKIPS; i++, due = s.due.next(due)) {
      if (expected(due) && fire(due) > t) return due;
    }
    return null;
  };
  // The latest expected occurrence whose fire time is at or before `t`.
  const lastFiringBy = (t: number): number | null => {
    let due = s.due.last(t);
    for (let i = 0; due !== null && i < MAX_EXCLUDED_SKIPS; i++, due = s.due.last(due - 1)) {
      if (expected(due) && fire(due) <= t) return due;
    }
    return null;
  };
  return { fire, firstFiringAfter, lastFiringBy };
}

function nextAndOverdue(s: HealthInput, nowMs: number, w: Walker): NextAndOverdue {
  const nextDueMs = w.firstFiringAfter(nowMs);
  let overdueFromMs: number | null = null;
  if (!s.suspended) {
    const owedFrom = Math.max(s.lastSuccessMs ?? -Infinity, s.sinceMs);
    const firstOwed = w.firstFiringAfter(owedFrom);
    if (firstOwed !== null) overdueFromMs = w.fire(firstOwed) + s.graceMs;
  }
  const overdueSinceMs = overdueFromMs !== null && overdueFromMs <= nowMs ? overdueFromMs : null;
  return {
    nextDueMs,
    nextFireMs: nextDueMs === null ? null : w.fire(nextDueMs),
    overdueFromMs,
    overdueSinceMs,
    overdueMs: overdueSinceMs === null ? 0 : nowMs - overdueSinceMs,
  };
}
