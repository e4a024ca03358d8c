/**
 * What a replica reports as it plans and runs: one typed event map, one emitter per replica. The admin metrics,
 * the backfill admission, the demo (through the replica's IPC channel, cli/start-command.ts) and tests subscribe
 * to it; the planner and the executor report to it. (Model: graphile-worker's typed events.)
 *
 * Reporting never affects the engine: a listener that throws is isolated from the others and from the run.
 */
import { EventEmitter } from 'node:events';
import type { Origin, RunState } from '../records/runs.js';
import type { PlannedFinal } from '../redis/store.js';
import type { PlannedOccurrenceTrace } from '../tracing/tracer.js';

/**
 * One delivery's progress or end, from the replica that handled it: `started` (a claim was taken and the job
 * runs), an attempt's end (`succeeded`, `failed`, `retrying`, `skipped` by the job), or why a delivery closed
 * without a run (`missed`, `skipped`, `paused`, `final`, `stale`, `stalled-out`, and `lost` / `handover` for a
 * claim that ended before the job did). The recorded states are {@link RunState}s; the others are the claim's.
 */
export interface RunEvent {
  schedule: string;
  key: string;
  state: 'started' | Exclude<RunState, 'scheduled' | 'running'> | 'lost' | 'handover' | 'paused' | 'final' | 'stale' | 'plan-lost' | 'stalled-out';
  replica: string;
  /** Where the occurrence comes from (the planner, trigger, backfill, resume). */
  origin?: Origin;
  attempt?: number;
  fencingToken?: number;
  /** UTC ms. */
  dueMs: number;
  fireMs: number;
  /** Redis ms. */
  startMs?: number;
  endMs?: number;
  error?: string;
  /** For a lost claim: whether its late completion was refused. */
  recorded?: boolean;
  /** On 'started': the gate (a concurrency group, a rate limit) this claim waited for, and how long (ms). */
  waited?: { gate: string; ms: number };
}

/** An occurrence the planner recorded missed or skipped as it planned it (decided on the Redis clock); due time in UTC ms. */
export type PlannedFinalEvent = PlannedFinal & { schedule: string; dueMs: number };

/** An occurrence the planner recorded to run with a reason: delayed by a blackout, or caught up late. */
export interface PlannedLateEvent {
  schedule: string;
  key: string;
  reason: string;
}

/** What one plan call recorded, with its start and end on the Redis clock (UTC ms): the tracing's plan spans. */
export interface PlanCallEvent {
  items: PlannedOccurrenceTrace[];
  startMs: number;
  endMs: number;
}

/**
 * Fewer Redis replicas acknowledged a claim or a final state than `--redis-wait-replicas` asks: after a claim the
 * run was not started (given back); after a final state the record may be lost in a failover.
 */
export interface WaitShortfallEvent {
  after: 'claim' | 'final';
  key: string;
  asked: number;
  acked: number;
  timeoutMs: number;
}

/** The events, by name, with their arguments. */
export interface EngineEventMap {
  /** A delivery started a run, ended one, or closed without one (the executor). */
  run: [RunEvent];
  /** The planner recorded an occurrence final (missed or skipped) instead of scheduling it. */
  plannedFinal: [PlannedFinalEvent];
  /** The planner recorded an occurrence to run with a reason (a blackout's delay, a catch-up). */
  plannedLate: [PlannedLateEvent];
  /**
   * One plan call's occurrences (tracing, runner/tracing/). Reported only while someone listens: building the
   * list costs a copy per occurrence.
   */
  planned: [PlanCallEvent];
  /** See {@link WaitShortfallEvent} (the executor). */
  waitShortfall: [WaitShortfallEvent];
}

/** The emitter of one replica: subscribe with `on`/`once`/`off` (node:events, typed by {@link EngineEventMap}). */
export class EngineEvents extends EventEmitter<EngineEventMap> {
  constructor() {
    super();
    // Subscribers are a handful of parts of the replica (metrics, admission, supervisors); no leak to detect.
    this.setMaxListeners(0);
  }

  /**
   * Delivers an event to every listener, in the order they subscribed; a listener that throws is skipped over
   * (a subscriber's bug must not affect runs or planning). Use this, not `emit`, from the engine.
   */
  report<K extends keyof EngineEventMap>(name: K, ...args: EngineEventMap[K]): void {
    for (const listener of this.rawListeners(name)) {
      try {
        (listener as (...a: EngineEventMap[K]) => void)(...args);
      } catch {
        /* isolated: see above */
      }
    }
  }
}
