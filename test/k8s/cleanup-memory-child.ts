/**
 * Child process of cleanup-memory.test.ts: runs one cleanup (`plan`, full objects through a filter) from the
 * params in argv[2] (JSON) and prints its report and peak heap as JSON. Started with a small
 * --max-old-space-size, so a run that held the listed objects in memory would die.
 */
import { findJobKind } from '../../jobs/registry.js';

const params = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>;
const kind = findJobKind('cleanup')!;
let peak = 0;
const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
const noop = (): void => undefined;
const now = Date.now();
const report = await kind.run(
  {
    occurrence: { schedule: 'memory', key: `memory@${new Date(now).toISOString()}`, dueMs: now, fireMs: now, startMs: now, attempt: 1, fencingToken: 1, manual: true },
    signal: new AbortController().signal,
    log: { info: noop, warn: noop, error: noop, debug: noop },
    replica: 'child',
  },
  kind.schema.parse(params),
);
clearInterval(sample);
process.stdout.write(`${JSON.stringify({ report, peakHeapMb: Math.round(peak / 1048576) })}\n`);
