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
const CAUSES: { test: RegExp; problem: (m: string) => RedisProblem }[] = [
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
    problem: (m) => ({
      message: `the Redis server's TLS certificate was not accepted: ${firstLine(m)}`,
      hint: 'give the CA that signed it with --redis-tls-ca <file> (REDIS_TLS_CA_FILE)',
    }),
  },
  {
    test: /ECONNREFUSED/,
    problem: () => ({
      message: 'nothing accepts connections there (connection refused)',
      hint: 'is Redis running, and are the host and port in --redis / REDIS_URL right?',
    }),
  },
  {
    test: /ENOTFOUND|EAI_AGAIN/,
    problem: () => ({ message: 'the host name does not resolve', hint: 'check the host in --redis / REDIS_URL' }),
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
 */
export function explainRedisError(err: unknown, connectionErrors: readonly string[] = []): RedisProblem {
  const own = firstLine(err instanceof Error ? err.message : String(err));
  const internal = own === '' || CLIENT_INTERNALS.some((re) => re.test(own));
  // Prefer what the server or the network said; the command's own message only when it says more.
  const candidates = internal ? [...connectionErrors].reverse() : [own, ...[...connectionErrors].reverse()];
  for (const c of CAUSES) {
    const text = candidates.find((t) => c.test.test(t));
    if (text !== undefined) return c.problem(text);
  }
  if (!internal) return { message: own };
  const last = connectionErrors.at(-1);
  if (last && !CLIENT_INTERNALS.some((re) => re.test(last))) return { message: firstLine(last) };
  return { message: 'Redis is not reachable', hint: 'check --redis / REDIS_URL, and that Redis runs' };
}

/**
 * A server that took the connection (TCP, and TLS when used) but answered nothing within `timeoutS` seconds:
 * paused (SIGSTOP, a debugger), wedged by a long script or command, or not Redis at all.
 */
export function noAnswerProblem(timeoutS: number): RedisProblem {
  return {
    message: `Redis accepted the connection but did not answer within ${timeoutS} s`,
    hint:
      'is the server paused, overloaded or busy with a long command (redis-cli --latency, SLOWLOG GET), and is it Redis ' +
      'that listens on that port? If it is only slow, raise --redis-timeout (CRONFLOCK_REDIS_TIMEOUT)',
  };
}

/** `message` and, when there is one, `hint: …` on the next line. */
export function formatRedisProblem(p: RedisProblem): string {
  return p.hint ? `${p.message}\n  hint: ${p.hint}` : p.message;
}
