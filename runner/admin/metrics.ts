/**
 * Prometheus metrics of a replica (prom-client). Counters count what THIS replica decided or ran; sum them
 * over replicas for the flock. Names follow Prometheus conventions: `_total` counters, base units (seconds).
 *
 * The flock-wide gauges come from the admin server's cache (flock-wide-cache.ts), so rendering never sends a
 * Redis command. The per-schedule health series (`cronflock_schedule_*`, schedule-health.ts) are built as text
 * at most once per cache pass, at the first scrape after it, in slices, rather than by prom-client at every rendering: prom-client took 1.3–1.7 s of
 * blocked event loop to render 50,000 series (claims wait meanwhile); building the same text takes ~90 ms, cut
 * into slices of a few ms. Which schedules get them is the user's choice (`--schedule-metrics`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, register } from 'prom-client';
import type { EngineEvents, PlannedFinalEvent, RunEvent } from '../engine/events.js';
import type { RedisClock } from '../redis/clock.js';
import { onRedisCommandError } from '../redis/command-errors.js';
import type { BackfillCount } from '../records/backfill.js';
import type { QueueCounts } from './flock-wide-cache.js';
import type { ScheduleHealthRow, ScheduleHealthTotals } from './schedule-health.js';

/**
 * The per-schedule health gauges, flock-wide (the same on every replica running the schedule): name, help, and
 * the value(s) of a row (an array: one series per entry, with extra labels; none: no series for that row).
 */
const SCHEDULE_GAUGES: readonly { name: string; help: string; series(r: ScheduleHealthRow): readonly (readonly [string, number])[] }[] = [
  {
    name: 'cronflock_schedule_next_fire_timestamp_seconds',
    help: 'Fire time of the next occurrence of each schedule that has not fired yet',
    series: (r) => (r.nextFireMs === null ? [] : [['', r.nextFireMs / 1000]]),
  },
  {
    name: 'cronflock_schedule_last_success_timestamp_seconds',
    help: 'Redis time of the latest success of each schedule, flock-wide',
    series: (r) => (r.lastSuccessMs === undefined ? [] : [['', r.lastSuccessMs / 1000]]),
  },
  {
    name: 'cronflock_schedule_overdue_seconds',
    help: 'How long each schedule is past the fire time plus grace of an occurrence that did not succeed (0: fine; grace: overdueGrace, else the timeout, else 5m)',
    series: (r) => [['', r.overdueMs / 1000]],
  },
  {
    name: 'cronflock_schedule_last_result',
    help: 'The latest final state of each schedule (1, with the state as a label): succeeded, failed, missed or skipped',
    series: (r) => (r.lastResult === undefined ? [] : [[`,state="${r.lastResult.state}"`, 1]]),
  },
  {
    name: 'cronflock_schedule_consecutive_failures',
    help: 'Occurrences of each schedule that ended failed since its latest success (missed and skipped ones neither add nor reset)',
    series: (r) => [['', r.lastResult?.consecutiveFailures ?? 0]],
  },
  {
    name: 'cronflock_schedule_suspended',
    help: 'Whether each schedule is suspended (cronflock suspend, or suspend: true in its file): 1 or 0',
    series: (r) => [['', r.suspended ? 1 : 0]],
  },
];
/** Series of the per-schedule gauges built between two yields to the event loop. */
const SERIES_PER_SLICE = 2_000;

/** A label value in the exposition format: backslash, double quote and line feed escaped. */
const labelValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** The metrics of one replica and the hooks that feed them. */
export class Metrics {
  readonly registry = new Registry();
  private readonly runs: Counter<'schedule' | 'state' | 'tenant'>;
  private readonly notRun: Counter<'schedule' | 'state' | 'reason' | 'tenant'>;
  private readonly delayed: Counter<'schedule' | 'reason' | 'tenant'>;
  private readonly claims: Counter<'schedule' | 'kind' | 'tenant'>;
  private readonly lateness: Histogram<'schedule' | 'tenant'>;
  private readonly gateWait: Histogram<'schedule' | 'gate' | 'tenant'>;
  /** The `tenant` label of a schedule's series: present only for a schedule with a tenant. */
  private readonly tenantLabel: (schedule: string) => { tenant?: string };
  private readonly groupWaiting: Gauge<'group'>;
  private readonly active: Gauge;
  private readonly redisErrors: Counter<'kind'>;
  private readonly waitShortfalls: Counter<'after'>;
  private readonly backfill: Gauge<'schedule' | 'state'>;
  private readonly schedules: Gauge<'health'>;
  private readonly queueJobs: Gauge<'lane' | 'state'>;
  /** Steps of this host's wall clock that the replica noticed (RedisClock.detectStep). */
  readonly clockSteps: Counter;
  private readonly stopCountingCommandErrors: () => void;
  /** The per-schedule health rows of the latest cache pass (what the per-schedule gauges show). */
  private scheduleRows: Iterable<ScheduleHealthRow> = [];
  /**
   * Their exposition text (UTF-8, in slices), built at the first scrape after a pass and kept until the next
   * pass: a replica nobody scrapes builds none, and one scraped every 15 s builds it once per scrape at most.
   */
  private scheduleText: Promise<readonly Buffer[]> | undefined;
  /** Whether a scrape asked for the text since it was last built (then the next pass builds it at once). */
  private scheduleTextWanted = false;
  private readonly replicaLabel: string;

  /**
   * @param o.activeRuns claims held now (0 before the executor runs).
   * @param o.redisUp whether the latest PING of the flock-wide cache was answered recently.
   * @param o.tenantOf a schedule's tenant (undefined: none): per-schedule series carry it as the `tenant` label
   *   where set. Only the tenant, never labels: a schedule has one tenant, so the series do not multiply.
   */
  constructor(o: { clock: RedisClock; activeRuns: () => number; replica: string; redisUp?: () => boolean; tenantOf?: (schedule: string) => string | undefined }) {
    this.replicaLabel = labelValue(o.replica);
    const tenantOf = o.tenantOf;
    this.tenantLabel = (schedule) => {
      const t = tenantOf?.(schedule);
      return t === undefined ? {} : { tenant: t };
    };
    const r = this.registry;
    r.setDefaultLabels({ replica: o.replica });
    // Job kinds and in-process jobs register on the default registry, served beside this one: same labels.
    register.setDefaultLabels({ replica: o.replica });
    collectDefaultMetrics({ register: r, prefix: 'cronflock_process_' });
    this.runs = new Counter({
      name: 'cronflock_runs_total',
      help: 'Attempts that ended, by schedule and outcome: succeeded, failed (the occurrence failed for good), retrying (a failed attempt that will be retried)',
      labelNames: ['schedule', 'state', 'tenant'],
      registers: [r],
    });
    this.notRun = new Counter({
      name: 'cronflock_occurrences_not_run_total',
      help: 'Occurrences recorded missed or skipped (by this replica), by reason',
      labelNames: ['schedule', 'state', 'reason', 'tenant'],
      registers: [r],
    });
    this.delayed = new Counter({
      name: 'cronflock_occurrences_delayed_total',
      help: 'Occurrences planned (by this replica) to fire later than their jitter window, by reason (blackout <name>): their start lateness counts from the later fire time',
      labelNames: ['schedule', 'reason', 'tenant'],
      registers: [r],
    });
    this.claims = new Counter({
      name: 'cronflock_claims_total',
      help: 'Claims taken, kind=first or reclaim (a later attempt: after a stall, a hand-over or a retry)',
      labelNames: ['schedule', 'kind', 'tenant'],
      registers: [r],
    });
    this.lateness = new Histogram({
      name: 'cronflock_start_lateness_seconds',
      help: 'Start of the first attempt after the fire time, on the Redis clock',
      labelNames: ['schedule', 'tenant'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [r],
    });
    this.gateWait = new Histogram({
      name: 'cronflock_gate_wait_seconds',
      help: 'How long a claim taken by this replica waited for a concurrency group slot or a rate limit (gate="group <name>" or "rate limit of <schedule>" / "rate limit of group <name>") before it started',
      labelNames: ['schedule', 'gate', 'tenant'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [r],
    });
    this.groupWaiting = new Gauge({
      name: 'cronflock_group_waiting',
      help: 'Occurrences waiting for a slot or a start of a concurrency group, flock-wide, as of the latest read (the groups of the schedules this replica runs)',
      labelNames: ['group'],
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
    this.waitShortfalls = new Counter({
      name: 'cronflock_redis_wait_shortfall_total',
      help: 'WAITs (--redis-wait-replicas) that fewer Redis replicas acknowledged in time than asked: after=claim (the run was not started, the claim given back) or final (the record may be lost in a failover)',
      labelNames: ['after'],
      registers: [r],
    });
    for (const after of ['claim', 'final']) this.waitShortfalls.inc({ after }, 0);
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
    new Gauge({
      name: 'cronflock_redis_up',
      help: "Whether this replica's Redis answers: 1 when its latest PING (every second) was answered within 3 s, else 0",
      registers: [r],
      collect() {
        this.set(o.redisUp?.() === false ? 0 : 1);
      },
    });
    this.schedules = new Gauge({
      name: 'cronflock_schedules',
      help: 'Schedules this replica runs, flock-wide health: health=total, overdue, failing (a failure since the latest success), suspended',
      labelNames: ['health'],
      registers: [r],
    });
    this.queueJobs = new Gauge({
      name: 'cronflock_queue_jobs',
      help: "Jobs on the flock's queues, flock-wide, by lane (live, backlog) and state: waiting (fire time come, no free worker slot yet), delayed (due later), active (held by a worker)",
      labelNames: ['lane', 'state'],
      registers: [r],
    });
    this.stopCountingCommandErrors = onRedisCommandError(() => this.redisErrors.inc({ kind: 'command' }));
  }

  /**
   * Takes the per-schedule health `rows` (already chosen by `--schedule-metrics`) of a cache pass and sets the
   * totals. The text of the gauges ({@link SCHEDULE_GAUGES}) starts to be built here, in slices, when a scrape
   * asked for it since the last pass (a scrape meanwhile waits for it); otherwise at the next scrape
   * ({@link render}). A replica nobody scrapes builds none: rebuilding 100,000 schedules' series
   * after every pass (every 2 s) cost a fifth of a core and ~30 MB of text, scraped or not.
   * One call at a time (the cache's loop calls it after each pass).
   */
  async setScheduleHealth(rows: Iterable<ScheduleHealthRow>, totals: ScheduleHealthTotals): Promise<void> {
    for (const [health, n] of Object.entries(totals)) this.schedules.set({ health }, n);
    this.scheduleRows = rows;
    if (this.scheduleTextWanted) {
      // Not awaited: the cache's loop (its PING, which readiness watches) does not wait for the text.
      this.scheduleTextWanted = false;
      this.scheduleText = this.buildScheduleHealthText(rows);
    } else {
      this.scheduleText = undefined;
    }
  }

  /** The text of the per-schedule health gauges for the latest rows (built now if the last pass did not). */
  private scheduleHealthText(): Promise<readonly Buffer[]> {
    this.scheduleTextWanted = true;
    return (this.scheduleText ??= this.buildScheduleHealthText(this.scheduleRows));
  }

  /** Builds the text of `rows`, yielding to the event loop every {@link SERIES_PER_SLICE} series. */
  private async buildScheduleHealthText(rows: Iterable<ScheduleHealthRow>): Promise<readonly Buffer[]> {
    // Kept as bytes, a slice at a time: joining 600,000 lines into one string blocked the event loop ~200 ms.
    const chunks: Buffer[] = [];
    let pending: string[] = [];
    for (const g of SCHEDULE_GAUGES) {
      let header = `# HELP ${g.name} ${g.help}\n# TYPE ${g.name} gauge\n`;
      for (const row of rows) {
        for (const [labels, value] of g.series(row)) {
          if (header) pending.push(header);
          header = '';
          const tenant = row.tenant !== undefined ? `,tenant="${labelValue(row.tenant)}"` : '';
          pending.push(`${g.name}{schedule="${labelValue(row.name)}"${labels}${tenant},replica="${this.replicaLabel}"} ${value}\n`);
          if (pending.length >= SERIES_PER_SLICE) {
            chunks.push(Buffer.from(pending.join('')));
            pending = [];
            await new Promise((r) => setImmediate(r));
          }
        }
      }
    }
    if (pending.length > 0) chunks.push(Buffer.from(pending.join('')));
    return chunks;
  }

  /** Sets the flock-wide queue gauge from the admin cache's latest read (lane → counts). */
  setQueues(queues: ReadonlyMap<string, QueueCounts>): void {
    this.queueJobs.reset();
    for (const [lane, c] of queues) {
      for (const state of ['waiting', 'delayed', 'active'] as const) this.queueJobs.set({ lane, state }, c[state]);
    }
  }

  /** Sets the flock-wide group-waiting gauge from the admin cache's latest read (group → waiting occurrences). */
  setGroupWaiting(counts: ReadonlyMap<string, number>): void {
    this.groupWaiting.reset();
    for (const [group, n] of counts) this.groupWaiting.set({ group }, n);
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
   * The Prometheus text of this replica (UTF-8): its own registry, the per-schedule health gauges, then
   * prom-client's default registry, where job kinds (a backup's progress gauge) and in-process user jobs
   * register (a merged registry would drop the replica's default labels).
   */
  async render(): Promise<{ contentType: string; body: Buffer }> {
    const own = await this.registry.metrics();
    const jobs = await register.metrics();
    const parts = [Buffer.from(own), ...(await this.scheduleHealthText()), Buffer.from(jobs ? `\n${jobs}` : '')];
    return { contentType: this.registry.contentType, body: Buffer.concat(parts) };
  }

  /** Counts what `events` reports from now on: runs, and occurrences the planner recorded final. */
  subscribeTo(events: EngineEvents): void {
    events.on('run', (e) => this.onRun(e));
    events.on('plannedFinal', (e) => this.onPlannedFinal(e));
    events.on('plannedLate', (e) => this.onPlannedLate(e));
    events.on('waitShortfall', (e) => this.waitShortfalls.inc({ after: e.after }));
  }

  /** Feeds a run event of the executor. */
  onRun(e: RunEvent): void {
    const t = this.tenantLabel(e.schedule);
    switch (e.state) {
      case 'started':
        this.claims.inc({ ...t, schedule: e.schedule, kind: (e.attempt ?? 1) > 1 ? 'reclaim' : 'first' });
        if ((e.attempt ?? 1) === 1 && e.startMs !== undefined) this.lateness.observe({ ...t, schedule: e.schedule }, Math.max(0, e.startMs - e.fireMs) / 1000);
        if (e.waited) this.gateWait.observe({ ...t, schedule: e.schedule, gate: e.waited.gate }, e.waited.ms / 1000);
        break;
      case 'succeeded':
      case 'failed':
      case 'retrying':
        this.runs.inc({ ...t, schedule: e.schedule, state: e.state });
        break;
      case 'skipped':
      case 'missed':
        this.notRun.inc({ ...t, schedule: e.schedule, state: e.state, reason: reasonLabel(e.error ?? e.state) });
        break;
      case 'stalled-out':
        this.runs.inc({ ...t, schedule: e.schedule, state: 'failed' });
        break;
      default:
        break;
    }
  }

  /**
   * Feeds an occurrence the planner recorded to run with a reason: counts those a blackout delayed (the reason is
   * `delayed: blackout <name> until …`, after `catch-up: …; ` when it also runs late: lua/plan.lua).
   */
  onPlannedLate(o: { schedule: string; reason: string }): void {
    const delayed = /(?:^|; )(delayed: blackout .*)$/.exec(o.reason);
    if (delayed) this.delayed.inc({ ...this.tenantLabel(o.schedule), schedule: o.schedule, reason: reasonLabel(delayed[1]!) });
  }

  /** Feeds an occurrence the planner recorded missed or skipped. */
  onPlannedFinal(o: PlannedFinalEvent): void {
    this.notRun.inc({ ...this.tenantLabel(o.schedule), schedule: o.schedule, state: o.state, reason: reasonLabel(o.reason) });
  }
}

/** A bounded label value: the reason without the occurrence keys some reasons name. */
export function reasonLabel(reason: string): string {
  const delayed = /^(?:starting deadline exceeded \()?delayed: (blackout .*) until /.exec(reason);
  if (delayed) return reason.startsWith('starting') ? 'starting deadline exceeded (blackout delay)' : delayed[1]!.slice(0, 60);
  // without the seconds waited: one series per group or rate limit (redis/lua/includes/gates.lua)
  if (reason.startsWith('starting deadline exceeded: waited for ')) return reason.replace(/ \d+(\.\d+)? s$/, '').slice(0, 80);
  if (reason.startsWith('overlap')) return 'overlap';
  if (reason.startsWith('superseded')) return 'superseded';
  if (reason.startsWith('catch-up')) return 'catch-up';
  if (reason.startsWith('schedule "')) return 'schedule not defined';
  return reason.slice(0, 60);
}
