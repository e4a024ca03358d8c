/**
 * Which Redis a command talks to: `--redis`, else `REDIS_URL`, else (for `start` only) a private
 * `redis-server` started for this process when the binary is on PATH. Any URL form of runner/redis/url.ts
 * (one server, Sentinel, Cluster; `rediss…` for TLS), with TLS files from `--redis-tls-*` or `REDIS_TLS_*`.
 */
import { Option, type Command } from 'commander';
import type { Logger } from '../log.js';
import { timerSecondsArg } from './arg-parsers.js';
import { connectOneShot, parseRedisUrl, redactRedisUrl, RedisTlsError, RedisUrlError, tlsOptions, type RedisClient, type RedisTlsFiles } from '../redis/connect.js';
import { explainRedisError, formatRedisProblem, noAnswerProblem } from '../redis/explain.js';
import { RedisServerMissingError, RedisServerProcess, redisServerAvailable } from '../redis/server-process.js';
import { checkTlsEndpoint, RedisNotTlsError } from '../redis/tls-check.js';

/** A Redis URL and, for a private server, how to stop it. */
export interface RedisTarget {
  url: string;
  /** TLS files for a `rediss…` URL. */
  tls?: RedisTlsFiles;
  private?: RedisServerProcess;
}

/** The TLS flags {@link addRedisTlsOptions} adds, as commander hands them to an action. */
export interface RedisTlsFlags {
  redisTlsCa?: string;
  redisTlsCert?: string;
  redisTlsKey?: string;
  redisTlsInsecure?: boolean;
}

/** The flags {@link addRedisOptions} adds, as commander hands them to an action. */
export interface RedisFlags extends RedisTlsFlags {
  redis?: string;
  namespace: string;
  /** Seconds a one-shot command waits for Redis to answer ({@link addOneShotRedisOptions}). */
  redisTimeout?: number;
}

/** How long a CLI command waits for an answer from a Redis that took its connection, in seconds. */
export const DEFAULT_REDIS_TIMEOUT_S = 10;

/**
 * Adds `--redis <url>` (default `REDIS_URL`), `--namespace <ns>` (default `CRONFLOCK_NAMESPACE`, else
 * `cronflock`) and the TLS flags: how every command finds its flock.
 */
export function addRedisOptions(c: Command, redisHelp = 'Redis URL: redis://, rediss://, redis+sentinel://, redis+cluster://'): Command {
  c.addOption(new Option('--redis <url>', redisHelp).env('REDIS_URL'));
  c.addOption(new Option('--namespace <ns>', 'key namespace of the flock').env('CRONFLOCK_NAMESPACE').default('cronflock'));
  return addRedisTlsOptions(c);
}

/**
 * {@link addRedisOptions} plus `--redis-timeout <s>` (default `CRONFLOCK_REDIS_TIMEOUT`, else 10): for the
 * commands that do their work and exit ({@link withOneShotRedis}), and for `ui` (how long one request waits).
 */
export function addOneShotRedisOptions(c: Command): Command {
  addRedisOptions(c);
  return c.addOption(
    new Option('--redis-timeout <seconds>', 'give up when Redis accepts the connection but does not answer within this long')
      .env('CRONFLOCK_REDIS_TIMEOUT')
      .argParser(timerSecondsArg)
      .default(DEFAULT_REDIS_TIMEOUT_S),
  );
}

/** Adds `--redis-tls-ca|cert|key|insecure` (defaults from `REDIS_TLS_CA_FILE`, `_CERT_FILE`, `_KEY_FILE`, `_INSECURE`). */
export function addRedisTlsOptions(c: Command): Command {
  const env = process.env;
  return c
    .addOption(new Option('--redis-tls-ca <file>', 'PEM CA bundle that signed the Redis server certificate (rediss://)').env('REDIS_TLS_CA_FILE'))
    .addOption(new Option('--redis-tls-cert <file>', 'PEM client certificate, when Redis requires one').env('REDIS_TLS_CERT_FILE'))
    .addOption(new Option('--redis-tls-key <file>', 'PEM key of --redis-tls-cert').env('REDIS_TLS_KEY_FILE'))
    .addOption(
      new Option('--redis-tls-insecure', 'do not verify the Redis server certificate (tests only; prefer --redis-tls-ca)').default(
        env.REDIS_TLS_INSECURE === '1' || env.REDIS_TLS_INSECURE === 'true',
        'off; REDIS_TLS_INSECURE=1 turns it on',
      ),
    );
}

const tlsFiles = (f: RedisTlsFlags): RedisTlsFiles | undefined => {
  const t: RedisTlsFiles = {};
  if (f.redisTlsCa) t.caFile = f.redisTlsCa;
  if (f.redisTlsCert) t.certFile = f.redisTlsCert;
  if (f.redisTlsKey) t.keyFile = f.redisTlsKey;
  if (f.redisTlsInsecure) t.insecure = true;
  return Object.keys(t).length > 0 ? t : undefined;
};

/** Error a CLI command ends with: printed without a stack, exit code 2. */
export class CliError extends Error {
  readonly code = 'CLI_USAGE';
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * Resolves the Redis to use, and checks the URL and TLS files before anything connects.
 * @param allowPrivate start a private server when no URL is configured (the `start` command).
 * @throws CliError when the URL or TLS files are unusable (message redacted), or when there is no URL and a
 *   private server cannot be started.
 */
export async function resolveRedis(
  flag: string | undefined,
  allowPrivate: boolean,
  log?: Logger,
  tlsFlags: RedisTlsFlags = {},
): Promise<RedisTarget> {
  const url = flag ?? process.env.REDIS_URL;
  const tls = tlsFiles(tlsFlags);
  if (url) {
    try {
      const endpoint = parseRedisUrl(url);
      tlsOptions(endpoint, tls);
      await checkTlsEndpoint(endpoint); // rediss:// to a plain server: say so in a second, not time out in 21
    } catch (err) {
      if (err instanceof RedisUrlError || err instanceof RedisTlsError) throw new CliError(err.message);
      if (err instanceof RedisNotTlsError) throw new CliError(`${redactRedisUrl(url)}: ${err.message}`);
      throw err;
    }
    if (tls?.insecure) log?.warn({ redis: redactRedisUrl(url) }, 'Redis TLS certificate verification is OFF (--redis-tls-insecure): for tests only');
    return tls ? { url, tls } : { url };
  }
  if (!allowPrivate) throw new CliError('no Redis given: pass --redis redis://host:6379 or set REDIS_URL');
  if (!redisServerAvailable()) throw new CliError(new RedisServerMissingError().message);
  const srv = await RedisServerProcess.start();
  log?.warn(
    { redis: redactRedisUrl(srv.url), dataDir: srv.dir, pid: srv.pid },
    `no REDIS_URL or --redis: started a private redis-server on ${srv.url} for this replica only; it stops with it. ` +
      `To run several replicas, start Redis yourself and give every replica REDIS_URL.`,
  );
  return { url: srv.url, private: srv };
}

/** The connection took too long to become ready: the watchdog of {@link withOneShotRedis}. */
class NoAnswerError extends Error {}

/**
 * Connects a one-shot client to the Redis of `flags`, runs `fn`, and disconnects. Bounded: connecting gives up
 * within seconds when nothing accepts it (connect.ts), and when Redis accepts but does not answer, the command
 * gives up after `flags.redisTimeout` seconds (no ready connection by then, or one command without an answer).
 * @param doing what a failure message starts with, e.g. "cannot read runs from" (the redacted URL follows).
 * @throws CliError saying in words what went wrong with Redis and what to try; CliErrors of `fn` as they are.
 */
export async function withOneShotRedis<T>(flags: RedisFlags, doing: string, fn: (redis: RedisClient) => Promise<T>): Promise<T> {
  const { url, tls } = await resolveRedis(flags.redis, false, undefined, flags);
  const timeoutS = flags.redisTimeout ?? DEFAULT_REDIS_TIMEOUT_S;
  const redis = connectOneShot(url, 'cronflock:cli', tls, timeoutS * 1000);
  // Connection errors explain a failed command (a Cluster reports its nodes' errors apart: 'node error').
  const connectionErrors: string[] = [];
  for (const ev of ['error', 'node error']) redis.on(ev, (err: Error) => void (connectionErrors.length < 5 && connectionErrors.push(err.message)));
  let accepted = false; // a socket (and TLS) connected: the server is there, whatever it answers
  redis.on('connect', () => (accepted = true));
  // Not every wait is a command with a timeout (BullMQ waits for 'ready'): a watchdog bounds getting ready.
  let watchdog: NodeJS.Timeout | undefined;
  const notReady = new Promise<never>((_, reject) => {
    watchdog = setTimeout(() => reject(new NoAnswerError()), timeoutS * 1000);
  });
  notReady.catch(() => undefined);
  redis.once('ready', () => clearTimeout(watchdog));
  try {
    return await Promise.race([fn(redis), notReady]);
  } catch (err) {
    if (err instanceof CliError) throw err;
    const noAnswer = accepted && (err instanceof NoAnswerError || /^Command timed out/.test((err as Error)?.message ?? ''));
    const problem = noAnswer ? noAnswerProblem(timeoutS) : explainRedisError(err instanceof NoAnswerError ? new Error(`no answer within ${timeoutS} s`) : err, connectionErrors);
    throw new CliError(`${doing} ${redactRedisUrl(url)}: ${formatRedisProblem(problem)}`);
  } finally {
    clearTimeout(watchdog);
    redis.disconnect();
  }
}
