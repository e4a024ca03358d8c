/**
 * The health of every schedule this replica runs, kept up to date from the flock-wide cache's passes
 * (flock-wide-cache.ts) for the per-schedule metrics (metrics.ts) and the alert rules built on them
 * (runner/alerts/rules.ts). The rule for "overdue" is runner/records/health.ts's; this module only decides when
 * to apply it again.
 *
 * Cheap with many schedules: applying the rule costs a few cron look-ups (50 µs–4 ms each), so a schedule's
 * health is kept between passes and recomputed only when an input changed (its last success, its suspension,
 * its definition) or time passed one of the two instants where the result can change without a new input: the
 * next fire time, and the instant it becomes overdue. Every other schedule costs a few map look-ups per pass.
 */
import type { CompiledSchedule } from '../config/load.js';
import { calendarExpects } from '../engine/windows.js';
import { overdueGraceMs, scheduleNextAndOverdue, type NextAndOverdue } from '../records/health.js';
import type { LastResult } from '../records/last-result.js';
import type { Lane, Lanes } from '../engine/enqueue.js';
import type { FlockWideCache, FlockWideValues, QueueCounts } from './flock-wide-cache.js';
import type { Metrics } from './metrics.js';

/**
 * Which schedules get per-schedule series (`--schedule-metrics`): all (`on`), none (`off`), or the `n` most
 * overdue or failing ones (`top`), so that a flock of 100,000 schedules need not export 600,000 series.
 */
export type ScheduleMetricsMode = { kind: 'on' } | { kind: 'off' } | { kind: 'top'; n: number };

/**
 * Parses `--schedule-metrics`: `on`, `off` or `top:N` (N ≥ 1).
 * @throws Error naming the accepted forms.
 */
export function parseScheduleMetricsMode(s: string): ScheduleMetricsMode {
  if (s === 'on' || s === 'off') return { kind: s };
  const m = /^top:(\d{1,7})$/.exec(s);
  if (m && Number(m[1]) >= 1) return { kind: 'top', n: Number(m[1]) };
  throw new Error(`--schedule-metrics "${s}" must be on, off or top:N with N ≥ 1 (e.g. top:100)`);
}

/** One schedule's health as the metrics show it. Times are Redis UTC ms. */
export interface ScheduleHealthRow {
  name: string;
  nextFireMs: number | null;
  lastSuccessMs: number | undefined;
  /** 0 when not overdue. */
  overdueMs: number;
  lastResult: LastResult | undefined;
  suspended: boolean;
  /** Its tenant (the `tenant` label); absent: none. */
  tenant?: string;
}

/** The flock-wide counts over the schedules this replica runs, whatever the mode. */
export interface ScheduleHealthTotals {
  total: number;
  overdue: number;
  /** With at least one failure since the latest success. */
  failing: number;
  suspended: number;
}

/** What is kept of a schedule between passes. */
interface Kept {
  schedule: CompiledSchedule;
  lastSuccessMs: number | undefined;
  suspended: boolean;
  sinceMs: number;
  health: NextAndOverdue;
  /** Recompute at or after this Redis time even if no input changed. */
  recomputeAtMs: number;
  /** The latest update that saw the schedule (those not seen are forgotten). */
  seen: number;
}

/** Schedules looked at between two yields to the event loop. */
const PER_SLICE = 2_000;

/** Keeps the health of this replica's schedules across passes. */
export class ScheduleHealthBoard {
  /** Kept across updates and changed in place: a pass over 100,000 schedules allocates no new map. */
  private readonly kept = new Map<string, Kept>();
  private updates = 0;
  /** Schedules whose health was recomputed in the latest update (for measurements and tests). */
  recomputed = 0;

  /**
   * @param sinceMs since when the flock runs a schedule as it is now (the published definition's load time,
   *   engine/definitions.ts); undefined when unknown (then: when this board first saw it).
   */
  constructor(private readonly sinceMs: (name: string) => number | undefined) {}

  /**
   * The health of each of `schedules` at Redis time `nowMs`, from a cache pass's `values`, with the totals.
   * Yields to the event loop every few thousand schedules. One call at a time.
   */
  async update(
    schedules: Iterable<CompiledSchedule>,
    values: FlockWideValues,
    nowMs: number,
  ): Promise<{ rows: ScheduleHealthRow[]; totals: ScheduleHealthTotals }> {
    const update = ++this.updates;
    const rows: ScheduleHealthRow[] = [];
    const totals: ScheduleHealthTotals = { total: 0, overdue: 0, failing: 0, suspended: 0 };
    let recomputed = 0;
    for (const s of schedules) {
      const lastSuccessMs = values.lastSuccessMs.get(s.name);
      const suspended = s.suspend || values.suspended.has(s.name);
      const prev = this.kept.get(s.name);
      const sinceMs = this.sinceMs(s.name) ?? (prev?.schedule === s ? prev.sinceMs : nowMs);
      let k = prev;
      if (
        k === undefined ||
        k.schedule !== s ||
        k.lastSuccessMs !== lastSuccessMs ||
        k.suspended !== suspended ||
        k.sinceMs !== sinceMs ||
        nowMs >= k.recomputeAtMs
      ) {
        const health = scheduleNextAndOverdue(
          { name: s.name, due: s.due, jitterMs: s.jitterMs, graceMs: overdueGraceMs(s), lastSuccessMs, sinceMs, suspended, expected: calendarExpects(s) },
          nowMs,
        );
        const becomesOverdue = health.overdueFromMs !== null && health.overdueFromMs > nowMs ? health.overdueFromMs : Infinity;
        k = { schedule: s, lastSuccessMs, suspended, sinceMs, health, recomputeAtMs: Math.min(health.nextFireMs ?? Infinity, becomesOverdue), seen: update };
        this.kept.set(s.name, k);
        recomputed++;
      }
      k.seen = update;
      const h = k.health;
      const overdueMs = h.overdueFromMs !== null && h.overdueFromMs <= nowMs ? nowMs - h.overdueFromMs : 0;
      const lastResult = values.lastResult.get(s.name);
      rows.push({ name: s.name, nextFireMs: h.nextFireMs, lastSuccessMs, overdueMs, lastResult, suspended, ...(s.tenant !== undefined ? { tenant: s.tenant } : {}) });
      totals.total++;
      if (overdueMs > 0) totals.overdue++;
      if ((lastResult?.consecutiveFailures ?? 0) > 0) totals.failing++;
      if (suspended) totals.suspended++;
      if (totals.total % PER_SLICE === 0) await new Promise((r) => setImmediate(r));
    }
    for (const [name, k] of this.kept) if (k.seen !== update) this.kept.delete(name);
    this.recomputed = recomputed;
    return { rows, totals };
  }
}

/**
 * The rows that get per-schedule series under `mode`: all, none, or the `n` most overdue, then most failing
 * (consecutive failures), then by name — schedules that are neither are left out under `top`.
 */
export function selectRows(rows: readonly ScheduleHealthRow[], mode: ScheduleMetricsMode): readonly ScheduleHealthRow[] {
  if (mode.kind === 'on') return rows;
  if (mode.kind === 'off') return [];
  const failures = (r: ScheduleHealthRow): number => r.lastResult?.consecutiveFailures ?? 0;
  return rows
    .filter((r) => r.overdueMs > 0 || failures(r) > 0)
    .sort((a, b) => b.overdueMs - a.overdueMs || failures(b) - failures(a) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, mode.n);
}

/**
 * Connects the flock-wide cache's passes to the health metrics: after each complete pass, the health of the
 * schedules this replica runs (at the Redis time the clock estimates), the rows `mode` selects, and the
 * queues' job counts read at each pass start. Before the replica runs (`schedules()` undefined) a pass only
 * refreshes the cache.
 */
export function feedScheduleHealth(o: {
  cache: FlockWideCache;
  metrics: Metrics;
  mode: ScheduleMetricsMode;
  schedules: () => Iterable<CompiledSchedule> | undefined;
  sinceMs: (name: string) => number | undefined;
  nowMs: () => number;
}): ScheduleHealthBoard {
  const board = new ScheduleHealthBoard(o.sinceMs);
  o.cache.onPass = async (values) => {
    const schedules = o.schedules();
    if (schedules === undefined) return;
    const { rows, totals } = await board.update(schedules, values, o.nowMs());
    await o.metrics.setScheduleHealth(selectRows(rows, o.mode), totals);
  };
  o.cache.onQueues = (queues) => o.metrics.setQueues(queues);
  return board;
}

/** The job counts of each lane's queue (BullMQ's getJobCounts: a few commands), for the flock-wide cache. */
export async function laneJobCounts(lanes: Lanes): Promise<Map<Lane, QueueCounts>> {
  const out = new Map<Lane, QueueCounts>();
  for (const [lane, q] of [['live', lanes.live], ['backlog', lanes.backlog]] as const) {
    const c = await q.getJobCounts('wait', 'prioritized', 'delayed', 'active');
    out.set(lane, { waiting: (c.wait ?? 0) + (c.prioritized ?? 0), delayed: c.delayed ?? 0, active: c.active ?? 0 });
  }
  return out;
}
