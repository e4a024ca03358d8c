/**
 * canonicalJson's direct path for plain data writes exactly the text of its definition (JSON.stringify with the
 * key-sorting replacer): content hashes (definition hashes above all) must not change with it.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonByReplacer } from './canonical-json.js';

/** A deterministic pseudo-random source (mulberry32), so a failure can be run again. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ['a', 'b', 'B', 'é', 'z', '_x', '$', '', '0', '1', '10', '9', '01', '-1', '1.5', 'constructor', 'toString', 'x y', '"q"', '\u2028', '😀', 'ä'];
const LEAVES: unknown[] = ['', 'text', 'é\n"\\', '\ud800', 0, -0, 1.5, 1e21, 5e-324, -3, NaN, Infinity, true, false, null, undefined];

function randomValue(next: () => number, depth: number): unknown {
  const r = next();
  if (depth > 4 || r < 0.45) return LEAVES[Math.floor(next() * LEAVES.length)];
  if (r < 0.65) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 6); i > 0; i--) o[KEYS[Math.floor(next() * KEYS.length)]!] = randomValue(next, depth + 1);
  return o;
}

describe('canonicalJson', () => {
  it('writes what the replacer writes, for 5,000 random values of plain data (keys of every kind, undefined, NaN)', () => {
    const next = rng(19);
    for (let i = 0; i < 5000; i++) {
      const v = randomValue(next, 0);
      expect(canonicalJson(v)).toBe(canonicalJsonByReplacer(v));
      // Read back (keys in canonical order: the input is returned as it is, then written by JSON.stringify).
      const text = canonicalJson(v);
      if (text !== undefined) expect(canonicalJson(JSON.parse(text))).toBe(text);
    }
  });

  it('writes what the replacer writes for what is not plain data', () => {
    class Point {
      constructor(
        readonly y: number,
        readonly x: number,
      ) {}
    }
    const nullProto = Object.assign(Object.create(null) as object, { b: 1, a: 2 });
    const values: unknown[] = [
      { when: new Date(0), b: 1 },
      [new Date(0)],
      { toJSON: () => ({ z: 1, a: 2 }) },
      { p: new Point(1, 2) },
      { m: new Map([['a', 1]]), s: new Set([1]) },
      { n: Object(1) as unknown, s: Object('x') as unknown, t: Object(true) as unknown },
      { f: () => 1, s: Symbol('s'), u: undefined, k: 1 },
      [() => 1, Symbol('s'), undefined],
      nullProto,
      { nested: nullProto },
      JSON.parse('{"__proto__":{"a":1},"b":2}'),
      { 2: 'two', 10: 'ten', a: 'a', '02': 'x' },
      // eslint-disable-next-line no-sparse-arrays
      [1, , 3],
      undefined,
      'text',
      7,
    ];
    for (const v of values) expect(canonicalJson(v)).toBe(canonicalJsonByReplacer(v));
    let deep: unknown = { z: 1, a: 2 };
    for (let i = 0; i < 500; i++) deep = { b: [deep], a: i };
    expect(canonicalJson(deep)).toBe(canonicalJsonByReplacer(deep));
  });

  it('throws what the replacer throws (BigInt: TypeError; a cycle: RangeError, the sorted copies hide it from JSON.stringify)', () => {
    const thrown = (f: () => unknown): unknown => {
      try {
        f();
      } catch (err) {
        return (err as Error).constructor;
      }
      return undefined;
    };
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = { back: cycle };
    for (const v of [{ a: 1n }, cycle]) {
      expect(thrown(() => canonicalJson(v))).toBeDefined();
      expect(thrown(() => canonicalJson(v))).toBe(thrown(() => canonicalJsonByReplacer(v)));
    }
  });

  it('does not change its input', () => {
    const v = { b: { d: 1, c: [{ f: 1, e: 2 }] }, a: undefined };
    const before = JSON.stringify(v);
    canonicalJson(v);
    expect(JSON.stringify(v)).toBe(before);
    expect(Object.keys(v)).toEqual(['b', 'a']);
  });
});
