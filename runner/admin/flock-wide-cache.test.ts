/**
 * The flock-wide cache's passes on a real redis-server: how often a pass starts follows what the whole pass cost,
 * its listener included (the schedule health board looks at every schedule the replica runs). Why: at 1,000,000
 * stored schedules the reads of a pass took little (nothing had run yet) while the board took seconds, and a pass
 * every 2 s kept a replica's event loop busy about half the time — the stored changes it should have applied
 * waited behind it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { Keyspace } from '../redis/keys.js';
import { FlockWideCache } from './flock-wide-cache.js';

const pr = usePrivateRedis();
let cache: FlockWideCache | undefined;
afterEach(async () => {
  await cache?.stop();
  cache = undefined;
});

describe('flock-wide cache', () => {
  it('spaces its passes by ten times what a pass cost, the listener\'s work included', async () => {
    cache = new FlockWideCache(pr.redis, new Keyspace('fwc'), () => new Set(['a', 'b']), { pingEveryMs: 50, refreshEveryMs: 100, budgetMs: 2_000, pageSize: 500 });
    const starts: number[] = [];
    // A listener as slow as the health board of a very large flock (here 300 ms of waiting).
    cache.onPass = async () => {
      starts.push(performance.now());
      await new Promise((r) => setTimeout(r, 300));
    };
    cache.start();
    await new Promise((r) => setTimeout(r, 4_000));
    expect(starts.length).toBeGreaterThanOrEqual(1);
    expect(cache.lastPassMs).toBeGreaterThanOrEqual(290);
    // 10 × ~300 ms apart: at most 2 passes in 4 s (every 100 ms or so, ~10, when the listener did not count).
    expect(starts.length).toBeLessThanOrEqual(2);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(2_500);
  });
});
