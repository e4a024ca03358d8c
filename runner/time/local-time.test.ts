import { describe, expect, it } from 'vitest';
import { localIso } from './local-time.js';

describe('local time of an instant', () => {
  it('is ISO 8601 with the offset in force, which tells the two passes of a repeated hour apart', () => {
    expect(localIso(Date.parse('2026-01-01T00:00:02Z'), 'Europe/Berlin')).toBe('2026-01-01T01:00:02.000+01:00');
    expect(localIso(Date.parse('2026-07-01T00:00:02Z'), 'Europe/Berlin')).toBe('2026-07-01T02:00:02.000+02:00');
    // 2026-11-01 01:30 happens twice in New York: first at -04:00, then at -05:00.
    expect(localIso(Date.parse('2026-11-01T05:30:00Z'), 'America/New_York')).toBe('2026-11-01T01:30:00.000-04:00');
    expect(localIso(Date.parse('2026-11-01T06:30:00Z'), 'America/New_York')).toBe('2026-11-01T01:30:00.000-05:00');
    expect(localIso(Date.parse('2026-01-01T00:00:00Z'), 'Asia/Kolkata')).toBe('2026-01-01T05:30:00.000+05:30');
    expect(localIso(Date.parse('2026-01-01T00:00:00Z'), 'UTC')).toBe('2026-01-01T00:00:00.000Z');
  });
});
