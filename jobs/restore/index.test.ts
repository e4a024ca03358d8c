import { describe, expect, it } from 'vitest';
import { compactReport, type RestoreReport } from './index.js';

const counts = { create: 1, update: 0, unchanged: 2, delete: 1 };
function report(kinds: number, prune: number): RestoreReport {
  const byKind = Object.fromEntries(Array.from({ length: kinds }, (_, i) => [`Kind${i}.group${i}.example.com`, { ...counts }]));
  return {
    backup: 'nightly-20261130T020000Z.tar.gz.enc',
    clusterId: 'c',
    sourceClusterId: 's',
    dryRun: false,
    prune: true,
    plan: {
      byKind,
      unvalidated: 0,
      prune: Array.from({ length: prune }, (_, i) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: `stray-${i}`, uid: 'u', resourceVersion: '1' })),
      protected: ['ConfigMap ns/keep'],
    },
    done: byKind,
    pruneChanged: 0,
    prunePending: 0,
    ownerReferences: { rewritten: 0, live: 0, dropped: 0, droppedExamples: [] },
    resumed: 0,
    fencingToken: 1,
    durationMs: 5,
  };
}

describe('compactReport', () => {
  it('keeps a small report whole', () => {
    const r = report(2, 3);
    expect(compactReport(r)).toEqual(r);
  });
  it('cuts the prune list, then drops it, then sums the kinds, to fit 4 KB', () => {
    const cut = compactReport(report(2, 50));
    expect(cut.plan.prune).toHaveLength(10);
    expect(cut.pruneOmitted).toBe(40);
    const many = compactReport(report(60, 50));
    expect(JSON.stringify(many).length).toBeLessThanOrEqual(4096);
    expect(many.perKindOmitted).toBe(true);
    expect(many.plan.byKind).toEqual({ '*': { create: 60, update: 0, unchanged: 120, delete: 60 } });
    expect(many.pruneOmitted).toBe(50);
  });
});
