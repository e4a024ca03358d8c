/**
 * The set-up of tests that call cronflock's scripts directly: a private redis-server for the file, a Store on it,
 * an empty database before each test; the Redis time; a claim request with test defaults.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { Store, type ClaimRequest } from '../../runner/redis/store.js';

/** What {@link scriptHarness} provides (filled in by its beforeAll). */
export interface ScriptHarness {
  server: RedisServerProcess;
  redis: Redis;
  store: Store;
  keys: Keyspace;
}

/** Registers the hooks; the returned object is filled before the first test. */
export function scriptHarness(namespace = 't'): ScriptHarness {
  const h = { keys: new Keyspace(namespace) } as ScriptHarness;
  beforeAll(async () => {
    h.server = await RedisServerProcess.start();
    h.redis = new Redis(h.server.url);
    h.store = new Store(h.redis, h.keys);
  });
  afterAll(async () => {
    h.redis.disconnect();
    await h.server.cleanup();
  });
  beforeEach(async () => {
    await h.redis.flushall();
  });
  return h;
}

/** Redis `TIME` in ms. */
export async function redisNow(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** A claim of schedule `s` by replica `a` (lock 300 ms, horizon 60 s, retention 120 s), changed by `over`. */
export function claimRequest(key: string, dueMs: number, fireMs: number, over: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    replica: 'a', schedule: 's', key, dueMs, fireMs, origin: 'schedule', lockMs: 300, horizonMs: 60_000,
    retentionMs: 120_000, startingDeadlineMs: null, earlyToleranceMs: 0, maxStalls: 3, concurrencyPolicy: 'Allow',
    maxConcurrent: null, ...over,
  };
}
