import { describe, expect, it } from 'vitest';
import { settlesWithin, sleep } from './wait.js';

describe('sleep (the one abortable sleep)', () => {
  it('resolves after the time', async () => {
    const t0 = performance.now();
    await sleep(60);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(55);
  });

  it('resolves at once when the signal aborts, and for a signal that already has', async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    const p = sleep(5_000, ac.signal);
    setTimeout(() => ac.abort(), 20);
    await p;
    expect(performance.now() - t0).toBeLessThan(2_000);
    const t1 = performance.now();
    await sleep(5_000, AbortSignal.abort());
    expect(performance.now() - t1).toBeLessThan(2_000);
  });

  it('leaves no listener on the signal once it has resolved', async () => {
    const ac = new AbortController();
    let added = 0;
    let removed = 0;
    const add = ac.signal.addEventListener.bind(ac.signal);
    const remove = ac.signal.removeEventListener.bind(ac.signal);
    ac.signal.addEventListener = ((...a: Parameters<typeof add>) => (added++, add(...a))) as typeof add;
    ac.signal.removeEventListener = ((...a: Parameters<typeof remove>) => (removed++, remove(...a))) as typeof remove;
    await sleep(5, ac.signal);
    expect([added, removed]).toEqual([1, 1]);
  });
});

describe('settlesWithin', () => {
  it('says whether a promise settled (either way) in time', async () => {
    expect(await settlesWithin(Promise.reject(new Error('x')), 1_000)).toBe(true);
    expect(await settlesWithin(new Promise(() => undefined), 20)).toBe(false);
  });
});
