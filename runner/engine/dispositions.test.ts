import { describe, expect, it } from 'vitest';
import { decide, type DispositionPolicy } from './dispositions.js';

const policy = (p: Partial<DispositionPolicy> = {}): DispositionPolicy => ({
  suspend: false, startingDeadlineMs: null, catchUp: 'latest', maxCatchUpRuns: 10, ...p,
});
// Ten occurrences a second apart; "now" is 20 s after the first: all overdue but the last two.
const cands = Array.from({ length: 10 }, (_, i) => ({ dueMs: i * 1000, fireMs: i * 1000 + 100 }));
const NOW = 9_000;
const runs = (d: ReturnType<typeof decide>) => d.flatMap((x, i) => (x.disposition === 'run' ? [i] : []));

describe('decide', () => {
  it('runs everything on time', () => {
    expect(runs(decide(cands, policy(), 0, 1000))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
  it('catchUp latest: runs the newest overdue one and what is not overdue; the rest missed with a reason', () => {
    const d = decide(cands, policy(), NOW, 1000);
    expect(runs(d)).toEqual([7, 8, 9]);
    expect(d[0]).toEqual({ disposition: 'missed', reason: 'catch-up: superseded by a later overdue occurrence' });
    expect(d[7]).toEqual({ disposition: 'run', reason: 'catch-up: run late (catchUp latest)' });
    expect(d[8]).toEqual({ disposition: 'run', reason: '' });
  });
  it('catchUp none: runs no overdue occurrence', () => {
    expect(runs(decide(cands, policy({ catchUp: 'none' }), NOW, 1000))).toEqual([8, 9]);
  });
  it('catchUp all: runs the newest maxCatchUpRuns overdue ones', () => {
    expect(runs(decide(cands, policy({ catchUp: 'all', maxCatchUpRuns: 3 }), NOW, 1000))).toEqual([5, 6, 7, 8, 9]);
  });
  it('starting deadline: later ones are missed whatever the catch-up policy', () => {
    const d = decide(cands, policy({ catchUp: 'all', startingDeadlineMs: 2500 }), NOW, 1000);
    expect(runs(d)).toEqual([7, 8, 9]);
    expect(d[6]).toEqual({ disposition: 'missed', reason: 'starting deadline exceeded' });
  });
  it('suspended: every occurrence is skipped with the reason', () => {
    const d = decide(cands, policy({ suspend: true }), 0, 1000);
    expect(d.every((x) => x.disposition === 'skipped' && x.reason === 'suspended')).toBe(true);
  });
});
