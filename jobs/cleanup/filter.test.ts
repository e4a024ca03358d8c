/**
 * The cleanup filter's time limit: a one-off pause (a GC, a busy host) during an evaluation does not mark the
 * object errored; an evaluation that is slow every time does.
 */
import { describe, expect, it } from 'vitest';
import { compileFilter, FILTER_TIME_LIMIT_MS } from './filter.js';

/** Blocks the thread for `ms` (what a GC pause or a descheduled process looks like to the timer). */
function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* spin */
  }
}

/** An object whose `data` getter stalls for `ms` on the first `times` reads. */
function stallingObject(times: number, ms: number): { reads: number } & Record<string, unknown> {
  const o = { reads: 0 } as { reads: number } & Record<string, unknown>;
  Object.defineProperty(o, 'data', {
    enumerable: true,
    get() {
      o.reads++;
      if (o.reads <= times) busyWait(ms);
      return { payload: 'x' };
    },
  });
  return o;
}

describe('cleanup filter time limit', () => {
  const filter = compileFilter('size(object.data.payload) > 0');

  it('a pause during one evaluation is not the expression: evaluated again, the object is selected', () => {
    const o = stallingObject(1, FILTER_TIME_LIMIT_MS * 2);
    expect(filter(o, Date.now())).toBe(true);
    expect(o.reads).toBeGreaterThanOrEqual(2); // the slow first evaluation was repeated
  });

  it('an evaluation slow every time marks the object errored, with both times', () => {
    const o = stallingObject(Infinity, FILTER_TIME_LIMIT_MS * 2);
    const r = filter(o, Date.now());
    expect(r).toMatch(/^filter: took \d+ and \d+ ms, more than 50 ms$/);
  });

  it('a fast evaluation is evaluated once', () => {
    const o = stallingObject(0, 0);
    expect(filter(o, Date.now())).toBe(true);
    expect(o.reads).toBe(1);
  });
});
