/**
 * JSON with object keys sorted (by UTF-16 code units) at every level and `undefined` members left out, so that
 * equal values give equal text whatever order their keys were built in: the input of content hashes (a
 * schedule's definition hash, a restored object's content hash).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}
