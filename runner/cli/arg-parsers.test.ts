import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { boundedIntArg, timerSecondsArg } from './arg-parsers.js';
import { MAX_NEXT_COUNT, MAX_SCANNED } from './next-rows.js';

describe('timer seconds (--redis-timeout)', () => {
  it('accepts a number of seconds > 0 up to one day', () => {
    expect(timerSecondsArg('3')).toBe(3);
    expect(timerSecondsArg('0.5')).toBe(0.5);
    expect(timerSecondsArg('86400')).toBe(86_400);
  });

  it('refuses what a Node timer cannot hold (it would fire at once) with the limit, and what is not > 0', () => {
    expect(() => timerSecondsArg('3000000')).toThrow(new InvalidArgumentError('must be at most 86400 (one day)'));
    expect(() => timerSecondsArg('1e999')).toThrow(/at most 86400/);
    expect(() => timerSecondsArg('0')).toThrow(/> 0/);
    expect(() => timerSecondsArg('abc')).toThrow(/> 0/);
  });
});

describe('bounded counts (next -n)', () => {
  it('accepts 1 up to the cap and refuses more with the cap and how to see further', () => {
    const count = boundedIntArg(MAX_NEXT_COUNT, 'use --from');
    expect(count('1')).toBe(1);
    expect(count(String(MAX_NEXT_COUNT))).toBe(MAX_NEXT_COUNT);
    expect(() => count('99999999')).toThrow(new InvalidArgumentError('must be at most 10,000, got 99999999; use --from'));
    expect(() => count('0')).toThrow(/≥ 1/);
  });

  it('caps -n below the scan limit, so a scan that stops early always means the calendar or a blackout skipped', () => {
    expect(MAX_NEXT_COUNT).toBeLessThan(MAX_SCANNED);
  });
});
