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
import { overdueGraceMs, scheduleNextAndOverdue } from '../records/health.js';
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

/** Schedules looked at between two yields to the event loop. */
const PER_SLICE = 2_000;

/**
 * The rows of one pass ({@link ScheduleHealthBoard.update}), built one at a time as they are read (a scrape builds
 * the text of 100,000 schedules' series from them; a pass nobody scrapes builds none). Read from the board's
 * arrays: a read while a later pass runs shows, for the schedules that pass has reached, its values (each row is
 * one pass's, whole).
 */
export class ScheduleHealthRows implements Iterable<ScheduleHealthRow> {
  constructor(
    private readonly board: ScheduleHealthBoard,
    /** The board slots of the pass's schedules, in the pass's order. */
    private readonly slots: Uint32Array,
    /** Redis time of the pass (ms): the overdue durations are as of then. */
    private readonly nowMs: number,
  ) {}

  /** How many rows. */
  get length(): number {
    return this.slots.length;
  }

  *[Symbol.iterator](): IterableIterator<ScheduleHealthRow> {
    for (const slot of this.slots) {
      const row = this.board.row(slot, this.nowMs);
      if (row) yield row;
    }
  }
}

/**
 * Keeps the health of this replica's schedules across passes, in arrays indexed by a slot per schedule (no object
 * per schedule: at 100,000 schedules the objects and boxed numbers of the earlier board held ~30 MB and a pass
 * allocated 100,000 rows).
 */
export class ScheduleHealthBoard {
  /** Each schedule's slot; slots of forgotten schedules are reused. */
  private readonly slotOf = new Map<string, number>();
  private readonly free: number[] = [];
  private schedules: (CompiledSchedule | undefined)[] = [];
  private lastResults: (LastResult | undefined)[] = [];
  /** Redis ms; NaN: none (no success known, no next fire time, never overdue). */
  private lastSuccessMs = new Float64Array(0);
  private sinceMs = new Float64Array(0);
  private recomputeAtMs = new Float64Array(0);
  private nextFireMs = new Float64Array(0);
  private overdueFromMs = new Float64Array(0);
  private suspended = new Uint8Array(0);
  /** The latest update that saw the slot's schedule (those not seen are forgotten). */
  private seen = new Uint32Array(0);
  private updates = 0;
  /** Schedules whose health was recomputed in the latest update (for measurements and tests). */
  recomputed = 0;

  /**
   * @param sinceMsOf since when the flock runs a schedule as it is now (the published definition's load time,
   *   engine/definitions.ts); undefined when unknown (then: when this board first saw it).
   */
  constructor(private readonly sinceMsOf: (name: string) => number | undefined) {}

  /**
   * The health of each of `schedules` at Redis time `nowMs`, from a cache pass's `values`, with the totals.
   * Yields to the event loop every few thousand schedules. One call at a time.
   */
  async update(
    schedules: Iterable<CompiledSchedule>,
    values: FlockWideValues,
    nowMs: number,
  ): Promise<{ rows: ScheduleHealthRows; totals: ScheduleHealthTotals }> {
    const update = ++this.updates;
    let order = new Uint32Array(Math.max(16, this.slotOf.size));
    let count = 0;
    const totals: ScheduleHealthTotals = { total: 0, overdue: 0, failing: 0, suspended: 0 };
    let recomputed = 0;
    for (const s of schedules) {
      const lastSuccess = values.lastSuccessMs.get(s.name);
      const lastSuccessMs = lastSuccess ?? NaN;
      const suspended = s.suspend || values.suspended.has(s.name) ? 1 : 0;
      let slot = this.slotOf.get(s.name);
      const known = slot !== undefined && this.schedules[slot] === s;
      if (slot === undefined) {
        slot = this.take();
        this.slotOf.set(s.name, slot);
      }
      const sinceMs = this.sinceMsOf(s.name) ?? (known ? this.sinceMs[slot]! : nowMs);
      if (
        !known ||
        !Object.is(this.lastSuccessMs[slot], lastSuccessMs) ||
        this.suspended[slot] !== suspended ||
        this.sinceMs[slot] !== sinceMs ||
        nowMs >= this.recomputeAtMs[slot]!
      ) {
        const health = scheduleNextAndOverdue(
          { name: s.name, due: s.due, jitterMs: s.jitterMs, graceMs: overdueGraceMs(s), lastSuccessMs: lastSuccess, sinceMs, suspended: suspended === 1, expected: calendarExpects(s) },
          nowMs,
        );
        const becomesOverdue = health.overdueFromMs !== null && health.overdueFromMs > nowMs ? health.overdueFromMs : Infinity;
        this.schedules[slot] = s;
        this.lastSuccessMs[slot] = lastSuccessMs;
        this.suspended[slot] = suspended;
        this.sinceMs[slot] = sinceMs;
        this.nextFireMs[slot] = health.nextFireMs ?? NaN;
        this.overdueFromMs[slot] = health.overdueFromMs ?? NaN;
        this.recomputeAtMs[slot] = Math.min(health.nextFireMs ?? Infinity, becomesOverdue);
        recomputed++;
      }
      this.seen[slot] = update;
      const lastResult = values.lastResult.get(s.name);
      this.lastResults[slot] = lastResult;
      if (count === order.length) {
        const grown = new Uint32Array(order.length * 2);
        grown.set(order);
        order = grown;
      }
      order[count++] = slot;
      const overdueFrom = this.overdueFromMs[slot]!;
      totals.total++;
      if (overdueFrom <= nowMs && nowMs - overdueFrom > 0) totals.overdue++;
      if ((lastResult?.consecutiveFailures ?? 0) > 0) totals.failing++;
      if (suspended) totals.suspended++;
      if (totals.total % PER_SLICE === 0) await new Promise((r) => setImmediate(r));
    }
    for (const [name, slot] of this.slotOf) {
      if (this.seen[slot] === update) continue;
      this.slotOf.delete(name);
      this.schedules[slot] = undefined;
      this.lastResults[slot] = undefined;
      this.free.push(slot);
    }
    this.recomputed = recomputed;
    return { rows: new ScheduleHealthRows(this, order.subarray(0, count), nowMs), totals };
  }

  /** The row of `slot` as of Redis time `nowMs` (undefined: no schedule has the slot now). */
  row(slot: number, nowMs: number): ScheduleHealthRow | undefined {
    const s = this.schedules[slot];
    if (s === undefined) return undefined;
    const next = this.nextFireMs[slot]!;
    const lastSuccess = this.lastSuccessMs[slot]!;
    const overdueFrom = this.overdueFromMs[slot]!;
    return {
      name: s.name,
      nextFireMs: Number.isNaN(next) ? null : next,
      lastSuccessMs: Number.isNaN(lastSuccess) ? undefined : lastSuccess,
      overdueMs: overdueFrom <= nowMs ? nowMs - overdueFrom : 0,
      lastResult: this.lastResults[slot],
      suspended: this.suspended[slot] === 1,
      ...(s.tenant !== undefined ? { tenant: s.tenant } : {}),
    };
  }

  /** A free slot, the arrays grown (doubled) when there is none. */
  private take(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    const slot = this.slotOf.size;
    if (slot >= this.seen.length) {
      const size = Math.max(64, this.seen.length * 2);
      const grow = <A extends Float64Array | Uint8Array | Uint32Array>(a: A, make: (n: number) => A): A => {
        const b = make(size);
        b.set(a);
        return b;
      };
      this.lastSuccessMs = grow(this.lastSuccessMs, (n) => new Float64Array(n));
      this.sinceMs = grow(this.sinceMs, (n) => new Float64Array(n));
      this.recomputeAtMs = grow(this.recomputeAtMs, (n) => new Float64Array(n));
      this.nextFireMs = grow(this.nextFireMs, (n) => new Float64Array(n));
      this.overdueFromMs = grow(this.overdueFromMs, (n) => new Float64Array(n));
      this.suspended = grow(this.suspended, (n) => new Uint8Array(n));
      this.seen = grow(this.seen, (n) => new Uint32Array(n));
    }
    return slot;
  }
}

/**
 * The rows that get per-schedule series under `mode`: all, none, or the `n` most overdue, then most failing
 * (consecutive failures), then by name — schedules that are neither are left out under `top`.
 */
export function selectRows(rows: Iterable<ScheduleHealthRow>, mode: ScheduleMetricsMode): Iterable<ScheduleHealthRow> {
  if (mode.kind === 'on') return rows;
  if (mode.kind === 'off') return [];
  const failures = (r: ScheduleHealthRow): number => r.lastResult?.consecutiveFailures ?? 0;
  return [...rows]
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
