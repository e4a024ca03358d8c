/**
 * Levenshtein distance between two strings (UTF-16 code units): insertions, deletions and substitutions, each
 * costing 1. For "did you mean …?" hints (misspelt keys in schedule files, time zone names).
 * @param cap give up once every path costs at least `cap`, and return `cap` (default: never give up); a
 *   search over hundreds of candidates stays cheap with a small cap.
 * @returns the distance, at most `cap`.
 */
export function editDistance(a: string, b: string, cap = Infinity): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin >= cap) return cap;
    prev = cur;
  }
  return Math.min(prev[b.length] ?? cap, cap);
}
