import { describe, expect, it } from 'vitest';
import { backupName, objectPath, parseBackupName, parseObjectPath, stripObject } from './format.js';
import { planRetention, staleTemporaries } from './retention.js';

describe('backup names', () => {
  const due = Date.parse('2026-11-30T02:00:00Z');
  it('round-trip scheduled and manual names, plain and encrypted', () => {
    expect(backupName({ schedule: 'nightly', dueMs: due, manual: false, encrypted: false })).toBe('nightly-20261130T020000Z.tar.gz');
    expect(backupName({ schedule: 'nightly', dueMs: due + 12_345, manual: true, encrypted: true })).toBe('nightly-20261130T020012345Z-manual.tar.gz.enc');
    for (const o of [
      { schedule: 'a-b-1', dueMs: due, manual: false, encrypted: true },
      { schedule: 'x', dueMs: due + 1, manual: true, encrypted: false },
    ]) expect(parseBackupName(backupName(o))).toEqual(o);
  });
  it('parse exactly: temporaries, other tools and near misses are not backups', () => {
    for (const n of [
      'nightly-20261130T020000Z.tar.gz.partial-abc',
      '.nightly-20261130T020000Z.tar.gz.partial-abc',
      'old-nightly-20261130T020000Z.tar.gz.bak',
      'nightly-20261130T020000Z.tar',
      'nightly-20261130T020000123Z.tar.gz', // ms without -manual
      'nightly-20261130T020000Z-manual.tar.gz', // -manual without ms
      'nightly-20261330T020000Z.tar.gz', // month 13
      'Nightly-20261130T020000Z.tar.gz',
    ]) expect(parseBackupName(n), n).toBeUndefined();
    expect(() => backupName({ schedule: 'n', dueMs: due + 5, manual: false, encrypted: false })).toThrow(RangeError);
  });
});

describe('object layout', () => {
  it("is backup-restore-operator's: <resource>.<group>#<version>/[<ns>/]<name>.json, core group empty", () => {
    expect(objectPath({ group: '', version: 'v1', resource: 'configmaps', namespace: 'a', name: 'x' })).toBe('configmaps.#v1/a/x.json');
    expect(objectPath({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', name: 'system:x' })).toBe('clusterroles.rbac.authorization.k8s.io#v1/system:x.json');
    expect(parseObjectPath('deployments.apps#v1/a/web.json')).toEqual({ resource: 'deployments', group: 'apps', version: 'v1', namespace: 'a', name: 'web' });
    expect(() => objectPath({ group: '', version: 'v1', resource: 'configmaps', namespace: 'a', name: '../x' })).toThrow(TypeError);
  });
  it('strips server fields and status, keeps the rest', () => {
    const o = { apiVersion: 'v1', kind: 'X', status: { a: 1 }, metadata: { name: 'n', uid: 'u', resourceVersion: '1', managedFields: [], generation: 2, labels: { a: 'b' }, finalizers: ['f'] }, spec: { s: 1 } };
    expect(stripObject(o)).toEqual({ apiVersion: 'v1', kind: 'X', metadata: { name: 'n', labels: { a: 'b' }, finalizers: ['f'] }, spec: { s: 1 } });
    expect(o.metadata.uid).toBe('u');
  });
});

describe('retention plan', () => {
  const h = 3_600_000;
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const name = (s: string, i: number, manual = false): string => backupName({ schedule: s, dueMs: t0 + i * h + (manual ? 1 : 0), manual, encrypted: false });
  const files = [1, 2, 3, 5].map((i) => name('n', i)).concat([name('n', 4, true), name('other', 0), 'n-20260101T000000Z.tar.gz.partial-1', 'x-n-20260101T000000Z.tar.gz.old']);
  const stored = files.map((n) => ({ name: n, sizeBytes: 1, modifiedMs: 0 }));
  it('by count: only the schedule’s scheduled backups, newest kept', () => {
    expect(planRetention(stored, 'n', { count: 3 }, t0 + 6 * h)).toEqual({ keep: [name('n', 5), name('n', 3), name('n', 2)], delete: [name('n', 1)] });
  });
  it('by age, never the newest', () => {
    expect(planRetention(stored, 'n', { maxAgeMs: 2.5 * h }, t0 + 5 * h).delete).toEqual([name('n', 2), name('n', 1)]);
    expect(planRetention(stored, 'n', { maxAgeMs: 1 }, t0 + 100 * h).keep).toEqual([name('n', 5)]);
  });
});

describe('stale temporaries', () => {
  it('names only this schedule’s temporaries older than the limit', () => {
    const now = Date.parse('2026-01-02T00:00:00Z');
    const day = 86_400_000;
    const f = (name: string, ageMs: number): { name: string; sizeBytes: number; modifiedMs: number } => ({ name, sizeBytes: 1, modifiedMs: now - ageMs });
    const files = [
      f('.n-20260101T000000Z.tar.gz.partial-0123456789ab', 2 * day),
      f('n-20260101T000000Z.tar.gz.enc.partial-0123456789ab', 2 * day),
      f('.n-20260101T010000Z.tar.gz.partial-0123456789ab', 1000),
      f('.other-20260101T000000Z.tar.gz.partial-0123456789ab', 2 * day),
      f('n-20260101T000000Z.tar.gz', 2 * day),
      f('.n-20260101T000000Z.tar.gz.partial-xyz', 2 * day),
    ];
    expect(staleTemporaries(files, 'n', now, day)).toEqual([files[0]!.name, files[1]!.name]);
  });
});
