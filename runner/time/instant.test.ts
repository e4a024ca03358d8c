import { describe, expect, it } from 'vitest';
import { MAX_INSTANT_MS, parseInstant } from './instant.js';

describe('an instant given as text (API from/to, CLI --from/--to)', () => {
  it('takes UTC ms and ISO 8601 times', () => {
    expect(parseInstant('0')).toBe(0);
    expect(parseInstant('1767225600000')).toBe(Date.UTC(2026, 0, 1));
    expect(parseInstant(String(MAX_INSTANT_MS))).toBe(MAX_INSTANT_MS);
    expect(parseInstant('2026-01-01T00:00:00Z')).toBe(Date.UTC(2026, 0, 1));
    expect(parseInstant('2026-01-01T02:00:00.000+02:00')).toBe(Date.UTC(2026, 0, 1));
    expect(parseInstant('2026-01-01')).toBe(Date.UTC(2026, 0, 1));
    expect(parseInstant('+275760-09-13T00:00:00Z')).toBe(MAX_INSTANT_MS);
  });

  it('refuses UTC ms past the latest time a Date holds (99999999999999999999 is no time)', () => {
    expect(parseInstant('99999999999999999999')).toBeUndefined();
    expect(parseInstant(String(MAX_INSTANT_MS + 1))).toBeUndefined();
    expect(parseInstant('+275760-09-13T00:00:00.001Z')).toBeUndefined();
  });

  it('refuses what Date.parse alone would read as some day of 2001 (-5, 1.5, "12 5") and ISO-less text', () => {
    for (const v of ['-5', '1.5', '12 5', '5.', '1e20', 'Jan 1 2026', 'yesterday']) expect(parseInstant(v), v).toBeUndefined();
  });

  it('refuses a day or time the calendar does not have, which Date.parse rolls over (2026-02-30 as March 2)', () => {
    for (const v of ['2026-02-30T00:00:00Z', '2026-02-29', '2026-04-31T12:00:00Z', '2100-02-29', '2026-00-10', '2026-01-00', '2026-01-01T24:00:00Z', '2026-01-01T23:60:00Z', '2026-01-01T23:59:60Z']) {
      expect(parseInstant(v), v).toBeUndefined();
    }
    expect(parseInstant('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(parseInstant('2000-02-29')).toBe(Date.UTC(2000, 1, 29));
    expect(parseInstant('2026-12-31T23:59:59Z')).toBe(Date.UTC(2026, 11, 31, 23, 59, 59));
  });

  it('takes bare digits only where ms are allowed', () => {
    expect(parseInstant('1767225600000', { ms: false })).toBeUndefined();
  });
});
