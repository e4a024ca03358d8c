import { describe, expect, it } from 'vitest';
import { otelFlagEndpoint, tracingWanted } from './tracer.js';
import { occurrenceTraceIds, traceparent } from './ids.js';

describe('occurrence trace ids', () => {
  it('are the same for the same namespace and key, W3C-shaped, and differ otherwise', () => {
    const a = occurrenceTraceIds('cronflock', 'nightly@2026-12-01T02:00:00.000Z');
    expect(a).toEqual(occurrenceTraceIds('cronflock', 'nightly@2026-12-01T02:00:00.000Z'));
    expect(a.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(a.rootSpanId).toMatch(/^[0-9a-f]{16}$/);
    expect(occurrenceTraceIds('other', 'nightly@2026-12-01T02:00:00.000Z').traceId).not.toBe(a.traceId);
    expect(occurrenceTraceIds('cronflock', 'nightly@2026-12-02T02:00:00.000Z').traceId).not.toBe(a.traceId);
    expect(traceparent(a.traceId, a.rootSpanId)).toBe(`00-${a.traceId}-${a.rootSpanId}-01`);
  });
});

describe('tracing switch', () => {
  it('is on with --otel or an OTLP endpoint in the environment; --otel takes only an http(s) URL', () => {
    expect(tracingWanted({ flag: undefined, env: {} })).toBe(false);
    expect(tracingWanted({ flag: undefined, env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' } })).toBe(false);
    expect(tracingWanted({ flag: true, env: {} })).toBe(true);
    expect(tracingWanted({ flag: undefined, env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' } })).toBe(true);
    expect(otelFlagEndpoint(true)).toBeUndefined();
    expect(otelFlagEndpoint('http://collector:4318')).toBe('http://collector:4318');
    expect(() => otelFlagEndpoint('collector:4318')).toThrow(/must be the OTLP\/HTTP endpoint/);
  });
});
