/**
 * Child process of backup-memory.test.ts: runs one backup from the params in argv[2] (JSON, a `job:` block;
 * argv[3] is the due time in ms) and prints its report, peak heap and peak RSS as JSON. Started with a small
 * --max-old-space-size, so a run that held the listed objects (or the archive) in memory would die.
 */
import { findJobKind } from '../../jobs/registry.js';

const params = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>;
const dueMs = Number(process.argv[3]);
const kind = findJobKind('backup')!;
let peakHeap = 0;
let peakRss = 0;
const sample = setInterval(() => {
  const m = process.memoryUsage();
  peakHeap = Math.max(peakHeap, m.heapUsed);
  peakRss = Math.max(peakRss, m.rss);
}, 5);
const noop = (): void => undefined;
const t0 = performance.now();
const report = await kind.run(
  {
    occurrence: { schedule: 'memory', key: `memory@${new Date(dueMs).toISOString()}`, dueMs, fireMs: dueMs, startMs: Date.now(), attempt: 1, fencingToken: 1, manual: false },
    signal: new AbortController().signal,
    log: { info: noop, warn: noop, error: noop, debug: noop },
    replica: 'child',
  },
  await kind.compile!(kind.schema.parse(params), { baseDir: process.cwd() }),
);
clearInterval(sample);
process.stdout.write(`${JSON.stringify({ report, peakHeapMb: Math.round(peakHeap / 1048576), peakRssMb: Math.round(peakRss / 1048576), ms: Math.round(performance.now() - t0) })}\n`);
