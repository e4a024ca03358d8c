import { describe, expect, it } from 'vitest';
import { occurrenceKey } from '../../runner/schedule/occurrence.js';
import { jobNameFor, MAX_JOB_NAME } from './name.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const name = (schedule: string, dueMs: number, tag?: string) => jobNameFor({ schedule, dueMs, key: occurrenceKey(schedule, dueMs, tag) });

describe('jobNameFor', () => {
  it('is <schedule>-<due unix seconds> for a scheduled occurrence, like the CronJob controller (in seconds)', () => {
    expect(name('nightly', Date.UTC(2026, 0, 1))).toBe('nightly-1767225600');
    expect(name('nightly', Date.UTC(2026, 0, 1, 0, 0, 7))).toBe('nightly-1767225607');
  });

  it('tells a manual occurrence (ms, tag) from the scheduled one of the same instant', () => {
    const due = Date.UTC(2026, 0, 1);
    expect(name('nightly', due, 'manual')).toBe('nightly-1767225600-manual');
    expect(name('nightly', due + 123, 'manual')).toBe('nightly-1767225600123-manual');
    expect(name('nightly', due, 'resume')).toBe('nightly-1767225600-resume');
    expect(new Set([name('nightly', due), name('nightly', due, 'manual'), name('nightly', due, 'resume')]).size).toBe(3);
  });

  it('stays a DNS-1123 label of at most 63 characters for the longest schedule names, distinct by a hash of the key', () => {
    const long = `a${'b'.repeat(61)}c`; // 63: the longest schedule name
    const other = `a${'b'.repeat(61)}d`;
    const due = Date.UTC(2026, 5, 30, 12, 0, 1);
    for (const n of [name(long, due), name(long, due + 5, 'manual'), name(other, due)]) {
      expect(n.length).toBeLessThanOrEqual(MAX_JOB_NAME);
      expect(n).toMatch(DNS_LABEL);
    }
    expect(name(long, due)).not.toBe(name(other, due));
    expect(name(long, due)).toMatch(/-[0-9a-f]{8}-1782820801$/);
    // Deterministic: every claimant computes the same name.
    expect(name(long, due)).toBe(name(long, due));
    // Exactly at the limit: no hash.
    const fits = 'x'.repeat(MAX_JOB_NAME - 11);
    expect(name(fits, due)).toBe(`${fits}-1782820801`);
    expect(name(`${fits}y`, due)).toMatch(/-[0-9a-f]{8}-1782820801$/);
  });
});
