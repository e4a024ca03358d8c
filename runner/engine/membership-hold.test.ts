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
import { LOADING_DIGEST_PREFIX, LOADING_THRESHOLD, LOADING_TTL_MS, Planner } from './planner.js';
import { Replica } from './replica.js';
import { parseScheduleText } from '../config/load.js';
import { RedisClock } from '../redis/clock.js';
import { connectCommands } from '../redis/connect.js';
import { Store } from '../redis/store.js';
import { closeLanes, openLanes } from './enqueue.js';
import { EngineEvents } from './events.js';
import { LiveReplicas } from './ownership.js';

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

  it('is renewed between a large join and the first tick, when no tick runs (publishing and reading what a large start loads)', async () => {
    // 1,000,000 stored schedules: join, then the definitions published and every watermark read before the first
    // tick took longer than the hold on a busy host; the lapsed replica was taken for gone and every other replica
    // named itself the publisher of its definitions. Here the hold lasts 1.5 s and the wait before start 4 s.
    const text = `schedules:\n${Array.from({ length: LOADING_THRESHOLD }, (_, i) => `  - {name: m${i}, cron: "0 3 * * *", job: {kind: http, url: "http://127.0.0.1:9/"}}\n`).join('')}`;
    const parsed = await parseScheduleText(text, 'hold.yaml');
    expect(parsed.errors).toEqual([]);
    const cmd = connectCommands(pr.server.url, 'hold:h2');
    if (cmd.status !== 'ready') await new Promise((resolve) => cmd.once('ready', resolve));
    const clock = new RedisClock(cmd, undefined, keys.ns);
    await clock.sync();
    const lanes = openLanes(cmd, keys);
    const log = pino({ level: 'silent' }) as unknown as Logger;
    const planner = new Planner(new Store(cmd, keys), lanes, keys, clock, compileOptions({ replica: 'h2' }), log, { events: new EngineEvents(), live: new LiveReplicas(), loadingTtlMs: 1_500 });
    try {
      await planner.join(parsed.schedules);
      const seen: { ttlMs: number; digest: string }[] = [];
      for (let i = 0; i < 8; i++) {
        await new Promise((r) => setTimeout(r, 500));
        seen.push(await membership('h2'));
      }
      // A member the whole time (expiry ahead of Redis time at every look), with the loading digest.
      for (const m of seen) {
        expect(m.ttlMs).toBeGreaterThan(0);
        expect(m.digest.startsWith(LOADING_DIGEST_PREFIX)).toBe(true);
      }
      await planner.stop();
      // Stopped: it left, and no renewal brings it back.
      await new Promise((r) => setTimeout(r, 1_200));
      expect(await pr.redis.zscore(keys.replicas, 'h2')).toBeNull();
    } finally {
      await planner.stop();
      await closeLanes(lanes);
      cmd.disconnect();
    }
  });
});
