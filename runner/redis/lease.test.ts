/**
 * The lease machine on its own: renewal cadence, the three ways a lease ends (refused renewal, monotonic guard,
 * an error answered with a renewal), failed renewals logged and retried, and timers that keep no process alive.
 * The Redis side is tested with the claim (store.test.ts, test/integration/failover.test.ts) and the job locks
 * (job-locks.test.ts); here `renew` is the holder's own callback.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HeldLease } from './lease.js';
import { sleep } from '../time/wait.js';

class Lost extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

function lease(ttlMs: number, renew: () => Promise<boolean | Lost>, warnings: string[] = []): HeldLease<Lost> {
  return new HeldLease<Lost>({
    ttlMs,
    sentMono: performance.now(),
    renew,
    lostError: (why) => new Lost(why),
    log: { warn: (obj, msg) => warnings.push(`${msg}: ${(obj as { err: string }).err}`) },
  });
}

/** The error the lease ended with, or null when it has not ended within 5 s. */
const ended = (l: HeldLease<Lost>): Promise<Lost | null> => Promise.race([l.lost, sleep(5_000).then(() => null)]);

describe('HeldLease', () => {
  it('renews every ttl/3 while held; close() stops renewing without firing the signal', async () => {
    let renewals = 0;
    const l = lease(300, async () => (renewals++, true));
    await sleep(1_050);
    expect(renewals).toBeGreaterThanOrEqual(5); // every 100 ms: ~10; generous for a loaded machine
    expect(l.signal.aborted).toBe(false);
    l.close();
    const n = renewals;
    await sleep(400);
    expect(renewals).toBe(n);
    expect(l.signal.aborted).toBe(false);
  });

  it('a refused renewal fires the signal with the "refused" error and resolves lost', async () => {
    const l = lease(300, async () => false);
    const err = await ended(l);
    expect(err?.why).toBe('refused');
    expect(l.signal.reason).toBe(err);
  });

  it('a renewal answered with an error ends the lease with that error', async () => {
    const l = lease(300, async () => new Lost('replaced'));
    expect((await ended(l))?.why).toBe('replaced');
  });

  it('failed renewals are logged and retried; the guard fires "lapsed" once the ttl passed unrenewed', async () => {
    const warnings: string[] = [];
    let calls = 0;
    const l = lease(600, async () => {
      calls++;
      throw new Error('Connection is closed.');
    }, warnings);
    const t0 = performance.now();
    const err = await ended(l);
    expect(err?.why).toBe('lapsed');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(590);
    expect(calls).toBeGreaterThanOrEqual(2); // the first at ttl/3, then retried within 250 ms
    // The error in words (outage.ts → explainRedisError), not ioredis's own
    expect(warnings[0]).toMatch(/^lease renewal failed: Redis is not reachable; retrying until the lease lapses/);
    expect(warnings[0]).not.toContain('Connection is closed');
  });

  it('a renewal timer that fires late (the process was stopped) does not renew: the lease lapsed', async () => {
    let renewals = 0;
    const l = lease(300, async () => (renewals++, true));
    const until = performance.now() + 400; // block the event loop past the ttl, as SIGSTOP would
    while (performance.now() < until) {
      /* busy */
    }
    expect((await ended(l))?.why).toBe('lapsed');
    expect(renewals).toBe(0);
  });

  it('abort() ends it once; later aborts change nothing', async () => {
    const l = lease(60_000, async () => true);
    l.abort(new Lost('first'));
    l.abort(new Lost('second'));
    expect((await l.lost).why).toBe('first');
    expect((l.signal.reason as Lost).why).toBe('first');
  });

  it('keeps no process alive on its own (its timers are unref\'d)', () => {
    const t0 = performance.now();
    execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "const { HeldLease } = await import('./runner/redis/lease.ts'); new HeldLease({ ttlMs: 60000, sentMono: performance.now(), renew: async () => true, lostError: () => new Error('lost') });",
      ],
      { cwd: new URL('../../', import.meta.url), timeout: 30_000 },
    );
    expect(performance.now() - t0).toBeLessThan(20_000); // not the 60 s lease
  });
});

describe('HeldLease: the local lease end', () => {
  it('signal.aborted compares with the local lease end when read: true before any timer ran (a resumed process)', async () => {
    const l = lease(300, async () => true);
    const until = performance.now() + 400; // block the event loop past the ttl, as SIGSTOP would: no timer runs
    while (performance.now() < until) {
      /* busy */
    }
    // Read synchronously, as code right after an await reads it when an I/O completion comes before the timers.
    expect(l.signal.aborted).toBe(true);
    expect((l.signal.reason as Lost).why).toBe('lapsed');
    expect(() => l.signal.throwIfAborted()).toThrow(Lost);
    expect((await ended(l))?.why).toBe('lapsed');
  });

  it('signal.throwIfAborted() also compares with the lease end', () => {
    const l = lease(200, async () => true);
    const until = performance.now() + 300;
    while (performance.now() < until) {
      /* busy */
    }
    expect(() => l.signal.throwIfAborted()).toThrow(Lost);
  });

  it('a renewal extends the lease from its send time, not its reply time, and tells onRenewed', async () => {
    const sends: number[] = [];
    const l = lease(900, async () => {
      sends.push(performance.now());
      await sleep(200); // a slow reply
      return true;
    });
    const told: { until: number; at: number }[] = [];
    l.onRenewed((until) => told.push({ until, at: performance.now() }));
    await sleep(700); // the first renewal at ttl/3 = 300 ms, answered ~200 ms later
    l.close();
    expect(told.length).toBeGreaterThanOrEqual(1);
    const first = told[0]!;
    // The send time is taken just before renew() runs the callback that notes `sends`: a GC or the callback's first
    // compilation may fall between the two (1.3 ms was seen in CI), far below the ~200 ms this test tells apart.
    expect(first.until).toBeGreaterThanOrEqual(sends[0]! + 900 - 20);
    expect(first.until).toBeLessThanOrEqual(sends[0]! + 900 + 5); // the send time (renew() is called right after it is taken)
    expect(first.until).toBeLessThan(first.at + 900 - 150); // not the reply time (~200 ms later)
    expect(l.untilMono).toBe(told.at(-1)!.until);
    expect(l.ttlMs).toBe(900);
  });
});
