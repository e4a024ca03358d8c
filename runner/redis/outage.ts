/**
 * What a replica's log says when a Redis command fails: in words (explain.ts), naming the Redis and since when
 * it has been away, instead of the client's internals ("Stream isn't writeable and enableOfflineQueue options
 * is false"). connect.ts registers every connection here; a failed command's log line asks {@link redisFailure}.
 */
import { explainRedisError, type RedisProblem } from './explain.js';

/** The emitter side of a Redis or Cluster connection that this module listens to. */
interface ConnectionEvents {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

interface ConnectionState {
  /** The URL without its password. */
  redacted: string;
  /** UTC ms since the connection has not been ready, or undefined while it is. */
  downSinceMs?: number;
  /** Its last few `error` events, newest last. */
  errors: string[];
}

const states = new Set<ConnectionState>();
const MAX_ERRORS = 5;
/** What a failure says between a connection's close and the first word from its reconnect attempt. */
export const CLOSED_NOTE = 'the connection to Redis closed; reconnecting';

/** Follows a connection's state for {@link redisFailure}; `redacted` is its URL without the password. */
export function trackConnection(client: ConnectionEvents, redacted: string): void {
  const st: ConnectionState = { redacted, errors: [], downSinceMs: Date.now() };
  states.add(st);
  const error = (err: unknown): void => {
    st.errors.push(err instanceof Error ? err.message : String(err));
    if (st.errors.length > MAX_ERRORS) st.errors.shift();
  };
  client.on('error', error);
  client.on('node error', error);
  client.on('ready', () => {
    st.downSinceMs = undefined;
    st.errors.length = 0;
  });
  client.on('close', () => {
    st.downSinceMs ??= Date.now();
    // Commands fail at once after a close, before the reconnect attempt can say why (refused, timed out …):
    // until it does, say what is known. A cause that arrives later is newer and wins (explain.ts).
    if (st.errors.length === 0) error(CLOSED_NOTE);
  });
  client.on('end', () => states.delete(st)); // closed for good (disconnect, quit): nothing to report
}

/** A failed command for a log line: `text` for the message, `fields` for the JSON. */
export interface RedisFailure {
  /** e.g. "Redis redis://10.0.0.5:6379 unreachable since 2026-12-01T04:01:02.000Z (nothing accepts connections there)". */
  text: string;
  fields: { err: string; hint?: string; redis?: string; unreachableSince?: string };
}

/**
 * Explains `err` (what a Redis command threw, or any other error: then its own first line) for a log line.
 * When a connection is away, the text names it and since when (the earliest-down connection: a replica talks
 * to one Redis, a Cluster's nodes report through one client).
 */
export function redisFailure(err: unknown): RedisFailure {
  const down = [...states].filter((s) => s.downSinceMs !== undefined).sort((a, b) => a.downSinceMs! - b.downSinceMs!)[0];
  const problem: RedisProblem = explainRedisError(err, down?.errors ?? []);
  const fields: RedisFailure['fields'] = { err: problem.message, ...(problem.hint ? { hint: problem.hint } : {}) };
  if (!down) return { text: problem.message, fields };
  const since = new Date(down.downSinceMs!).toISOString();
  return {
    text: `Redis ${down.redacted} unreachable since ${since} (${problem.message})`,
    fields: { ...fields, redis: down.redacted, unreachableSince: since },
  };
}
