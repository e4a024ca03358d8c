import { describe, expect, it } from 'vitest';
import { isK8sError } from './errors.js';
import { TokenBucket } from './ratelimit.js';

describe('TokenBucket (client-go token bucket semantics)', () => {
  it('lets a burst through, then spaces requests at 1/qps, queueing waiters in order', () => {
    let now = 0;
    const b = new TokenBucket({ qps: 10, burst: 3, now: () => now });
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 0]);
    expect(b.reserve()).toBeCloseTo(100);
    expect(b.reserve()).toBeCloseTo(200); // behind the previous waiter
    now = 1000; // refills 10 tokens, capped at burst 3 (two were owed)
    expect(b.reserve()).toBe(0);
  });

  it('gives a token back when a waiter is aborted', async () => {
    const b = new TokenBucket({ qps: 1, burst: 1 });
    await b.take();
    const ac = new AbortController();
    const waiting = b.take(ac.signal);
    ac.abort();
    await expect(waiting).rejects.toSatisfy((e) => isK8sError(e, 'ABORTED'));
    expect(b.reserve()).toBeLessThan(1000); // not 2000: the aborted reservation was returned
  });

  it('refuses nonsense limits', () => {
    expect(() => new TokenBucket({ qps: 0, burst: 1 })).toThrow(RangeError);
    expect(() => new TokenBucket({ qps: 1, burst: 0.5 })).toThrow(RangeError);
  });
});
