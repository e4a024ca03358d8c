/**
 * Which Redis a command talks to: `--redis`, else `REDIS_URL`, else (for `start` only) a private
 * `redis-server` started for this process when the binary is on PATH.
 */
import type { Logger } from '../log.js';
import { redactRedisUrl } from '../redis/connect.js';
import { RedisServerMissingError, RedisServerProcess, redisServerAvailable } from '../redis/server-process.js';

/** A Redis URL and, for a private server, how to stop it. */
export interface RedisTarget {
  url: string;
  private?: RedisServerProcess;
}

/** Error a CLI command ends with: printed without a stack, exit code 2. */
export class CliError extends Error {
  readonly code = 'CLI_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * Resolves the Redis to use.
 * @param allowPrivate start a private server when no URL is configured (the `start` command).
 * @throws CliError when there is no URL and a private server cannot be started.
 */
export async function resolveRedis(flag: string | undefined, allowPrivate: boolean, log?: Logger): Promise<RedisTarget> {
  const url = flag ?? process.env.REDIS_URL;
  if (url) return { url };
  if (!allowPrivate) throw new CliError('no Redis given: pass --redis redis://host:6379 or set REDIS_URL');
  if (!redisServerAvailable()) throw new CliError(new RedisServerMissingError().message);
  const srv = await RedisServerProcess.start();
  log?.warn(
    { redis: redactRedisUrl(srv.url), dataDir: srv.dir },
    `no REDIS_URL or --redis: started a private redis-server on ${srv.url} for this replica only; it stops with it. ` +
      `To run several replicas, start Redis yourself and give every replica REDIS_URL.`,
  );
  return { url: srv.url, private: srv };
}
