/**
 * OpenTelemetry traces of occurrences, off unless asked for (`--otel`, or `OTEL_EXPORTER_OTLP_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set). The OpenTelemetry SDK is imported only then (otel.ts), so a
 * replica without tracing loads none of it (like the lazy job kinds, jobs/lazy.ts).
 *
 * One trace per occurrence (ids.ts: derived from the occurrence key, the same on every replica):
 * - `plan` — the root: the replica whose plan call recorded the occurrence (a `trigger`, `backfill` or
 *   `resume` occurrence's root is its first claim's creation span instead);
 * - `claim` / `reclaim` — each claim that got the occurrence (attempt 1, or a later one after a stall, a
 *   hand-over or a retry), on the claiming replica;
 * - `attempt N` — the run of each attempt on that replica, with its outcome; an attempt whose replica is
 *   killed leaves its `claim` span (exported as soon as the claim was taken), not this one;
 * - `finish` — the final state, on the replica that recorded it (for missed and skipped occurrences too).
 * Every span carries the occurrence key, schedule, replica, fencing token and attempt where known, and
 * times on the Redis clock. http jobs send the attempt span's `traceparent`; module jobs get it as
 * `context.trace`.
 */
import type { Logger } from '../log.js';
import type { RunEvent } from '../engine/events.js';
import type { Origin } from '../records/runs.js';
import type { PlannedFinal } from '../redis/store.js';
import type { TraceContext } from '../../jobs/types.js';

/** An occurrence the planner recorded. Times are Redis UTC ms. */
export interface PlannedOccurrenceTrace {
  schedule: string;
  key: string;
  dueMs: number;
  fireMs: number;
  /** `scheduled` (to run), or the final state it was recorded in, with its reason. */
  state: 'scheduled' | PlannedFinal['state'];
  reason?: string;
}

/** A claimed attempt about to run. Times are Redis UTC ms. */
export interface AttemptTrace {
  schedule: string;
  key: string;
  dueMs: number;
  fireMs: number;
  origin: Origin;
  attempt: number;
  fencingToken: number;
  /** When the claim request was sent, and when the claim was taken (the attempt's start). */
  claimSentMs: number;
  startMs: number;
}

/** What the engine tells the tracing about occurrences. */
export interface OccurrenceTracer {
  /** The planner recorded `items` in one plan call, between `startMs` and `endMs`. */
  planned(items: readonly PlannedOccurrenceTrace[], startMs: number, endMs: number): void;
  /** An attempt was claimed and its job is about to run: the context to give the job (undefined: none). */
  attemptStarted(a: AttemptTrace): TraceContext | undefined;
  /** A run event of the executor: ends attempt spans, records final states. */
  onRun(e: RunEvent): void;
  /** Exports what is pending; bounded by the exporter's timeout. */
  shutdown(): Promise<void>;
}

/** No tracing: every call does nothing. */
export const NO_TRACING: OccurrenceTracer = {
  planned: () => undefined,
  attemptStarted: () => undefined,
  onRun: () => undefined,
  shutdown: async () => undefined,
};

/** How tracing is asked for. */
export interface TracingOptions {
  /** `--otel`: true (the OTLP endpoint from the environment, else http://localhost:4318), or an endpoint URL. */
  flag: boolean | string | undefined;
  env: NodeJS.ProcessEnv;
  replica: string;
  namespace: string;
  log: Logger;
}

/** Whether tracing is on: `--otel`, or an OTLP endpoint in the environment (OpenTelemetry's variables). */
export function tracingWanted(o: Pick<TracingOptions, 'flag' | 'env'>): boolean {
  return Boolean(o.flag) || Boolean(o.env.OTEL_EXPORTER_OTLP_ENDPOINT || o.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * The endpoint `--otel` names: undefined for `--otel` alone (or none).
 * @throws Error when it is not an http(s) URL.
 */
export function otelFlagEndpoint(flag: boolean | string | undefined): string | undefined {
  if (typeof flag !== 'string') return undefined;
  if (!/^https?:\/\/[^/]/.test(flag)) throw new Error(`--otel "${flag}" must be the OTLP/HTTP endpoint, e.g. http://otel-collector:4318`);
  return flag;
}

/**
 * The tracer of this replica: {@link NO_TRACING} unless tracing is wanted; then the OpenTelemetry SDK is
 * imported and spans go to the OTLP/HTTP endpoint.
 * @throws Error when `--otel` names something that is not an http(s) URL.
 */
export async function startTracing(o: TracingOptions): Promise<OccurrenceTracer> {
  if (!tracingWanted(o)) return NO_TRACING;
  const endpoint = otelFlagEndpoint(o.flag);
  const { OtelOccurrenceTracer } = await import('./otel.js');
  return new OtelOccurrenceTracer({ ...o, endpoint });
}
