/**
 * A binary min-heap keyed by a number: the planner's queue of schedules by next due time.
 *
 * Keys and values are kept in two parallel arrays, not as an entry object per item: the planner holds one item per
 * schedule it plans, and at 100,000 schedules an `{ key, value }` object and a boxed number per item cost ~5 MB of
 * heap (keys stay unboxed in a number-only array).
 */
export class MinHeap<T> {
  private readonly keys: number[] = [];
  private readonly values: T[] = [];

  get size(): number {
    return this.keys.length;
  }

  /** Adds `value` with priority `key`. O(log n). */
  push(key: number, value: T): void {
    const k = this.keys;
    const v = this.values;
    let i = k.length;
    k.push(key);
    v.push(value);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (k[p]! <= key) break;
      k[i] = k[p]!;
      v[i] = v[p]!;
      i = p;
    }
    k[i] = key;
    v[i] = value;
  }

  /** Smallest key, or undefined when empty. O(1). */
  peekKey(): number | undefined {
    return this.keys.length > 0 ? this.keys[0] : undefined;
  }

  /** Removes and returns the entry with the smallest key. O(log n). */
  pop(): { key: number; value: T } | undefined {
    const k = this.keys;
    const v = this.values;
    if (k.length === 0) return undefined;
    const top = { key: k[0]!, value: v[0]! };
    const lastKey = k.pop()!;
    const lastValue = v.pop()!;
    const n = k.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = l;
        if (l >= n) break;
        if (r < n && k[r]! < k[l]!) m = r;
        if (k[m]! >= lastKey) break;
        k[i] = k[m]!;
        v[i] = v[m]!;
        i = m;
      }
      k[i] = lastKey;
      v[i] = lastValue;
    }
    return top;
  }

  /** Removes every entry. */
  clear(): void {
    this.keys.length = 0;
    this.values.length = 0;
  }
}
