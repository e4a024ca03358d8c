/**
 * Redis connections of a replica, and the one place that turns a Redis target (a URL, see url.ts, plus TLS
 * files) into them: one server, Sentinel or Cluster, with AUTH and TLS. Commands fail fast during an outage
 * (the planner and renewals retry on their own schedule); BullMQ's worker gets a connection that waits instead,
 * as BullMQ requires.
 *
 * Both return `Redis | Cluster`. Everything cronflock and BullMQ keep lives under the hash tag `{<namespace>}`
 * (keys.ts), so in a Cluster every multi-key script and pipeline stays in one slot, on one node.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { trackConnection } from './outage.js';
import { SCRIPT_COMMANDS, Scripts } from './script-loader.js';
import { parseRedisUrl, type RedisEndpoint } from './url.js';

export { parseRedisUrl, redactRedisUrl, RedisUrlError, type RedisEndpoint } from './url.js';

/** A connection of either kind; both take the same commands, scripts (defineCommand) and pipelines. */
export type RedisClient = Redis | Cluster;

/** TLS material for `rediss…` URLs: file paths, read when connecting. */
export interface RedisTlsFiles {
  /** PEM CA bundle that signed the server certificates (else the system's trusted CAs). */
  caFile?: string;
  /** PEM client certificate and key, for servers that require client certificates (`tls-auth-clients yes`). */
  certFile?: string;
  keyFile?: string;
  /** Skip server certificate verification. For tests only: anyone on the path can read and change traffic. */
  insecure?: boolean;
}

/** TLS settings or files that cannot be used. */
export class RedisTlsError extends Error {
  readonly code = 'REDIS_TLS';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RedisTlsError';
  }
}

/**
 * Reconnect backoff: 50 ms doubling up to 1 s, forever. Short, because a claim's lease keeps running on the
 * Redis clock while we are away: reconnecting fast after a Redis restart is what lets a run in flight keep it.
 */
const retryStrategy = (times: number): number => Math.min(50 * 2 ** Math.min(times, 5), 1_000);

/** A one-shot connection attempt gives up after this long (ioredis's default is 10 s). */
const ONESHOT_CONNECT_TIMEOUT_MS = 2_000;

/** For one-shot commands (the CLI's): the same backoff, but give up after 4 attempts (about 1 s). */
const oneShotRetryStrategy = (times: number): number | null => (times > 4 ? null : retryStrategy(times));

const readPem = (file: string, what: string): Buffer => {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new RedisTlsError(`cannot read the Redis TLS ${what} file ${file}: ${(err as Error).message}`, { cause: err });
  }
};

/**
 * Node TLS options for an endpoint, or undefined when it does not use TLS.
 * @throws RedisTlsError when TLS files are given for a plain `redis…://` URL, a certificate comes without its
 *   key, or a file cannot be read.
 */
export function tlsOptions(e: RedisEndpoint, files: RedisTlsFiles = {}): ConnectionOptions | undefined {
  const given = Boolean(files.caFile || files.certFile || files.keyFile || files.insecure);
  if (!e.tls) {
    if (given) {
      throw new RedisTlsError(
        `Redis TLS options are set but ${e.redacted} is not a TLS URL: use rediss:// (or rediss+sentinel://, rediss+cluster://)`,
      );
    }
    return undefined;
  }
  if (Boolean(files.certFile) !== Boolean(files.keyFile)) {
    throw new RedisTlsError('a Redis TLS client certificate needs its key, and a key its certificate (give both files)');
  }
  const o: ConnectionOptions = {};
  if (files.caFile) o.ca = readPem(files.caFile, 'CA');
  if (files.certFile) o.cert = readPem(files.certFile, 'client certificate');
  if (files.keyFile) o.key = readPem(files.keyFile, 'client key');
  if (files.insecure) o.rejectUnauthorized = false;
  return o;
}

/**
 * How a connection behaves while Redis is away. `commands` and `worker` reconnect forever (a replica rides
 * out an outage); `oneshot` gives up after about a second, so that a CLI command fails with the cause instead
 * of waiting forever (a Sentinel or Cluster connection otherwise never fails a queued command).
 */
export type RedisRole = 'commands' | 'worker' | 'oneshot';

/**
 * One connection to `url` (any form of url.ts).
 * @throws RedisUrlError (bad URL, message redacted) or RedisTlsError.
 */
export function connectRedis(url: string, name: string, role: RedisRole, files: RedisTlsFiles = {}, answerTimeoutMs?: number): RedisClient {
  const e = parseRedisUrl(url);
  const tls = tlsOptions(e, files);
  // commands: a command waits for at most one reconnect, then fails (its caller retries on its own schedule).
  // worker: BullMQ's blocking commands must wait through reconnects (BullMQ refuses anything else).
  const perRequest: Pick<RedisOptions, 'maxRetriesPerRequest' | 'enableAutoPipelining' | 'autoPipeliningIgnoredCommands'> =
    role !== 'worker'
      ? // Auto-pipelining sends the commands issued in one event-loop tick in one write: hundreds of commands
        // per second otherwise cost one socket write (and one Redis read) each.
        // cronflock's own scripts are not auto-pipelined: their hot callers already send what comes together as
        // one call (the claim and finish coalescers, store.ts), and ioredis builds each auto-pipeline by copying
        // every script defined on the connection onto it (ours and BullMQ's Queue's, ~90: ~35 µs a pipeline),
        // which profiling showed to be 11 % of a replica's CPU under load, more than the writes it saved.
        { maxRetriesPerRequest: 1, enableAutoPipelining: true, autoPipeliningIgnoredCommands: [...SCRIPT_COMMANDS] }
      : { maxRetriesPerRequest: null };
  const retry = role === 'oneshot' ? oneShotRetryStrategy : retryStrategy;
  // A one-shot command must not wait ioredis's 10 s per attempt for a host that does not answer.
  const connectTimeout = role === 'oneshot' ? { connectTimeout: ONESHOT_CONNECT_TIMEOUT_MS } : {};
  // A server that accepts the connection but never answers (paused, wedged) must not hold a command forever:
  // every command, queued or sent, fails with "Command timed out" after this long.
  const commandTimeout = answerTimeoutMs !== undefined ? { commandTimeout: answerTimeoutMs } : {};
  const auth: Pick<RedisOptions, 'username' | 'password'> = {};
  if (e.username) auth.username = e.username;
  if (e.password) auth.password = e.password;

  if (e.mode === 'cluster') {
    const { enableAutoPipelining, autoPipeliningIgnoredCommands, ...nodeRequest } = perRequest;
    const opts: ClusterOptions = {
      redisOptions: { ...auth, ...nodeRequest, ...connectTimeout, ...commandTimeout, connectionName: name, ...(tls ? { tls } : {}) },
      clusterRetryStrategy: retry,
      enableOfflineQueue: true,
      enableAutoPipelining: enableAutoPipelining ?? false,
      ...(autoPipeliningIgnoredCommands ? { autoPipeliningIgnoredCommands } : {}),
    };
    return prepared(new Cluster(e.nodes, opts), e);
  }
  const common: RedisOptions = {
    ...auth,
    ...perRequest,
    ...connectTimeout,
    ...commandTimeout,
    db: e.db,
    connectionName: name,
    retryStrategy: retry,
    // Replica commands fail at once while Redis is away instead of waiting to be sent on reconnect: a plan
    // decided before an outage must not be applied after it (the next tick decides again, with catch-up).
    enableOfflineQueue: role !== 'commands',
    ...(tls ? { tls } : {}),
  };
  if (e.mode === 'sentinel') {
    return prepared(refuseMissingDb(e, new Redis({
      ...common,
      sentinels: e.nodes,
      name: e.masterName!,
      role: 'master',
      ...(e.sentinelUsername ? { sentinelUsername: e.sentinelUsername } : {}),
      ...(e.sentinelPassword ? { sentinelPassword: e.sentinelPassword } : {}),
      ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
      sentinelRetryStrategy: retry,
      // Follow a failover as soon as the sentinels announce it, not only when the old master's socket drops.
      failoverDetector: true,
    })), e);
  }
  return prepared(refuseMissingDb(e, new Redis({ ...common, host: e.nodes[0]!.host, port: e.nodes[0]!.port })), e);
}

/**
 * Readies a new connection before anything uses it: defines cronflock's scripts (with auto-pipelining, a script
 * defined later could miss the pipeline ioredis has open for the current tick; script-loader.ts), and registers
 * it so that log lines about its failed commands can say which Redis and since when (outage.ts).
 */
function prepared<C extends RedisClient>(client: C, e: RedisEndpoint): C {
  Scripts.on(client);
  trackConnection(client, e.redacted);
  return client;
}

/**
 * ioredis reports a database index the server does not have ("ERR DB index is out of range") as an error event
 * and then goes on with database 0: cronflock would silently read and write another flock's keys. A wrong index
 * is a configuration error that no retry fixes, so the process says so and exits (2, bad input).
 */
function refuseMissingDb(e: RedisEndpoint, client: Redis): Redis {
  if (e.db === 0) return client;
  client.on('error', (err: Error) => {
    if (!/DB index is out of range/i.test(err.message)) return;
    process.stderr.write(
      `cronflock: ${e.redacted}: the server has no database ${e.db} (${err.message}); ` +
        "use an index below the server's 'databases' setting (16 by default), e.g. /0\n",
    );
    process.exit(2);
  });
  return client;
}

/**
 * A connection for cronflock's own commands and BullMQ's Queue (auto-pipelined; commands fail fast). With
 * `answerTimeoutMs`, a command that gets no answer that long fails ("Command timed out"): a paused or wedged
 * server does not hold a caller for ever (the dashboard's requests).
 */
export function connectCommands(url: string, name: string, tls?: RedisTlsFiles, answerTimeoutMs?: number): RedisClient {
  return connectRedis(url, name, 'commands', tls, answerTimeoutMs);
}

/**
 * A connection for a one-shot command (the CLI): like {@link connectCommands}, but gives up connecting within
 * about 1 s, and each command after `answerTimeoutMs` without an answer ("Command timed out").
 */
export function connectOneShot(url: string, name: string, tls: RedisTlsFiles | undefined, answerTimeoutMs: number): RedisClient {
  return connectRedis(url, name, 'oneshot', tls, answerTimeoutMs);
}

/** A connection for BullMQ's Worker (blocking commands; `maxRetriesPerRequest: null` as BullMQ requires). */
export function connectWorker(url: string, name: string, tls?: RedisTlsFiles): RedisClient {
  return connectRedis(url, name, 'worker', tls);
}

