/**
 * The rows of `cronflock next`: upcoming due times of a schedule with their fire times, and what the
 * schedule's calendar and blackouts make of each (the same rule the planner applies, runner/engine/windows.ts).
 */
import { windowDisposition, type WindowedSchedule } from '../engine/windows.js';
import type { DueTimes } from '../schedule/cron.js';
import { fireTimeMs } from '../schedule/occurrence.js';
import { localIso } from '../time/local-time.js';
import { formatDurationMs } from '../time/duration.js';
import type { GroupLimits, RateLimit } from '../config/groups-schema.js';

/**
 * One upcoming occurrence. `…At` and `windowEnd` are ISO 8601 UTC, `…Local` the same instants in the schedule's
 * time zone; `fireAt` and `fireLocal` are `-` for one that will not run.
 */
export interface NextRow {
  schedule: string;
  timeZone: string;
  dueAt: string;
  dueLocal: string;
  fireAt: string;
  fireLocal: string;
  windowEnd: string;
  /** `run`, or `skipped` / `missed` by the calendar or a blackout. */
  state: 'run' | 'skipped' | 'missed';
  /** `calendar holidays`, `blackout freeze`, `delayed: blackout db until …`, or ''. */
  reason: string;
  /**
   * For a schedule in a concurrency group or with a rate limit: what its start may wait for at run time
   * (`group cluster-prod: 2 at once, 10 per 1s`); absent otherwise. Not predicted: it depends on the flock.
   */
  mayWait?: string;
}

/** The limits a schedule's start may wait for (redis/lua/includes/gates.lua), as `cronflock next` shows them. */
export function gateSummary(s: { groupLimits?: GroupLimits; rateLimit?: RateLimit }): string | undefined {
  const rate = (r: RateLimit): string => `${r.max} per ${formatDurationMs(r.perMs)}`;
  const parts: string[] = [];
  const g = s.groupLimits;
  if (g) {
    const limits = [g.maxConcurrent !== null ? `${g.maxConcurrent} at once` : '', g.rateLimit ? rate(g.rateLimit) : ''].filter(Boolean);
    parts.push(`group ${g.name}: ${limits.join(', ')}`);
  }
  if (s.rateLimit) parts.push(`rate limit ${rate(s.rateLimit)}`);
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** The most due times looked at for one schedule when skipped ones are hidden (a calendar may hold few days). */
export const MAX_SCANNED = 100_000;

/**
 * The most occurrences `next -n` prints per schedule. Below {@link MAX_SCANNED}, so that a scan that stops at its
 * limit always means the calendar or a blackout skipped due times (the reason {@link truncationNote} gives).
 */
export const MAX_NEXT_COUNT = 10_000;

/**
 * The next `count` occurrences strictly after `fromMs`; with `hideSkipped`, the next `count` that run
 * (looking at most at {@link MAX_SCANNED} due times).
 * @returns the rows, and whether the scan stopped at its limit before finding `count` (then `scannedToMs`: the
 *   last due time looked at, UTC ms, where a further look can start).
 */
export function nextRows(
  s: WindowedSchedule & { due: DueTimes; timeZone: string; groupLimits?: GroupLimits; rateLimit?: RateLimit },
  fromMs: number,
  count: number,
  hideSkipped: boolean,
): { rows: NextRow[]; truncated: boolean; scannedToMs?: number } {
  const rows: NextRow[] = [];
  const mayWait = gateSummary(s);
  let t = fromMs;
  for (let scanned = 0; rows.length < count; scanned++) {
    if (scanned >= MAX_SCANNED) return { rows, truncated: true, scannedToMs: t };
    const due = s.due.next(t);
    if (due === null) break;
    t = due;
    const d = windowDisposition(s, due, fireTimeMs(s.name, due, s.jitterMs));
    if (hideSkipped && d.disposition !== 'run') continue;
    const runs = d.disposition === 'run';
    rows.push({
      schedule: s.name,
      timeZone: s.timeZone,
      dueAt: new Date(due).toISOString(),
      dueLocal: localIso(due, s.timeZone),
      fireAt: runs ? new Date(d.fireMs).toISOString() : '-',
      fireLocal: runs ? localIso(d.fireMs, s.timeZone) : '-',
      windowEnd: new Date(due + s.jitterMs).toISOString(),
      state: d.disposition,
      reason: d.reason,
      ...(mayWait !== undefined && d.disposition === 'run' ? { mayWait } : {}),
    });
  }
  return { rows, truncated: false };
}

/**
 * What `next` says when {@link nextRows} stopped at {@link MAX_SCANNED} due times before finding `count`: the
 * limit, what it means, and how to see further.
 */
export function truncationNote(schedule: string, found: number, count: number, scannedToMs: number): string {
  return (
    `${schedule}: only ${found} of the ${count} occurrences asked for (-n) run among its next ${MAX_SCANNED.toLocaleString('en-US')} due times, ` +
    `the most next looks at per schedule (its calendar and blackouts skip the others); to see further, run it again with ` +
    `--from ${new Date(scannedToMs).toISOString()}`
  );
}

/** The NOTE column: `skipped: calendar holidays`, `delayed: blackout db until …`, `may wait: group …`, or ''. */
export function noteOf(r: NextRow): string {
  const note = r.state === 'run' ? r.reason : `${r.state}: ${r.reason}`;
  return r.mayWait ? [note, `may wait: ${r.mayWait}`].filter(Boolean).join('; ') : note;
}
