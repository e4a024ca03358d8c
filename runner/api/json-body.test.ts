import { describe, expect, it } from 'vitest';
import { duplicateJsonKeys, jsonBodyProblems, unsafeIntegerProblem } from './json-body.js';

describe('duplicateJsonKeys', () => {
  it('finds a key given twice, with its path and both positions; none in clean JSON', () => {
    expect(duplicateJsonKeys('{"cron":"61 * * * *","cron":"* * * * *"}')).toEqual([{ key: 'cron', path: ['cron'], line: 1, col: 22, first: { line: 1, col: 2 } }]);
    expect(duplicateJsonKeys('{\n\t"a": [1, {"b": {"c": 1, "c": 2}}]\n}')).toEqual([{ key: 'c', path: ['a', 1, 'b', 'c'], line: 2, col: 26, first: { line: 2, col: 18 } }]);
    // the same key in two objects is not a duplicate; long keys and JSON escapes are read as JSON.parse reads them
    const clean = `${JSON.stringify({ a: { x: 1 }, b: { x: 2 }, ['k'.repeat(2000)]: 'v\u2028/\t"' }).slice(0, -1)},"n":12345678901234567890,"e":1e400,"s":"\\/"}`;
    expect(() => JSON.parse(clean) as unknown).not.toThrow();
    expect(duplicateJsonKeys(clean)).toEqual([]);
    expect(duplicateJsonKeys('{"\\u0061":1,"a":2}').map((d) => d.key)).toEqual(['a']);
    expect(duplicateJsonKeys('"text"')).toEqual([]);
    expect(duplicateJsonKeys('[]')).toEqual([]);
  });
});

describe('jsonBodyProblems', () => {
  it('finds number literals outside ±(2^53−1) that parsing changes, with their path and position; not safe ones, floats kept as written, or strings', () => {
    const text = '{"a":9007199254740991,"b":-9007199254740991,"c":[9007199254740992],\n"d":{"e":-12345678901234567890},"f":1e400,"g":1.5,"h":"12345678901234567890"}';
    expect(() => JSON.parse(text) as unknown).not.toThrow();
    expect(jsonBodyProblems(text).unsafeIntegers).toEqual([
      { path: ['c', 0], line: 1, col: 50, value: 9007199254740992 },
      { path: ['d', 'e'], line: 2, col: 10, value: -12345678901234567000 },
    ]);
    expect(jsonBodyProblems('12345678901234567890').unsafeIntegers).toEqual([{ path: [], line: 1, col: 1, value: 12345678901234567000 }]);
    // a fraction or an exponent does not hide digits a double cannot keep; a float that reads back as written is kept
    const floats = '[12345678901234567890.0, 1.2345678901234567890e19, 9007199254740993.0, 9007199254740992.0, 6.02e23, -1e20, 0.1234567890123456789]';
    expect(jsonBodyProblems(floats).unsafeIntegers.map((u) => u.path)).toEqual([[0], [1], [2]]);
    // nearer to 0 than a double can be: it would read as 0 (a user's break-it run); 0 written as 0 and the least
    // double are kept
    const tiny = jsonBodyProblems('[1e-400, 0.0, 0e5, -0, 5e-324, -2.5e-500]').unsafeIntegers;
    expect(tiny.map((u) => [u.path, u.value])).toEqual([
      [[0], 0],
      [[5], -0],
    ]);
    expect(unsafeIntegerProblem(tiny[0]!).reason).toBe('at line 1:2 of the body, this number is nearer to 0 than a JavaScript number can be: it would be stored as 0');
  });
});
