import { describe, expect, it } from 'vitest';
import { fieldPath, fieldSegments } from './errors.js';

describe('fieldSegments: a dotted field back to its path, read against the data', () => {
  it('inverts fieldPath, keys holding "." or "[" found whole', () => {
    const data = { job: { params: { 'a.b': [1, { 'c[0]': 2 }], x: { b: 3 } } } };
    for (const path of [['job', 'params', 'a.b', 1, 'c[0]'], ['job', 'params', 'x', 'b'], ['job'], []] as (string | number)[][]) {
      expect(fieldSegments(data, fieldPath(path))).toEqual(path);
    }
  });

  it('takes the longer key when one map has both "a.b" and "a" (the text alone cannot tell them apart)', () => {
    expect(fieldSegments({ 'a.b': 1, a: { b: 2 } }, 'a.b')).toEqual(['a.b']);
  });

  it('stops at the deepest part found (a missing key: its parent)', () => {
    expect(fieldSegments({ job: { url: 'x' } }, 'job.path')).toEqual(['job']);
    expect(fieldSegments({ list: [1] }, 'list[3]')).toEqual(['list']);
  });
});
