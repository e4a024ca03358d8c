/**
 * A private redis-server for one test file: started on an OS-picked free port before the file's tests, one
 * ioredis connection to it, emptied (FLUSHALL) before each test unless asked not to, stopped (and its data
 * directory removed) after the file. The set-up the script and store tests share (runner/redis/*.test.ts).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { RedisServerProcess } from '../../runner/redis/server-process.js';

/** What {@link usePrivateRedis} gives a test file; `redis` and `server` are there from the file's first `beforeAll` on. */
export interface PrivateRedis {
  /** The connection the tests use. */
  readonly redis: Redis;
  /** The server process (its `url`, to open more connections). */
  readonly server: RedisServerProcess;
  /** The Redis clock (TIME), in whole UTC ms. */
  redisNow(): Promise<number>;
  /** The Redis clock (TIME), in UTC ms with the microseconds as a fraction. */
  redisNowPrecise(): Promise<number>;
}

/**
 * Registers the hooks (beforeAll: start and connect; beforeEach: FLUSHALL unless `flushBetweenTests` is false;
 * afterAll: disconnect and stop). Call it at the top level of a test file, before hooks that use `redis`
 * (vitest runs `beforeAll` hooks in the order they are registered).
 * @throws (in its beforeAll) RedisServerMissingError when redis-server is not installed.
 */
export function usePrivateRedis(o: { flushBetweenTests?: boolean } = {}): PrivateRedis {
  let server: RedisServerProcess | undefined;
  let redis: Redis | undefined;
  const ready = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`usePrivateRedis: ${what} is used before the file's beforeAll ran`);
    return v;
  };
  const time = async (): Promise<[number, number]> => {
    const [s, us] = await ready(redis, 'redis').time();
    return [Number(s), Number(us)];
  };
  beforeAll(async () => {
    server = await RedisServerProcess.start();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.cleanup();
  });
  if (o.flushBetweenTests !== false) {
    beforeEach(async () => {
      await ready(redis, 'redis').flushall();
    });
  }
  return {
    get redis() {
      return ready(redis, 'redis');
    },
    get server() {
      return ready(server, 'server');
    },
    async redisNow() {
      const [s, us] = await time();
      return s * 1000 + Math.floor(us / 1000);
    },
    async redisNowPrecise() {
      const [s, us] = await time();
      return s * 1000 + us / 1000;
    },
  };
}
