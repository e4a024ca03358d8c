/**
 * Giving back the memory a large load used (`cronflock start` on many schedules).
 *
 * Why: loading 100,000 schedules makes a few hundred MB of garbage (YAML text, structured-clone messages from the
 * loader processes, definitions sent to Redis and read back). V8 grows its heap for it (the young generation up to
 * its maximum, 128 MB on Node 24, and old-space pages) and keeps those pages resident once the garbage is gone: a
 * replica whose live heap was ~150 MB stayed at ~610–690 MB RSS while idle (bench `idle`, 2026-12-02), and only
 * sometimes, at a time nobody chose, V8's memory reducer brought it down to ~330 MB. A replica that is done loading
 * therefore asks V8 once for a memory-reducing full collection (the one V8 runs on a low-memory notification:
 * compacts the old generation, shrinks the young generation, returns empty pages to the OS).
 *
 * How: Node has no API for that collection without `--expose-gc`, and a replica must not need Node flags. V8's
 * flags can be set at run time (`v8.setFlagsFromString`, Node docs), and the `gc` function exists in every context
 * created while `--expose-gc` is set (`vm.runInNewContext('gc')`; Jest's leak detector gets it the same way); the
 * flag is turned off again at once, so no other context gets a `gc` global. Where that fails (a Node or V8 that
 * has no such function) nothing happens and the reducer does what it does.
 *
 * Cost: one full collection blocks the event loop (~0.3–0.8 s at 100,000 schedules, about as long as one of the
 * full collections the load itself ran); it runs once, when the load is done and the replica runs, and only
 * after a load of at least {@link RELEASE_AFTER_SCHEDULES} schedules.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Loads of at least this many schedules are followed by {@link releaseLoadMemory}; smaller ones leave little. */
export const RELEASE_AFTER_SCHEDULES = 10_000;

/** The `gc` function of V8's gc extension (options: V8's `gc-extension.cc`). */
type GcFunction = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async'; flavor?: 'regular' | 'last-resort' }) => void;

let gcFunction: GcFunction | null | undefined;

/** V8's major version (Node 20: 11, Node 22: 12, Node 24: 13). */
const V8_MAJOR = Number(process.versions.v8.split('.')[0]);

/** V8's `gc` (see the module doc), or null when this Node does not give it. Obtained once. */
function v8Gc(): GcFunction | null {
  if (gcFunction !== undefined) return gcFunction;
  gcFunction = null;
  try {
    setFlagsFromString('--expose-gc');
    try {
      const fn: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
      if (typeof fn === 'function') gcFunction = fn as GcFunction;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  } catch {
    gcFunction = null;
  }
  return gcFunction;
}

/** What {@link releaseLoadMemory} did: heap and RSS (bytes) before and after, and how long it blocked (ms). */
export interface MemoryRelease {
  heapUsedBefore: number;
  heapUsedAfter: number;
  heapTotalBefore: number;
  heapTotalAfter: number;
  rssBefore: number;
  rssAfter: number;
  tookMs: number;
}

/**
 * Runs one memory-reducing full collection (see the module doc), synchronously.
 * @returns the figures, or undefined when this Node gives no way to ask for it (nothing was done). Never throws.
 */
export function releaseLoadMemory(): MemoryRelease | undefined {
  const gc = v8Gc();
  if (!gc) return undefined;
  const before = process.memoryUsage();
  const t0 = performance.now();
  try {
    // 'last-resort': the low-memory collection (repeated full GCs that compact and shrink the young generation).
    // V8 11 (Node 20) does no full collection for an options object (measured: heap unchanged), only for `gc()`.
    if (V8_MAJOR >= 12) gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    else gc();
  } catch {
    return undefined;
  }
  const tookMs = performance.now() - t0;
  const after = process.memoryUsage();
  return {
    heapUsedBefore: before.heapUsed,
    heapUsedAfter: after.heapUsed,
    heapTotalBefore: before.heapTotal,
    heapTotalAfter: after.heapTotal,
    rssBefore: before.rss,
    rssAfter: after.rss,
    tookMs,
  };
}
