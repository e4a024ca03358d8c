/**
 * OpenTelemetry traces (runner/tracing/): a flock of two replicas tracing to an in-process OTLP/HTTP receiver
 * (test/support/otlp-receiver.ts, a real endpoint that decodes OTLP JSON). A claimant is SIGKILLed in the middle
 * of an http job; the other replica re-claims and finishes it: the receiver gets ONE trace for that
 * occurrence, rooted at its plan, with the first claim on one replica and the re-claim, the attempt and the
 * final state on the other, and the http receiver got that trace's `traceparent` with each attempt. Module jobs
 * get the context as `context.trace`. Without `--otel` (and no OTLP endpoint in the environment) nothing is
 * traced, and the OpenTelemetry SDK is never imported.
 */
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { occurrenceTraceIds } from '../../runner/tracing/ids.js';
import { Flock, until } from '../support/flock.js';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { ROOT } from '../support/replica.js';

const WRITER = join(ROOT, 'test/fixtures/jobs/trace-writer.mjs');

describe('traces', () => {
  let flock: Flock | undefined;
  let otlp: OtlpReceiver | undefined;
  afterEach(async () => {
    await flock?.close();
    await otlp?.close();
    flock = otlp = undefined;
  });

  it('one trace per occurrence across replicas: a SIGKILLed attempt and its re-claim; traceparent reaches the http receiver; module jobs get the context', async () => {
    otlp = await OtlpReceiver.start();
    flock = await Flock.start();
    const f = flock;
    // The first attempt of `slow` hangs (its claimant is killed meanwhile); later attempts answer at once.
    f.receiver.holdFor = (b) => (b.schedule === 'slow' && b.attempt === 1 ? 60_000 : undefined);
    const traceFile = join(f.dir, 'traces.jsonl');
    const file = f.writeSchedules(`schedules:
  - { name: slow, cron: "*/20 * * * * *", job: { kind: http, url: ${f.receiver.url}/slow, timeout: 90s } }
  - { name: mod, cron: "*/3 * * * * *", job: { kind: module, path: ${WRITER}, params: { file: ${traceFile} } } }
`);
    const args = ['--otel', otlp.url];
    const replicas = [await f.startReplica({ name: 'ta', schedules: file, args }), await f.startReplica({ name: 'tb', schedules: file, args })];
    const o = otlp;

    await until(() => f.receiver.of('slow').length >= 1, 40_000, 'the first attempt of slow');
    const first = f.receiver.of('slow')[0]!;
    const key = first.body.occurrence;
    const victim = replicas.find((r) => r.name === first.body.replica)!;
    const survivor = replicas.find((r) => r !== victim)!;
    // The claim span leaves the claimant within a second (batch export); then the claimant dies mid-attempt.
    await until(() => o.of(key).some((s) => s.name === 'claim'), 10_000, 'the claim span of attempt 1');
    victim.signal('SIGKILL');
    await until(async () => (await f.runs('slow')).some((r) => r.key === key && r.state === 'succeeded'), 30_000, 're-claimed and succeeded');
    await until(() => o.of(key).some((s) => s.name === 'finish'), 10_000, 'the finish span');

    const { traceId, rootSpanId } = occurrenceTraceIds('cronflock', key);
    const spans = o.of(key);
    const named = (name: string): ReceivedSpan[] => spans.filter((s) => s.name === name);
    // One trace: every span of the occurrence in it, under the one root, the plan.
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([traceId]));
    expect(spans.filter((s) => s.parentSpanId === '').map((s) => [s.name, s.spanId])).toEqual([['plan', rootSpanId]]);
    for (const s of spans) if (s.name !== 'plan') expect(s.parentSpanId, s.name).toBe(rootSpanId);
    for (const s of spans) expect(s.resource['service.instance.id'], s.name).toBe(s.attributes['cronflock.replica']);
    // Attempt 1 on the victim (its claim; its run died with it), attempt 2 on the survivor, with their tokens.
    expect(named('claim')).toHaveLength(1);
    expect(named('claim')[0]!.attributes).toMatchObject({ 'cronflock.replica': victim.name, 'cronflock.attempt': 1, 'cronflock.fencing_token': 1, 'cronflock.schedule': 'slow' });
    expect(typeof named('claim')[0]!.attributes['cronflock.lateness_ms']).toBe('number');
    expect(named('reclaim')).toHaveLength(1);
    expect(named('reclaim')[0]!.attributes).toMatchObject({ 'cronflock.replica': survivor.name, 'cronflock.attempt': 2, 'cronflock.fencing_token': 2 });
    const attempt2 = named('attempt 2');
    expect(attempt2).toHaveLength(1);
    expect(attempt2[0]!.attributes).toMatchObject({ 'cronflock.replica': survivor.name, 'cronflock.fencing_token': 2, 'cronflock.outcome': 'succeeded' });
    expect(attempt2[0]!.status).not.toBe(2);
    expect(named('attempt 1')).toEqual([]);
    expect(named('finish').map((s) => s.attributes)).toEqual([expect.objectContaining({ 'cronflock.state': 'succeeded', 'cronflock.replica': survivor.name })]);
    // Times on one clock: plan before the first claim, the re-claim after it, the finish last.
    const at = (name: string) => named(name)[0]!.startMs;
    expect(at('plan')).toBeLessThanOrEqual(at('claim'));
    expect(at('claim')).toBeLessThan(at('reclaim'));
    expect(at('reclaim')).toBeLessThanOrEqual(at('finish'));

    // The http receiver got the trace with each attempt: attempt 2's header names its attempt span.
    const calls = f.receiver.of('slow').filter((d) => d.body.occurrence === key);
    expect(calls.map((d) => d.body.attempt)).toEqual([1, 2]);
    for (const d of calls) expect(String(d.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(calls[1]!.headers.traceparent).toBe(`00-${traceId}-${attempt2[0]!.spanId}-01`);

    // Module jobs: context.trace is their attempt span's context.
    await until(() => existsSync(traceFile) && readFileSync(traceFile, 'utf8').trim().split('\n').length >= 2, 15_000, 'module job runs');
    const lines = readFileSync(traceFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { key: string; attempt: number; trace: { traceparent: string; traceId: string; spanId: string } | null });
    const line = lines[0]!;
    expect(line.trace?.traceId).toBe(occurrenceTraceIds('cronflock', line.key).traceId);
    await until(() => o.of(line.key).some((s) => s.name === `attempt ${line.attempt}`), 10_000, 'the module attempt span');
    const modSpan = o.of(line.key).find((s) => s.name === `attempt ${line.attempt}`)!;
    expect(line.trace?.traceparent).toBe(`00-${modSpan.traceId}-${modSpan.spanId}-01`);

    // One trace per occurrence, for every occurrence the receiver heard of.
    const traceOf = new Map<string, Set<string>>();
    for (const s of o.spans) {
      const k = String(s.attributes['cronflock.occurrence.key']);
      traceOf.set(k, (traceOf.get(k) ?? new Set()).add(s.traceId));
    }
    expect(traceOf.size).toBeGreaterThanOrEqual(3);
    for (const [k, ids] of traceOf) expect([...ids], k).toEqual([occurrenceTraceIds('cronflock', k).traceId]);
  }, 180_000);

  it('without --otel or an OTLP endpoint: no traceparent, no tracing', async () => {
    flock = await Flock.start();
    const f = flock;
    const file = f.writeSchedules(`schedules:\n  - { name: plain, cron: "* * * * * *", job: { kind: http, url: ${f.receiver.url}/plain } }\n`);
    const r = await f.startReplica({ name: 'plain', schedules: file, env: { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' } });
    await until(() => f.receiver.of('plain').length >= 2, 15_000, 'runs');
    expect(f.receiver.of('plain').every((d) => d.headers.traceparent === undefined)).toBe(true);
    expect(r.lines.some((l) => String(l.msg).startsWith('tracing:'))).toBe(false);
  });

  it('the OpenTelemetry SDK is not among the static imports of the CLI (it is imported only when tracing is on)', () => {
    // Walk the compiled modules the CLI imports statically (import … from, export … from), as Node loads them.
    const seen = new Set<string>();
    const bare: string[] = [];
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const src = readFileSync(file, 'utf8');
      for (const m of src.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm)) {
        const spec = m[1] ?? m[2]!;
        if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
        else bare.push(spec);
      }
    };
    visit(join(ROOT, 'dist/runner/cli/main.js'));
    expect(seen.size).toBeGreaterThan(20);
    expect(bare.filter((s) => s.includes('opentelemetry'))).toEqual([]);
    // …and the tracing implementation is there, reached only by a dynamic import.
    expect(readdirSync(join(ROOT, 'dist/runner/tracing'))).toContain('otel.js');
    expect(seen.has(join(ROOT, 'dist/runner/tracing/otel.js'))).toBe(false);
  });
});
