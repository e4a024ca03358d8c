/**
 * The OpenTelemetry implementation of {@link OccurrenceTracer} (the span model is in tracer.ts). Imported only
 * when tracing is on. Spans go through a batch processor (one export a second by default,
 * `OTEL_BSP_SCHEDULE_DELAY` to change it) to an OTLP/HTTP exporter (JSON), whose endpoint comes from `--otel`
 * or OpenTelemetry's own environment variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`,
 * `…_HEADERS`).
 *
 * The trace id of an occurrence, and its root span's id, are derived from its key (ids.ts). The SDK makes ids
 * with an IdGenerator: ours hands out the derived ids for the one span they are asked for (the root), random
 * ones otherwise. Every other span is a child of the root through a parent context built from those ids.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator, type IdGenerator } from '@opentelemetry/sdk-trace-base';
import type { TraceContext } from '../../jobs/types.js';
import { packageVersion } from '../cli/package-info.js';
import type { RunEvent } from '../engine/events.js';
import { occurrenceTraceIds, traceparent } from './ids.js';
import type { AttemptTrace, OccurrenceTracer, PlannedOccurrenceTrace, TracingOptions } from './tracer.js';

/** Random ids, except for the one span whose ids were forced just before it starts (a root span). */
class OccurrenceIdGenerator implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  private forced: { traceId?: string; spanId?: string } = {};

  /** The next span started gets these ids (start it at once: the SDK asks synchronously). */
  force(traceId: string, spanId: string): void {
    this.forced = { traceId, spanId };
  }
  generateTraceId(): string {
    const id = this.forced.traceId ?? this.random.generateTraceId();
    this.forced.traceId = undefined;
    return id;
  }
  generateSpanId(): string {
    const id = this.forced.spanId ?? this.random.generateSpanId();
    this.forced.spanId = undefined;
    return id;
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();
const FINAL = new Set(['succeeded', 'failed', 'skipped', 'missed', 'stalled-out']);

/** See tracer.ts. */
export class OtelOccurrenceTracer implements OccurrenceTracer {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly ids = new OccurrenceIdGenerator();
  /** Attempt spans running on this replica, by occurrence key and fencing token. */
  private readonly attempts = new Map<string, Span>();

  constructor(private readonly o: TracingOptions & { endpoint?: string }) {
    const env = o.env;
    const exporter = new OTLPTraceExporter({
      ...(o.endpoint ? { url: `${o.endpoint.replace(/\/+$/, '')}/v1/traces` } : {}),
      timeoutMillis: 5_000,
    });
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({
        'service.name': env.OTEL_SERVICE_NAME || 'cronflock',
        'service.version': packageVersion(),
        'service.instance.id': o.replica,
        'cronflock.namespace': o.namespace,
      }),
      idGenerator: this.ids,
      spanProcessors: [
        new BatchSpanProcessor(exporter, {
          scheduledDelayMillis: Number(env.OTEL_BSP_SCHEDULE_DELAY) || 1_000,
          exportTimeoutMillis: Number(env.OTEL_BSP_EXPORT_TIMEOUT) || 5_000,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('cronflock', packageVersion());
    o.log.info({ endpoint: o.endpoint ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318' }, 'tracing: OpenTelemetry spans go to OTLP/HTTP');
  }

  /** Attributes every span of an occurrence carries. */
  private common(x: { schedule: string; key: string; dueMs: number; fireMs: number }): Attributes {
    return {
      'cronflock.occurrence.key': x.key,
      'cronflock.schedule': x.schedule,
      'cronflock.due_time': iso(x.dueMs),
      'cronflock.fire_time': iso(x.fireMs),
      'cronflock.replica': this.o.replica,
    };
  }

  /** Starts the root span of an occurrence's trace (derived ids). */
  private root(key: string, name: string, startMs: number, attributes: Attributes): Span {
    const { traceId, rootSpanId } = occurrenceTraceIds(this.o.namespace, key);
    this.ids.force(traceId, rootSpanId);
    return this.tracer.startSpan(name, { root: true, startTime: new Date(startMs), attributes, kind: SpanKind.INTERNAL });
  }

  /** Starts a span under the root of occurrence `key`'s trace. */
  private child(key: string, name: string, startMs: number, attributes: Attributes): Span {
    const { traceId, rootSpanId } = occurrenceTraceIds(this.o.namespace, key);
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: rootSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    return this.tracer.startSpan(name, { startTime: new Date(startMs), attributes, kind: SpanKind.INTERNAL }, parent);
  }

  planned(items: readonly PlannedOccurrenceTrace[], startMs: number, endMs: number): void {
    for (const it of items) {
      const attrs = { ...this.common(it), 'cronflock.origin': 'schedule', 'cronflock.state': it.state, ...(it.reason ? { 'cronflock.reason': it.reason } : {}) };
      this.root(it.key, 'plan', startMs, attrs).end(new Date(endMs));
      if (it.state !== 'scheduled') this.finish(it.key, endMs, { ...attrs });
    }
  }

  attemptStarted(a: AttemptTrace): TraceContext | undefined {
    const attrs: Attributes = {
      ...this.common(a),
      'cronflock.origin': a.origin,
      'cronflock.attempt': a.attempt,
      'cronflock.fencing_token': a.fencingToken,
      'cronflock.lateness_ms': a.startMs - a.fireMs,
    };
    // Occurrences the planner did not record (trigger, backfill, resume) get their root at their first claim.
    if (a.origin !== 'schedule' && a.attempt === 1) this.root(a.key, a.origin, a.claimSentMs, attrs).end(new Date(a.claimSentMs));
    this.child(a.key, a.attempt === 1 ? 'claim' : 'reclaim', a.claimSentMs, attrs).end(new Date(a.startMs));
    const span = this.child(a.key, `attempt ${a.attempt}`, a.startMs, attrs);
    this.attempts.set(`${a.key}#${a.fencingToken}`, span);
    const { traceId, spanId } = span.spanContext();
    return { traceparent: traceparent(traceId, spanId), traceId, spanId };
  }

  onRun(e: RunEvent): void {
    if (e.state === 'started') return;
    const id = `${e.key}#${e.fencingToken}`;
    const span = e.fencingToken === undefined ? undefined : this.attempts.get(id);
    const endMs = e.endMs ?? Date.now();
    if (span) {
      this.attempts.delete(id);
      span.setAttribute('cronflock.outcome', e.state);
      if (e.error) span.setAttribute('cronflock.error', e.error);
      if (e.state !== 'succeeded') span.setStatus({ code: SpanStatusCode.ERROR, message: e.error ?? e.state });
      span.end(new Date(endMs));
    }
    if (FINAL.has(e.state) && e.recorded !== false) {
      this.finish(e.key, endMs, {
        ...this.common(e),
        'cronflock.state': e.state === 'stalled-out' ? 'failed' : e.state,
        ...(e.error ? { 'cronflock.reason': e.error } : {}),
        ...(e.attempt !== undefined ? { 'cronflock.attempt': e.attempt } : {}),
        ...(e.fencingToken !== undefined ? { 'cronflock.fencing_token': e.fencingToken } : {}),
      });
    }
  }

  private finish(key: string, atMs: number, attrs: Attributes): void {
    const span = this.child(key, 'finish', atMs, attrs);
    if (attrs['cronflock.state'] === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, message: String(attrs['cronflock.reason'] ?? 'failed') });
    span.end(new Date(atMs));
  }

  async shutdown(): Promise<void> {
    for (const span of this.attempts.values()) span.end(); // runs handed over at stop: their spans end here
    this.attempts.clear();
    await this.provider.shutdown();
  }
}
