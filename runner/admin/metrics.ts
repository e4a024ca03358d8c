/**
 * Prometheus metrics of a replica (prom-client). Counters count what THIS replica decided or ran; sum them
 * over replicas for the flock. Names follow Prometheus conventions: `_total` counters, base units (seconds).
 *
 * The flock-wide gauge (last success per schedule) comes from the admin server's cache (flock-wide-cache.ts),
 * so rendering never sends a Redis command, and its text is built once per cache pass, in slices, rather
 * than by prom-client at every rendering: prom-client took 1.3–1.7 s of blocked event loop to render 50,000
 * series (claims wait meanwhile); building the same text takes ~90 ms, cut into slices of a few ms.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, register } from 'prom-client';
import type { EngineEvents, PlannedFinalEvent, RunEvent } from '../engine/events.js';
import type { RedisClock } from '../redis/clock.js';
import { onRedisCommandError } from '../redis/command-errors.js';
import type { BackfillCount } from '../records/backfill.js';

const LAST_SUCCESS = 'cronflock_last_success_timestamp_seconds';
/** Series of the flock-wide gauge built between two yields to the event loop. */
const SERIES_PER_SLICE = 2_000;

/** A label value in the exposition format: backslash, double quote and line feed escaped. */
const labelValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** The metrics of one replica and the hooks that feed them. */
export class Metrics {
  readonly registry = new Registry();
  private readonly runs: Counter<'schedule' | 'state'>;
  private readonly notRun: Counter<'schedule' | 'state' | 'reason'>;
  private readonly claims: Counter<'schedule' | 'kind'>;
  private readonly lateness: Histogram<'schedule'>;
  private readonly active: Gauge;
  private readonly redisErrors: Counter<'kind'>;
  private readonly backfill: Gauge<'schedule' | 'state'>;
  /** Steps of this host's wall clock that the replica noticed (RedisClock.detectStep). */
  readonly clockSteps: Counter;
  private readonly stopCountingCommandErrors: () => void;
  /** Exposition text of the flock-wide last-success gauge, as of the latest cache pass. */
  private lastSuccessText = '';
  private readonly replicaLabel: string;

  /** @param o.activeRuns claims held now (0 before the executor runs). */
  constructor(o: { clock: RedisClock; activeRuns: () => number; replica: string }) {
    this.replicaLabel = labelValue(o.replica);
    const r = this.registry;
    r.setDefaultLabels({ replica: o.replica });
    // Job kinds and in-process jobs register on the default registry, served beside this one: same labels.
    register.setDefaultLabels({ replica: o.replica });
    collectDefaultMetrics({ register: r, prefix: 'cronflock_process_' });
    this.runs = new Counter({
      name: 'cronflock_runs_total',
      help: 'Attempts that ended, by schedule and outcome: succeeded, failed (the occurrence failed for good), retrying (a failed attempt that will be retried)',
      labelNames: ['schedule', 'state'],
      registers: [r],
    });
    this.notRun = new Counter({
      name: 'cronflock_occurrences_not_run_total',
      help: 'Occurrences recorded missed or skipped (by this replica), by reason',
      labelNames: ['schedule', 'state', 'reason'],
      registers: [r],
    });
    this.claims = new Counter({
      name: 'cronflock_claims_total',
      help: 'Claims taken, kind=first or reclaim (a later attempt: after a stall, a hand-over or a retry)',
      labelNames: ['schedule', 'kind'],
      registers: [r],
    });
    this.lateness = new Histogram({
      name: 'cronflock_start_lateness_seconds',
      help: 'Start of the first attempt after the fire time, on the Redis clock',
      labelNames: ['schedule'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [r],
    });
    this.active = new Gauge({
      name: 'cronflock_active_runs',
      help: 'Runs this replica holds a claim for now',
      registers: [r],
      collect() {
        this.set(o.activeRuns());
      },
    });
    new Gauge({
      name: 'cronflock_clock_skew_seconds',
      help: 'Redis server time minus this host wall-clock time, now (positive: this host is behind); beyond ±5 s the replica is not ready',
      registers: [r],
      collect() {
        this.set(o.clock.offsetMs / 1000);
      },
    });
    this.redisErrors = new Counter({
      name: 'cronflock_redis_errors_total',
      help: 'Redis errors: kind=connection (connection lost, refused, timed out) or command (an error reply: OOM, READONLY, LOADING …)',
      labelNames: ['kind'],
      registers: [r],
    });
    for (const kind of ['connection', 'command']) this.redisErrors.inc({ kind }, 0); // both series from the start
    this.clockSteps = new Counter({
      name: 'cronflock_clock_steps_total',
      help: 'Steps of this host wall clock noticed (wall-clock and monotonic progress differed by 500 ms or more)',
      registers: [r],
    });
    this.backfill = new Gauge({
      name: 'cronflock_backfill_occurrences',
      help: 'Backfill occurrences not yet final, flock-wide, by schedule and state (waiting: for admission, or paused by a suspension; admitted: queued on the backlog lane or running)',
      labelNames: ['schedule', 'state'],
      registers: [r],
    });
    this.stopCountingCommandErrors = onRedisCommandError(() => this.redisErrors.inc({ kind: 'command' }));
  }

  /**
   * Rebuilds the text of `cronflock_last_success_timestamp_seconds` (Redis time of the latest success of each
   * schedule this replica runs, flock-wide) from `values` (schedule → Redis ms), yielding to the event loop
   * every {@link SERIES_PER_SLICE} series. One call at a time (the cache's loop calls it after each pass).
   */
  async setLastSuccess(values: ReadonlyMap<string, number>): Promise<void> {
    const parts = [
      `# HELP ${LAST_SUCCESS} Redis time of the latest success of each schedule this replica runs, flock-wide (alert on time() minus this)\n`,
      `# TYPE ${LAST_SUCCESS} gauge\n`,
    ];
    let n = 0;
    for (const [schedule, ms] of values) {
      parts.push(`${LAST_SUCCESS}{schedule="${labelValue(schedule)}",replica="${this.replicaLabel}"} ${ms / 1000}\n`);
      if (++n % SERIES_PER_SLICE === 0) await new Promise((r) => setImmediate(r));
    }
    this.lastSuccessText = values.size > 0 ? parts.join('') : '';
  }

  /** Sets the flock-wide backfill gauge from the admin cache's latest read (schedule → counts). */
  setBackfill(counts: ReadonlyMap<string, BackfillCount>): void {
    this.backfill.reset();
    for (const [schedule, c] of counts) {
      this.backfill.set({ schedule, state: 'waiting' }, c.waiting);
      this.backfill.set({ schedule, state: 'admitted' }, c.admitted);
    }
  }

  /** Counts a connection error (a client's `error` event). Error replies are counted on their own. */
  countConnectionError(): void {
    this.redisErrors.inc({ kind: 'connection' });
  }

  /** Stops counting this process's Redis error replies. */
  close(): void {
    this.stopCountingCommandErrors();
  }

  /**
   * The Prometheus text of this replica: its own registry, then prom-client's default registry, where job
   * kinds (a backup's progress gauge) and in-process user jobs register (a merged registry would drop the
   * replica's default labels).
   */
  async render(): Promise<{ contentType: string; body: string }> {
    const own = await this.registry.metrics();
    const jobs = await register.metrics();
    const body = [own, this.lastSuccessText, jobs].filter(Boolean).join('\n');
    return { contentType: this.registry.contentType, body };
  }

  /** Counts what `events` reports from now on: runs, and occurrences the planner recorded final. */
  subscribeTo(events: EngineEvents): void {
    events.on('run', (e) => this.onRun(e));
    events.on('plannedFinal', (e) => this.onPlannedFinal(e));
  }

  /** Feeds a run event of the executor. */
  onRun(e: RunEvent): void {
    switch (e.state) {
      case 'started':
        this.claims.inc({ schedule: e.schedule, kind: (e.attempt ?? 1) > 1 ? 'reclaim' : 'first' });
        if ((e.attempt ?? 1) === 1 && e.startMs !== undefined) this.lateness.observe({ schedule: e.schedule }, Math.max(0, e.startMs - e.fireMs) / 1000);
        break;
      case 'succeeded':
      case 'failed':
      case 'retrying':
        this.runs.inc({ schedule: e.schedule, state: e.state });
        break;
      case 'skipped':
      case 'missed':
        this.notRun.inc({ schedule: e.schedule, state: e.state, reason: reasonLabel(e.error ?? e.state) });
        break;
      case 'stalled-out':
        this.runs.inc({ schedule: e.schedule, state: 'failed' });
        break;
      default:
        break;
    }
  }

  /** Feeds an occurrence the planner recorded missed or skipped. */
  onPlannedFinal(o: PlannedFinalEvent): void {
    this.notRun.inc({ schedule: o.schedule, state: o.state, reason: reasonLabel(o.reason) });
  }
}

/** A bounded label value: the reason without the occurrence keys some reasons name. */
export function reasonLabel(reason: string): string {
  if (reason.startsWith('overlap')) return 'overlap';
  if (reason.startsWith('superseded')) return 'superseded';
  if (reason.startsWith('catch-up')) return 'catch-up';
  if (reason.startsWith('schedule "')) return 'schedule not defined';
  return reason.slice(0, 60);
}
