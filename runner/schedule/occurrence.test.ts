import { describe, it, expect } from 'vitest';
import { fireOffsetMs, fireTimeMs, occurrenceKey, parseOccurrenceKey } from './occurrence.js';

const BINS = 20;
/** χ² with 19 degrees of freedom exceeds this with probability 0.001 for a uniform source. */
const CHI2_19_P001 = 43.82;

/** Pearson χ² of offsets in [0, jitterMs) against a uniform spread over BINS equal bins. */
function chiSquare(offsets: readonly number[], jitterMs: number): number {
  const counts = new Array<number>(BINS).fill(0);
  for (const o of offsets) {
    const bin = Math.floor((o * BINS) / jitterMs);
    counts[bin] = (counts[bin] ?? 0) + 1;
  }
  const expected = offsets.length / BINS;
  return counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
}

/** 10,000 occurrences of one schedule due every 2 s. */
const keysOfOneSchedule = Array.from({ length: 10_000 }, (_, i) => occurrenceKey('ping-billing', Date.UTC(2026, 0, 1) + i * 2000));
/** One due time shared by 10,000 schedules (a flock due at midnight). */
const keysOfAFlock = Array.from({ length: 10_000 }, (_, i) => occurrenceKey(`cleanup-${i}`, Date.UTC(2026, 0, 1)));

describe('occurrenceKey / parseOccurrenceKey', () => {
  it('names an occurrence <schedule>@<due ISO>', () => {
    const due = Date.UTC(2026, 0, 1, 0, 0, 2);
    expect(occurrenceKey('ping-billing', due)).toBe(`ping-billing@${new Date(due).toISOString()}`);
  });

  it('round-trips, also for names that contain @', () => {
    for (const [name, due] of [['a', 0], ['team@backup', Date.UTC(2030, 5, 15, 12, 30, 45)], ['x-y_z', Date.UTC(1999, 11, 31, 23, 59, 59)]] as const) {
      expect(parseOccurrenceKey(occurrenceKey(name, due))).toEqual({ schedule: name, dueMs: due });
      expect(parseOccurrenceKey(occurrenceKey(name, due, 'manual'))).toEqual({ schedule: name, dueMs: due });
    }
  });

  it('returns null for strings that are not occurrence keys', () => {
    for (const key of ['', 'no-at-sign', '@2026-01-01T00:00:00.000Z', 'name@', 'name@not-a-date']) {
      expect(parseOccurrenceKey(key), key).toBeNull();
    }
  });
});

describe('fireOffsetMs', () => {
  it('is an integer in [0, jitterMs), and 0 without jitter', () => {
    for (const jitter of [1, 2, 7, 1000, 59_999, 3_600_000]) {
      for (const key of keysOfOneSchedule.slice(0, 500)) {
        const o = fireOffsetMs(key, jitter);
        expect(Number.isInteger(o)).toBe(true);
        expect(o).toBeGreaterThanOrEqual(0);
        expect(o).toBeLessThan(jitter);
      }
    }
    expect(fireOffsetMs(keysOfOneSchedule[0] ?? '', 0)).toBe(0);
    expect(fireOffsetMs(keysOfOneSchedule[0] ?? '', -5)).toBe(0);
  });

  it('is identical on repeated calls (every replica computes the same fire time)', () => {
    const first = keysOfOneSchedule.map((k) => fireOffsetMs(k, 60_000));
    const again = keysOfOneSchedule.map((k) => fireOffsetMs(k, 60_000));
    expect(again).toEqual(first);
  });

  it('the χ² bound used below fails broken hashes', () => {
    // "Always 0" and "key length based" (all keys here have one length) put everything in one bin.
    const always0 = keysOfOneSchedule.map(() => 0);
    const byLength = keysOfOneSchedule.map((k) => (k.length * 7919) % 60_000);
    // A hash of the due time alone ignores the schedule name, so a flock starts together.
    const byDueOnly = keysOfAFlock.map((k) => (Date.parse(k.slice(k.lastIndexOf('@') + 1)) / 1000) % 60_000);
    for (const broken of [always0, byLength, byDueOnly]) expect(chiSquare(broken, 60_000)).toBeGreaterThan(CHI2_19_P001);
    // And the bound is not so tight that a well-spread source fails it.
    const fair = keysOfOneSchedule.map((_, i) => Math.floor(((i * 0.6180339887) % 1) * 60_000));
    expect(chiSquare(fair, 60_000)).toBeLessThan(CHI2_19_P001);
  });

  for (const jitter of [60_000, 997, 20]) {
    it(`spreads 10,000 occurrences of one schedule evenly over a ${jitter} ms window`, () => {
      const offsets = keysOfOneSchedule.map((k) => fireOffsetMs(k, jitter));
      expect(chiSquare(offsets, jitter)).toBeLessThan(CHI2_19_P001);
    });
  }

  it('spreads a flock of 10,000 schedules due at the same instant evenly over the window', () => {
    const offsets = keysOfAFlock.map((k) => fireOffsetMs(k, 300_000));
    expect(chiSquare(offsets, 300_000)).toBeLessThan(CHI2_19_P001);
  });

  it('does not favour consecutive occurrences landing close together', () => {
    // Offsets of neighbouring due times are unrelated: their differences are spread too.
    const jitter = 60_000;
    const offsets = keysOfOneSchedule.map((k) => fireOffsetMs(k, jitter));
    const diffs = offsets.slice(1).map((o, i) => (o - (offsets[i] ?? 0) + jitter) % jitter);
    expect(chiSquare(diffs, jitter)).toBeLessThan(CHI2_19_P001);
  });
});

describe('fireTimeMs', () => {
  it('is the due time plus the offset of its occurrence key', () => {
    const due = Date.UTC(2026, 2, 29, 1, 30);
    for (const jitter of [0, 1, 30_000]) {
      expect(fireTimeMs('nightly', due, jitter)).toBe(due + fireOffsetMs(occurrenceKey('nightly', due), jitter));
    }
    expect(fireTimeMs('nightly', due, 0)).toBe(due);
  });

  it('differs between schedules due at the same instant', () => {
    const due = Date.UTC(2026, 0, 1);
    const fires = new Set(Array.from({ length: 100 }, (_, i) => fireTimeMs(`s${i}`, due, 3_600_000)));
    expect(fires.size).toBeGreaterThan(95);
  });
});
