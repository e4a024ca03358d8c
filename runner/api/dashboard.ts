/**
 * A running dashboard and API for one flock: its own Redis connection, the queues actions enqueue on, the
 * schedule index, and the listener. What `cronflock ui` runs, and what `cronflock start --ui` adds to a replica.
 */
import { DEFAULT_OPTIONS } from '../engine/options.js';
import { closeLanes, openLanes } from '../engine/enqueue.js';
import { RedisClock } from '../redis/clock.js';
import { connectCommands, type RedisClient, type RedisTlsFiles } from '../redis/connect.js';
import { explainRedisError, isRedisUnavailable, noAnswerProblem, type RedisProblem } from '../redis/explain.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { settlesWithin } from '../time/wait.js';
import { READ_ONLY, type AccessRules } from './auth.js';
import type { ApiServer } from './server.js';

/** Default listen address of the dashboard: this host only. */
export const DEFAULT_UI_LISTEN = '127.0.0.1:8080';

/**
 * How long a request of the dashboard or the API waits for an answer from Redis by default, ms (the CLI's
 * `--redis-timeout` default): past it the request is answered 503 REDIS_UNAVAILABLE instead of hanging.
 */
export const DEFAULT_DASHBOARD_REDIS_TIMEOUT_MS = 10_000;

/**
 * A classifier for the API's errors (ApiDeps.redisProblem): Redis away (its client's own failure) → the cause in
 * words, from the connection's recent errors: "accepted the connection but did not answer within N s" for a
 * paused or wedged server (a command timed out, or the connection was taken but never became ready), else
 * explain.ts's reading (connection refused, WRONGPASS …). Null for anything else.
 */
export function redisProblemOf(redis: RedisClient, timeoutMs: number): (err: unknown) => RedisProblem | null {
  const errors: string[] = [];
  redis.on('error', (err: Error) => {
    errors.push(err.message);
    if (errors.length > 5) errors.shift();
  });
  redis.on('ready', () => (errors.length = 0));
  return (err) => {
    if (!isRedisUnavailable(err)) return null;
    const noAnswer = /^Command timed out/.test((err as Error)?.message ?? '') || (redis.status === 'connect' && errors.length === 0);
    return noAnswer ? noAnswerProblem(timeoutMs / 1000) : explainRedisError(err, errors);
  };
}

/**
 * Resolves when `redis` is connected, or after `ms`: commands fail at once while it is not (no offline queue),
 * so a new connection gets a moment first.
 */
export async function whenReady(redis: RedisClient, ms: number): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    redis.once('ready', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** A started dashboard. */
export interface Dashboard {
  address: { host: string; port: number };
  /** The URL to open. */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the dashboard.
 * @param o.rules who may do what (default: read-only, actions off).
 * @param o.retentionMs the flock's `--retention`, for the records actions create (default the default).
 * @throws the listen error (EADDRINUSE, EACCES); the Redis connection is closed then.
 */
export async function startDashboard(o: {
  redisUrl: string;
  redisTls?: RedisTlsFiles;
  namespace: string;
  listen: { host: string; port: number };
  rules?: AccessRules;
  version: string;
  retentionMs?: number;
  clientName?: string;
  /** How long a request waits for Redis to answer, ms (default {@link DEFAULT_DASHBOARD_REDIS_TIMEOUT_MS}). */
  redisTimeoutMs?: number;
}): Promise<Dashboard> {
  const keys = new Keyspace(o.namespace);
  const redisTimeoutMs = o.redisTimeoutMs ?? DEFAULT_DASHBOARD_REDIS_TIMEOUT_MS;
  const redis = connectCommands(o.redisUrl, o.clientName ?? 'cronflock:ui', o.redisTls, redisTimeoutMs);
  redis.on('error', () => undefined); // answers say what is wrong; reconnects go on
  const redisProblem = redisProblemOf(redis, redisTimeoutMs);
  // The HTTP server (hono, the pages, cronstrue) is imported here, not with this module: a replica without `--ui`
  // imports this module (replica-extras.ts, ui-command.ts) but never serves the dashboard (start-up time, memory).
  const [{ listen }, { ScheduleIndex }] = await Promise.all([import('./server.js'), import('./schedule-index.js'), whenReady(redis, 5_000)]).catch((err: unknown) => {
    redis.disconnect();
    throw err;
  });
  const lanes = openLanes(redis, keys);
  const clock = new RedisClock(redis, undefined, keys.ns);
  const index = new ScheduleIndex(redis, keys);
  const control = {
    redis,
    keys,
    store: new Store(redis, keys),
    lanes,
    clock,
    options: { retentionMs: o.retentionMs ?? DEFAULT_OPTIONS.retentionMs, prefetchMs: DEFAULT_OPTIONS.prefetchMs },
    by: 'api',
  };
  let server: ApiServer;
  try {
    server = await listen({ redis, keys, index, rules: o.rules ?? READ_ONLY, control, version: o.version, redisProblem }, o.listen);
  } catch (err) {
    await settlesWithin(closeLanes(lanes), 2_000);
    redis.disconnect();
    throw err;
  }
  const host = server.address.host.includes(':') ? `[${server.address.host}]` : server.address.host;
  return {
    address: server.address,
    url: `http://${host}:${server.address.port}/`,
    close: async () => {
      await settlesWithin(server.close(), 3_000);
      await settlesWithin(closeLanes(lanes), 2_000);
      redis.disconnect();
    },
  };
}
