import { describe, expect, it } from 'vitest';
import { formatDurationMs, MAX_DURATION_MS, parseDurationMs } from './duration.js';

describe('durations', () => {
  it('parses and formats back', () => {
    expect(parseDurationMs('1h30m')).toBe(5_400_000);
    expect(formatDurationMs(5_400_000)).toBe('1h30m');
  });

  it('refuses a huge duration saying the maximum, which itself parses', () => {
    expect(() => parseDurationMs('99999999999999999d')).toThrow(
      /^"99999999999999999d" is too long: a duration may be at most 104249991d8h59m991ms \(9007199254740991 ms, about 285,000 years\)$/,
    );
    expect(parseDurationMs(formatDurationMs(MAX_DURATION_MS))).toBe(MAX_DURATION_MS);
  });
});
