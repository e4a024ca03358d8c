import { describe, expect, it } from 'vitest';
import { nextTurnMs } from './redis-turns.js';

describe('nextTurnMs', () => {
  it('is the first multiple of the turn at or after the instant', () => {
    expect(nextTurnMs(1_764_633_600_000, 10)).toBe(1_764_633_600_000);
    expect(nextTurnMs(1_764_633_600_001, 10)).toBe(1_764_633_600_010);
    expect(nextTurnMs(1_764_633_600_009, 10)).toBe(1_764_633_600_010);
    expect(nextTurnMs(1_764_633_600_003, 7)).toBe(1_764_633_600_009); // 7 × 252_090_514_287
  });
  it('is never before the instant and at most one turn after it', () => {
    for (let i = 0; i < 1000; i++) {
      const at = 1_764_633_600_000 + Math.floor(Math.random() * 100_000);
      const turn = 1 + Math.floor(Math.random() * 50);
      const t = nextTurnMs(at, turn);
      expect(t).toBeGreaterThanOrEqual(at);
      expect(t - at).toBeLessThan(turn);
      expect(t % turn).toBe(0);
    }
  });
});
