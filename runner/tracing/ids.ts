/**
 * Trace identity of an occurrence: every replica derives the same W3C trace id (and the id of the trace's root
 * span) from the flock's namespace and the occurrence key, so the spans of one occurrence — its plan on one
 * replica, its attempts on whichever replicas claimed it, its final state — join one trace without any context
 * passed through Redis or the queue. Pure: sha256, no I/O.
 */
import { createHash } from 'node:crypto';

/** The W3C ids of an occurrence's trace: 32 and 16 lowercase hex digits, never all zero (invalid in W3C). */
export interface OccurrenceTraceIds {
  traceId: string;
  /** The root span's id: the plan (or, for a trigger, backfill or resume, the occurrence's creation). */
  rootSpanId: string;
}

/** The trace of occurrence `key` of the flock in `namespace`. */
export function occurrenceTraceIds(namespace: string, key: string): OccurrenceTraceIds {
  const h = createHash('sha256').update(`cronflock\0${namespace}\0${key}`).digest('hex');
  const nonZero = (hex: string): string => (/^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex);
  return { traceId: nonZero(h.slice(0, 32)), rootSpanId: nonZero(h.slice(32, 48)) };
}

/** A W3C `traceparent` header value (version 00), sampled. */
export function traceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}
