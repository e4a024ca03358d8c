/**
 * A replica that loads many schedules holds its membership (planner.ts `whileLoading`), on a real redis-server:
 * while it loads, its membership lasts {@link LOADING_TTL_MS} and carries a digest that agrees with nobody's (so no
 * replica divides planning and leaves a share to it); afterwards its next tick restores its digest and the 2 s TTL.
 * Why: loading 100,000 stored schedules kept a replica's event loop busy past its 2 s TTL; it dropped out and came
 * back, and each change made the others recompute what they own and re-publish what it had published.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { Keyspace } from '../redis/keys.js';
import type { Logger } from '../log.js';
import { compileOptions } from './options.js';
import { LOADING_DIGEST_PREFIX, LOADING_TTL_MS } from './planner.js';
import { Replica } from './replica.js';

const pr = usePrivateRedis();
const keys = new Keyspace();
let replica: Replica | undefined;
afterEach(async () => {
  await replica?.stop(0);
  replica = undefined;
});

async function membership(name: string): Promise<{ ttlMs: number; digest: string }> {
  const [expiry, digest, now] = await Promise.all([pr.redis.zscore(keys.replicas, name), pr.redis.hget(keys.replicaDigests, name), pr.redisNow()]);
  return { ttlMs: Number(expiry) - now, digest: digest ?? '' };
}

describe('membership held while loading', () => {
  it('lasts the loading TTL with a digest nobody shares while a load runs, and the planning TTL again after it', async () => {
    const log = pino({ level: 'silent' }) as unknown as Logger;
    replica = await Replica.start({ redisUrl: pr.server.url, schedules: [], options: compileOptions({ replica: 'h1' }), log, admin: null });
    const before = await membership('h1');
    expect(before.ttlMs).toBeLessThanOrEqual(2_000);
    expect(before.digest.startsWith(LOADING_DIGEST_PREFIX)).toBe(false);
    let during: { ttlMs: number; digest: string } | undefined;
    await replica.planner.whileLoading(async () => {
      // Several ticks go by while it loads: each renews the hold, none ends it.
      await new Promise((r) => setTimeout(r, 1_500));
      during = await membership('h1');
    });
    expect(during!.ttlMs).toBeGreaterThan(LOADING_TTL_MS - 2_000);
    expect(during!.digest).toBe(`${LOADING_DIGEST_PREFIX}${before.digest}`);
    await new Promise((r) => setTimeout(r, 1_500));
    const after = await membership('h1');
    expect(after.ttlMs).toBeLessThanOrEqual(2_000);
    expect(after.digest).toBe(before.digest);
  });
});
