import { describe, expect, it } from 'vitest';
import { parseExpiry, parseTtlMs } from './evaluate.js';
import { RESULT_LIMIT } from '../types.js';
import { Report } from './report.js';

describe('cleanup report', () => {
  it('keeps complete counts and trims the object list to fit the 4 KB run record, saying how many it left out', () => {
    const r = new Report('delete', false, 1000);
    for (let i = 0; i < 500; i++) r.done({ kind: 'ConfigMap', namespace: 'team-a', name: `object-number-${i}`, uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` }, 'deleted');
    r.skip({ kind: 'ConfigMap', namespace: 'team-a', name: 'x', uid: 'u' }, 'protected');
    const out = r.result();
    expect(JSON.stringify(out).length).toBeLessThanOrEqual(RESULT_LIMIT);
    expect(out).toMatchObject({ acted: 500, skipped: { protected: 1 } });
    expect(out.objects.length + (out.objectsOmitted ?? 0)).toBe(501);
    expect(out.objects.length).toBeGreaterThan(5);
  });

  it('bounds the list it keeps in memory (maxObjects) and counts the rest', () => {
    const r = new Report('plan', false, 2);
    for (let i = 0; i < 10; i++) r.done({ kind: 'Pod', name: `p${i}`, uid: `${i}` }, 'planned');
    expect(r.result()).toMatchObject({ acted: 10, objectsOmitted: 8, objects: [{ name: 'p0' }, { name: 'p1' }] });
  });
});

describe('TTL values', () => {
  it('reads durations (with weeks and days) and absolute times', () => {
    expect(parseTtlMs('1w')).toBe(7 * 86_400_000);
    expect(parseTtlMs('2d')).toBe(2 * 86_400_000);
    expect(parseTtlMs('1h30m')).toBe(5_400_000);
    expect(parseTtlMs('soon')).toBeUndefined();
    expect(parseExpiry('2026-01-02')).toBe(Date.parse('2026-01-02T00:00:00Z'));
    expect(parseExpiry('2026-01-02T03:04')).toBe(Date.parse('2026-01-02T03:04:00Z'));
    expect(parseExpiry('2026-01-02T03:04:05+02:00')).toBe(Date.parse('2026-01-02T01:04:05Z'));
    expect(parseExpiry('tomorrow')).toBeUndefined();
  });
});
