/**
 * The Coalescer (coalesce.ts): calls asked in one turn of the event loop go as one; calls asked while one is in
 * flight wait for it and then go together; a failed call rejects exactly its own requests; `max` bounds a call.
 */
import { describe, expect, it } from 'vitest';
import { Coalescer } from './coalesce.js';

/** A send that records each call's requests and answers each with its double, after `gate` opens. */
function recorder(max?: number) {
  const calls: number[][] = [];
  let open: () => void = () => undefined;
  let gate = Promise.resolve();
  const c = new Coalescer<number, number>(async (reqs) => {
    calls.push(reqs);
    await gate;
    if (reqs.includes(-1)) throw new Error('bad request');
    return reqs.map((r) => r * 2);
  }, max);
  return {
    c,
    calls,
    hold: () => {
      gate = new Promise((r) => (open = r));
    },
    release: () => open(),
  };
}

describe('Coalescer', () => {
  it('sends the requests of one turn as one call and answers each with its own', async () => {
    const r = recorder();
    expect(await Promise.all([r.c.call(1), r.c.call(2), r.c.call(3)])).toEqual([2, 4, 6]);
    expect(r.calls).toEqual([[1, 2, 3]]);
  });

  it('sends a lone request at once, alone; requests made while it is in flight go together after it', async () => {
    const r = recorder();
    r.hold();
    const first = r.c.call(1);
    await new Promise((res) => setImmediate(res));
    expect(r.calls).toEqual([[1]]);
    const later = [r.c.call(2), r.c.call(3)];
    await new Promise((res) => setImmediate(res));
    expect(r.calls).toEqual([[1]]); // waiting for the call in flight
    r.release();
    expect(await Promise.all([first, ...later])).toEqual([2, 4, 6]);
    expect(r.calls).toEqual([[1], [2, 3]]);
  });

  it('rejects the requests of a failed call only, and goes on with the next', async () => {
    const r = recorder();
    const a = [r.c.call(1), r.c.call(-1)];
    const settled = await Promise.allSettled(a);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect(await r.c.call(5)).toBe(10);
  });

  it('puts at most max requests in one call', async () => {
    const r = recorder(2);
    expect(await Promise.all([1, 2, 3, 4, 5].map((n) => r.c.call(n)))).toEqual([2, 4, 6, 8, 10]);
    expect(r.calls).toEqual([[1, 2], [3, 4], [5]]);
  });
});
