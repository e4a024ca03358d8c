import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { releaseLoadMemory } from './memory.js';

describe('releaseLoadMemory', () => {
  it('gives back the heap that garbage of a load grew, without exposing gc to later contexts', () => {
    const exposedBefore = runInNewContext('typeof gc') === 'function'; // a test process started with --expose-gc
    // ~150 MB of small objects that live long enough to reach the old generation, then become garbage.
    let load: { name: string; n: number }[][] | undefined = [];
    for (let f = 0; f < 30; f++) load.push(Array.from({ length: 100_000 }, (_, i) => ({ name: `s-${f}-${i}`, n: i })));
    expect(load.length).toBe(30);
    load = undefined;
    const r = releaseLoadMemory();
    expect(r).toBeDefined();
    // Generous: the garbage alone was well over 100 MB.
    expect(r!.heapTotalBefore - r!.heapTotalAfter).toBeGreaterThan(50 * 1048576);
    expect(r!.heapUsedAfter).toBeLessThan(r!.heapUsedBefore);
    if (!exposedBefore) expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(typeof (globalThis as { gc?: unknown }).gc === 'function').toBe(exposedBefore);
  });
});
