import { describe, expect, it } from 'vitest';
import { pool } from './pool.js';

/** A promise and its resolver, to hold an item in flight until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('pool', () => {
  it('keeps at most n items in flight and runs every item once, in starting order', async () => {
    let inFlight = 0;
    let most = 0;
    const started: number[] = [];
    await pool([1, 2, 3, 4, 5, 6, 7], 3, async (i) => {
      started.push(i);
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
    });
    expect(most).toBe(3);
    expect(started).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('rejects with the first error only after the items in flight settle, and starts nothing after it', async () => {
    const slow = gate();
    const finished: number[] = [];
    const started: number[] = [];
    const run = pool([1, 2, 3, 4], 2, async (i) => {
      started.push(i);
      if (i === 1) throw new Error('first');
      if (i === 2) await slow.promise;
      finished.push(i);
    });
    let settled = false;
    void run.catch(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false); // item 2 is still in flight
    slow.open();
    await expect(run).rejects.toThrow('first');
    expect(started).toEqual([1, 2]);
    expect(finished).toEqual([2]);
  });

  it('starts nothing once the signal aborts, waits for what is in flight, then rejects with the reason', async () => {
    const ac = new AbortController();
    const started: number[] = [];
    const run = pool([1, 2, 3, 4], 1, async (i) => {
      started.push(i);
      if (i === 2) ac.abort(new Error('stop'));
      await new Promise((r) => setTimeout(r, 5));
    }, ac.signal);
    await expect(run).rejects.toThrow('stop');
    expect(started).toEqual([1, 2]);
  });
});
