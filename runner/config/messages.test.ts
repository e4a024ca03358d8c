import { describe as group, expect, it } from 'vitest';
import { describe } from './messages.js';

group('describe (what a wrong-typed value is, in words)', () => {
  it('names a number that is not finite as such, not "a number" (a user read "must be a number, not a number" for 1e400)', () => {
    expect(describe(JSON.parse('1e400'))).toBe('an infinite number (too large for JavaScript)');
    expect(describe(-Infinity)).toBe('an infinite number (too large for JavaScript)');
    expect(describe(NaN)).toBe('NaN');
    expect(describe(12)).toBe('a number');
    expect([describe('x'), describe([1]), describe({}), describe(true)]).toEqual(['text', 'a list', 'a map', 'true']);
  });
});
