/**
 * The Redis-time estimate on a real redis-server, with this process's host clocks moved the way a stepped or
 * suspended host moves them (Date.now() stepped; the monotonic clock standing still).
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_HOST_SKEW_MS, RedisClock } from './clock.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';

const priv = usePrivateRedis({ flushBetweenTests: false });
const redisNow = priv.redisNowPrecise;
let redis: Redis;
const realNow = Date.now;
const realPerfNow = performance.now.bind(performance);

beforeAll(() => {
  redis = priv.redis;
});
afterEach(() => {
  Date.now = realNow;
  performance.now = realPerfNow;
});
/** Steps this process's wall clock by `ms` (the monotonic clock is left alone). */
function stepWallClock(ms: number): void {
  const before = Date.now;
  Date.now = () => before() + ms;
}

describe('RedisClock', () => {
  it('keeps reading Redis time when the host wall clock is stepped, and reports the step and the new skew', async () => {
    const clock = new RedisClock(redis);
    await clock.sync();
    clock.detectStep();
    expect(clock.hostClockInBounds).toBe(true);
    for (const step of [3_600_000, -3_600_000]) {
      stepWallClock(step);
      const est = clock.now();
      expect(Math.abs(est - (await redisNow()))).toBeLessThan(50);
      expect(Math.abs(clock.offsetMs + step)).toBeLessThan(50);
      expect(clock.hostClockInBounds).toBe(false);
      expect(Math.abs(clock.detectStep()! - step)).toBeLessThan(50);
      expect(clock.detectStep()).toBeNull(); // reported once
      // A sample taken after the step agrees with the estimate: nothing to re-base.
      const s = await clock.sync();
      expect(s.jumpMs).toBeUndefined();
      expect(Math.abs(s.offsetMs + step)).toBeLessThan(50);
      Date.now = realNow;
      clock.detectStep();
    }
    expect(clock.hostClockInBounds).toBe(true);
    expect(MAX_HOST_SKEW_MS).toBeLessThan(3_600_000);
  });

  it('re-bases on a sample that disagrees with the estimate (the monotonic clock stood still in a suspend)', async () => {
    const clock = new RedisClock(redis);
    await clock.sync();
    await clock.sync();
    // As after a 10 s suspend: the monotonic clock did not count it, the wall clock (and Redis) did.
    performance.now = () => realPerfNow() - 10_000;
    expect(clock.now() - (await redisNow())).toBeLessThan(-9_900);
    const s = await clock.sync();
    expect(Math.abs(s.jumpMs! - 10_000)).toBeLessThan(100);
    expect(Math.abs(clock.now() - (await redisNow()))).toBeLessThan(50);
  });

  it('takes the sample with the shortest round trip, and tolerates samples that agree', async () => {
    const clock = new RedisClock(redis);
    for (let i = 0; i < 8; i++) expect((await clock.sync()).jumpMs).toBeUndefined();
    expect(Math.abs(clock.now() - (await redisNow()))).toBeLessThan(20);
    expect(Number.isInteger(clock.now())).toBe(true);
  });
});
