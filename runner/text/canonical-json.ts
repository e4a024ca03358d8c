/**
 * JSON with object keys sorted (by UTF-16 code units) at every level and `undefined` members left out, so that
 * equal values give equal text whatever order their keys were built in: the input of content hashes (a
 * schedule's definition hash, a restored object's content hash).
 *
 * The text is defined by {@link canonicalJsonByReplacer} (JSON.stringify with a replacer that copies each object
 * with its keys sorted). Plain data (plain objects and lists of text, numbers, booleans and null: what JSON.parse
 * gives and what definitions are) is written by a direct walk that gives the same text 2–3× faster, which counts
 * where every replica hashes every stored definition (runner/store/definition.ts); anything else (Dates and other
 * objects with toJSON, class instances, Maps, BigInt, cycles, `__proto__` keys, nesting deeper than 200) is written by the replacer, with its results and errors.
 */
export function canonicalJson(value: unknown): string {
  const sorted = sortedPlain(value, 0);
  return sorted === NOT_PLAIN ? canonicalJsonByReplacer(value) : JSON.stringify(sorted);
}

/** The definition of {@link canonicalJson}'s text (and its fallback): JSON.stringify, each object copied with its keys sorted. */
export function canonicalJsonByReplacer(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

const MAX_FAST_DEPTH = 200;
const NOT_PLAIN: unique symbol = Symbol('not plain data');

/**
 * `v` with the keys of every object in sorted order (`v` itself, untouched, where they already are: the canonical
 * JSON read back), for JSON.stringify without a replacer; {@link NOT_PLAIN} when `v` holds anything but plain data.
 */
function sortedPlain(v: unknown, depth: number): unknown {
  if (v === null) return v;
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
      return v;
    case 'object':
      break;
    default:
      return NOT_PLAIN; // undefined, function, symbol, bigint at this place: the replacer decides
  }
  if (depth > MAX_FAST_DEPTH || typeof (v as { toJSON?: unknown }).toJSON === 'function') return NOT_PLAIN;
  if (Array.isArray(v)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue; // JSON writes null
      const y = sortedPlain(x, depth + 1);
      if (y === NOT_PLAIN) return NOT_PLAIN;
      if (y !== x) (copy ??= v.slice())[i] = y;
    }
    return copy ?? v;
  }
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return NOT_PLAIN;
  const map = v as Record<string, unknown>;
  const keys = Object.keys(map);
  let inOrder = true;
  for (let i = 1; i < keys.length && inOrder; i++) inOrder = keys[i - 1]! < keys[i]!;
  if (!inOrder) keys.sort();
  // Keys already in order (the canonical JSON read back): `v` itself unless a member changes. Integer-like keys
  // need no care: JavaScript lists them first in the input and in the copy alike, as in the replacer's copy.
  let out: Record<string, unknown> | undefined = inOrder ? undefined : {};
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    // The replacer's copy drops an own __proto__ key (assigning it sets the copy's prototype): it writes those.
    if (k === '__proto__') return NOT_PLAIN;
    const x = map[k];
    if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue; // JSON leaves it out
    const y = sortedPlain(x, depth + 1);
    if (y === NOT_PLAIN) return NOT_PLAIN;
    if (y !== x && out === undefined) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]!] = map[keys[j]!];
    }
    if (out !== undefined) out[k] = y;
  }
  return out ?? v;
}
