import { describe, expect, it } from 'vitest';
import { catchUpKeep, keepFireTimes } from './dispositions.js';

// The decisions themselves are the plan script's, on the Redis clock: runner/redis/store.test.ts tests them.
const cands = Array.from({ length: 5 }, (_, i) => ({ dueMs: i * 1000, fireMs: i * 1000 + 100 }));

describe('keepFireTimes', () => {
  it('pairs each candidate with the fire time `keep` places later in the offer', () => {
    expect(keepFireTimes(cands, { catchUp: 'latest', maxCatchUpRuns: 10 })).toEqual([1100, 2100, 3100, 4100, null]);
    expect(keepFireTimes(cands, { catchUp: 'all', maxCatchUpRuns: 3 })).toEqual([3100, 4100, null, null, null]);
  });
  it('catchUp none keeps nothing: each candidate is paired with itself', () => {
    expect(catchUpKeep({ catchUp: 'none', maxCatchUpRuns: 10 })).toBe(0);
    expect(keepFireTimes(cands, { catchUp: 'none', maxCatchUpRuns: 10 })).toEqual(cands.map((c) => c.fireMs));
  });
});
