/**
 * The ClaimHolder on a real redis-server: its signal fires on its own local lease end (the last successful
 * renewal's send time plus lockMs), and reading `signal.aborted` sees that end even before any timer ran — as
 * code right after an await does when a stopped replica resumes and pending I/O completions come first — and never
 * earlier than that end while Redis only answers late (paused for less than the lease).
 */
import { describe, expect, it } from 'vitest';
import { ClaimHolder, ClaimLostError } from './claim.js';
import type { Logger } from '../log.js';
import { Keyspace } from '../redis/keys.js';
import { Store, type ClaimRequest } from '../redis/store.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';

const priv = usePrivateRedis();
const keys = new Keyspace('c');
const quiet = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;

async function claimed(lockMs: number): Promise<{ holder: ClaimHolder; store: Store; key: string }> {
  const store = new Store(priv.redis, keys);
  const now = await priv.redisNow();
  const key = occurrenceKey(`s${Math.round(performance.now())}`, now);
  const r: ClaimRequest = {
    replica: 'a', schedule: 's', key, dueMs: now, fireMs: now, origin: 'schedule', lockMs, horizonMs: 60_000,
    retentionMs: 120_000, startingDeadlineMs: null, earlyToleranceMs: 0, maxStalls: 2, concurrencyPolicy: 'Allow',
    maxConcurrent: null,
  };
  const sentMono = performance.now();
  const c = await store.claim(r);
  if (c.status !== 'claimed') throw new Error(`not claimed: ${c.status}`);
  return { holder: new ClaimHolder(store, key, c.token, lockMs, 120_000, sentMono, quiet), store, key };
}

describe('ClaimHolder: local lease end', () => {
  it('signal.aborted is true once lockMs passed since the last renewal was sent, before any timer ran', async () => {
    const { holder } = await claimed(600);
    expect(holder.signal.aborted).toBe(false);
    const until = holder.untilMono + 50; // block the event loop past the lease end: no renewal, no timer
    while (performance.now() < until) {
      /* busy, as a stopped process */
    }
    expect(holder.signal.aborted).toBe(true);
    expect(holder.signal.reason).toBeInstanceOf(ClaimLostError);
    expect((holder.signal.reason as ClaimLostError).kind).toBe('lost');
    expect((holder.signal.reason as ClaimLostError).message).toMatch(/lapsed: not renewed within 600 ms/);
  });

  it('an alive holder whose Redis is paused (SIGSTOP) for less than the lease keeps the claim: not lost before the lease end, renewed after', async () => {
    const { holder } = await claimed(1500);
    await new Promise((r) => setTimeout(r, 550)); // just after the first renewal (every 500 ms)
    const before = holder.untilMono;
    const pid = priv.server.pid!;
    process.kill(pid, 'SIGSTOP');
    const pausedAt = performance.now();
    let abortedDuring = false;
    try {
      // Read the signal (as a job does) throughout a pause that ends before the lease end (~1.45 s after pausing).
      while (performance.now() < pausedAt + 1000) {
        abortedDuring ||= holder.signal.aborted;
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(abortedDuring).toBe(false);
    await new Promise((r) => setTimeout(r, 1200)); // renewals go on: past the lease end as of the pause
    expect(holder.signal.aborted).toBe(false);
    expect(holder.untilMono).toBeGreaterThan(before + 500);
    holder.close();
  });

  it('renewals move the lease end to their send time plus lockMs and tell onRenewed; the signal stays quiet while renewed', async () => {
    const { holder } = await claimed(600);
    const told: number[] = [];
    holder.onRenewed((u) => told.push(u));
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 1000));
    expect(holder.signal.aborted).toBe(false);
    expect(told.length).toBeGreaterThanOrEqual(2); // every 200 ms: ~4
    expect(told[0]!).toBeGreaterThan(t0 + 600);
    expect(holder.untilMono).toBe(told.at(-1));
    expect(holder.untilMono).toBeLessThanOrEqual(performance.now() + 600);
    holder.close();
  });
});
