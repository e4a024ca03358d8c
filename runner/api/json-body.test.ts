import { describe, expect, it } from 'vitest';
import { duplicateJsonKeys } from './json-body.js';

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
