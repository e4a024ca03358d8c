import { describe, expect, it } from 'vitest';
import { MinHeap } from './heap.js';

describe('MinHeap', () => {
  it('pops entries in key order with their values, whatever the order of pushes and pops', () => {
    let seed = 12345;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const heap = new MinHeap<string>();
    const model: { key: number; value: string }[] = [];
    for (let step = 0; step < 5000; step++) {
      if (model.length === 0 || rnd() < 0.6) {
        // Large keys (Redis ms) and many ties.
        const key = 1_764_000_000_000 + Math.floor(rnd() * 200) * 1000;
        const value = `v${step}`;
        heap.push(key, value);
        model.push({ key, value });
      } else {
        const min = Math.min(...model.map((e) => e.key));
        expect(heap.peekKey()).toBe(min);
        const got = heap.pop()!;
        expect(got.key).toBe(min);
        const at = model.findIndex((e) => e.key === got.key && e.value === got.value);
        expect(at).toBeGreaterThanOrEqual(0); // the value popped is one pushed with that key
        model.splice(at, 1);
      }
      expect(heap.size).toBe(model.length);
    }
    const rest: number[] = [];
    for (let e = heap.pop(); e; e = heap.pop()) rest.push(e.key);
    expect(rest).toEqual(model.map((e) => e.key).sort((a, b) => a - b));
    expect(heap.peekKey()).toBeUndefined();
    expect(heap.pop()).toBeUndefined();
  });

  it('is empty after clear', () => {
    const heap = new MinHeap<number>();
    for (let i = 10; i > 0; i--) heap.push(i, i);
    heap.clear();
    expect(heap.size).toBe(0);
    expect(heap.peekKey()).toBeUndefined();
    heap.push(3, 3);
    expect(heap.pop()).toEqual({ key: 3, value: 3 });
  });
});
