/**
 * Prometheus metrics of a replica (prom-client). Counters count what THIS replica decided or ran; sum them
 * over replicas for the flock. Gauges read from Redis at scrape time are flock-wide (last success per
 * schedule). Names follow Prometheus conventions: `_total` counters, base units (seconds).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, register } from 'prom-client';

/** How long a scrape waits for the flock-wide last-success times from Redis. */
const LAST_SUCCESS_READ_TIMEOUT_MS = 1_000;
import type { RunEvent } from '../engine/executor.js';
import type { PlannedOccurrence } from '../redis/store.js';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import type { RedisClock } from '../redis/clock.js';

/** The metrics of one replica and the hooks that feed them. */
export class Metrics {
  readonly registry = new Registry();
  private readonly runs: Counter<'schedule' | 'state'>;
  private readonly notRun: Counter<'schedule' | 'state' | 'reason'>;
  private readonly delayed: Counter<'schedule' | 'reason'>;
  private readonly claims: Counter<'schedule' | 'kind'>;
  private readonly lateness: Histogram<'schedule'>;
  private readonly active: Gauge;
  readonly redisErrors: Counter;

  constructor(o: { redis: RedisClient; keys: Keyspace; clock: RedisClock; activeRuns: () => number; replica: string }) {
    const r = this.registry;
    r.setDefaultLabels({ replica: o.replica });
    // Job kinds and in-process jobs register on the default registry, served beside this one: same labels.
    register.setDefaultLabels({ replica: o.replica });
    collectDefaultMetrics({ register: r, prefix: 'cronflock_process_' });
    this.runs = new Counter({
      name: 'cronflock_runs_total',
      help: 'Attempts that ended, by schedule and final state (succeeded, failed, retrying)',
      labelNames: ['schedule', 'state'],
      registers: [r],
    });
    this.notRun = new Counter({
      name: 'cronflock_occurrences_not_run_total',
      help: 'Occurrences recorded missed or skipped (by this replica), by reason',
      labelNames: ['schedule', 'state', 'reason'],
      registers: [r],
    });
    this.delayed = new Counter({
      name: 'cronflock_occurrences_delayed_total',
      help: 'Occurrences planned (by this replica) to fire later than their jitter window, by reason (blackout <name>): their start lateness counts from the later fire time',
      labelNames: ['schedule', 'reason'],
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
      help: 'Redis server time minus this host time (positive: this host is behind)',
      registers: [r],
      collect() {
        this.set(o.clock.offsetMs / 1000);
      },
    });
    this.redisErrors = new Counter({ name: 'cronflock_redis_errors_total', help: 'Redis connection and command errors', registers: [r] });
    new Gauge({
      name: 'cronflock_last_success_timestamp_seconds',
      help: 'Redis time of the latest success of each schedule, flock-wide (alert on time() minus this)',
      labelNames: ['schedule'],
      registers: [r],
      async collect() {
        // A scrape must answer while Redis hangs (that is when cronflock_redis_errors_total matters): give the
        // read a second, then serve the other metrics and keep the last values of this one.
        let timer: NodeJS.Timeout | undefined;
        const all = await Promise.race([
          o.redis.hgetall(o.keys.lastSuccess).catch(() => null),
          new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), LAST_SUCCESS_READ_TIMEOUT_MS))),
        ]).finally(() => clearTimeout(timer));
        if (all === null) return;
        this.reset();
        for (const [schedule, ms] of Object.entries(all)) this.set({ schedule }, Number(ms) / 1000);
      },
    });
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

  /** Feeds an occurrence the planner recorded to run with a reason: counts those a blackout delayed. */
  onPlannedLate(o: PlannedOccurrence): void {
    if (o.reason.startsWith('delayed: ')) this.delayed.inc({ schedule: o.schedule, reason: reasonLabel(o.reason) });
  }

  /** Feeds an occurrence the planner recorded missed or skipped. */
  onPlannedFinal(o: PlannedOccurrence): void {
    this.notRun.inc({ schedule: o.schedule, state: o.disposition, reason: reasonLabel(o.reason) });
  }
}

/** A bounded label value: the reason without the occurrence keys some reasons name. */
export function reasonLabel(reason: string): string {
  const delayed = /^(?:starting deadline exceeded \()?delayed: (blackout .*) until /.exec(reason);
  if (delayed) return reason.startsWith('starting') ? 'starting deadline exceeded (blackout delay)' : delayed[1]!.slice(0, 60);
  if (reason.startsWith('overlap')) return 'overlap';
  if (reason.startsWith('superseded')) return 'superseded';
  if (reason.startsWith('catch-up')) return 'catch-up';
  if (reason.startsWith('schedule "')) return 'schedule not defined';
  return reason.slice(0, 60);
}
