import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { timerSecondsArg } from './arg-parsers.js';

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
