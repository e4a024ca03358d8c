/**
 * Redis failures in words for a person: what went wrong and what to try, without the client's internals
 * ("Reached the max retries per request limit … maxRetriesPerRequest", "Stream isn't writeable and
 * enableOfflineQueue options is false"). Used by every CLI command and by a replica waiting for Redis.
 */

/** A failure explained: one line saying what is wrong, and a hint saying what to try (or none). */
export interface RedisProblem {
  message: string;
  hint?: string;
}

/**
 * How the hints name the settings a user can change: the CLI's flags by default; the library's options
 * (runner/library/) name `redis` and `redisTimeoutMs` instead.
 */
export interface RedisSettingNames {
  /** Where the Redis URL is given. */
  url: string;
  /** Where the answer timeout is given. */
  timeout: string;
  /** Where the CA of a TLS server is given. */
  tlsCa: string;
}

/** The CLI's names: its flags and their environment variables. */
export const CLI_SETTING_NAMES: RedisSettingNames = {
  url: '--redis / REDIS_URL',
  timeout: '--redis-timeout (CRONFLOCK_REDIS_TIMEOUT)',
  tlsCa: '--redis-tls-ca <file> (REDIS_TLS_CA_FILE)',
};

/** ioredis's own words for "the command was not sent because the connection is not usable". */
const CLIENT_INTERNALS = [
  /max retries per request/i,
  /maxRetriesPerRequest/,
  /enableOfflineQueue/,
  /Stream isn't writeable/i,
  /^Connection is closed\.?$/i,
  /^Connection is in (subscriber|monitoring) mode/i,
];

/**
 * Known causes, most specific first: each is looked for in the command's error and the connection's errors
 * before the next is (a Cluster's "Failed to refresh slots cache" hides its nodes' WRONGPASS).
 */
const CAUSES: { test: RegExp; problem: (m: string, n: RedisSettingNames) => RedisProblem }[] = [
  {
    test: /^OOM /,
    problem: () => ({
      message: "Redis is out of memory (it refuses writes beyond its 'maxmemory')",
      hint: 'raise maxmemory, or lower --retention; keep maxmemory-policy noeviction',
    }),
  },
  {
    test: /WRONGPASS/,
    problem: () => ({
      message: 'Redis refused the user name or password (WRONGPASS)',
      hint: 'check the password in the URL (redis://user:password@host:port); percent-encode @ / : in it',
    }),
  },
  {
    test: /NOAUTH/,
    problem: () => ({
      message: 'Redis needs a password (NOAUTH)',
      hint: 'put it in the URL: redis://:password@host:port (or redis://user:password@… for an ACL user)',
    }),
  },
  {
    test: /TLS handshake failed/,
    problem: (m) => ({ message: m }),
  },
  {
    test: /certificate|CERT_|self[- ]signed|unable to (get|verify)|Hostname\/IP does not match/i,
    problem: (m, n) => ({
      message: `the Redis server's TLS certificate was not accepted: ${firstLine(m)}`,
      hint: `give the CA that signed it with ${n.tlsCa}`,
    }),
  },
  {
    test: /ECONNREFUSED/,
    problem: (_, n) => ({
      message: 'nothing accepts connections there (connection refused)',
      hint: `is Redis running, and are the host and port in ${n.url} right?`,
    }),
  },
  {
    test: /ENOTFOUND|EAI_AGAIN/,
    problem: (_, n) => ({ message: 'the host name does not resolve', hint: `check the host in ${n.url}` }),
  },
  {
    test: /ETIMEDOUT|timed? ?out|no answer within/i,
    problem: () => ({
      message: 'no answer (timed out)',
      hint: 'check the host, the port and any firewall on the way; with rediss://, is the server TLS?',
    }),
  },
  {
    test: /ECONNRESET|EPIPE|socket hang up/i,
    problem: () => ({
      message: 'the server closed the connection',
      hint: 'if the server speaks TLS, use rediss://; if it does not, use redis://',
    }),
  },
  {
    test: /All sentinels are unreachable/i,
    problem: () => ({ message: 'none of the sentinels answers', hint: 'check the sentinel hosts and ports in the URL' }),
  },
  {
    test: /Failed to refresh slots cache|None of startup nodes is available/i,
    problem: () => ({ message: 'none of the cluster nodes answers', hint: 'check the seed nodes in the URL' }),
  },
];

const firstLine = (s: string): string => s.split('\n')[0]!.trim();

/**
 * Whether `err` is the Redis client's own failure (the command was not sent, or got no answer within the
 * connection's command timeout: "Command timed out") rather than an answer of the server (a ReplyError such as
 * WRONGTYPE) or a fault elsewhere: then Redis is away, and {@link explainRedisError} says why in words.
 */
export function isRedisUnavailable(err: unknown): boolean {
  const own = firstLine(err instanceof Error ? err.message : String(err));
  return /^Command timed out/.test(own) || CLIENT_INTERNALS.some((re) => re.test(own));
}

/**
 * Explains a failed Redis command.
 * @param err what the command threw.
 * @param connectionErrors the connection's recent `error` events (they hold the cause when the command only
 *   says that the connection was not usable), newest last.
 * @param names how the hints name the settings (default: the CLI's flags).
 */
export function explainRedisError(err: unknown, connectionErrors: readonly string[] = [], names: RedisSettingNames = CLI_SETTING_NAMES): RedisProblem {
  const own = firstLine(err instanceof Error ? err.message : String(err));
  const internal = own === '' || CLIENT_INTERNALS.some((re) => re.test(own));
  // Prefer what the server or the network said; the command's own message only when it says more.
  const candidates = internal ? [...connectionErrors].reverse() : [own, ...[...connectionErrors].reverse()];
  for (const c of CAUSES) {
    const text = candidates.find((t) => c.test.test(t));
    if (text !== undefined) return c.problem(text, names);
  }
  if (!internal) return { message: own };
  const last = connectionErrors.at(-1);
  if (last && !CLIENT_INTERNALS.some((re) => re.test(last))) return { message: firstLine(last) };
  return { message: 'Redis is not reachable', hint: `check ${names.url}, and that Redis runs` };
}

/**
 * A server that took the connection (TCP, and TLS when used) but answered nothing within `timeoutS` seconds:
 * paused (SIGSTOP, a debugger), wedged by a long script or command, or not Redis at all.
 */
export function noAnswerProblem(timeoutS: number, names: RedisSettingNames = CLI_SETTING_NAMES): RedisProblem {
  return {
    message: `Redis accepted the connection but did not answer within ${timeoutS} s`,
    hint:
      'is the server paused, overloaded or busy with a long command (redis-cli --latency, SLOWLOG GET), and is it Redis ' +
      `that listens on that port? If it is only slow, raise ${names.timeout}`,
  };
}

/** `message` and, when there is one, `hint: …` on the next line. */
export function formatRedisProblem(p: RedisProblem): string {
  return p.hint ? `${p.message}\n  hint: ${p.hint}` : p.message;
}
