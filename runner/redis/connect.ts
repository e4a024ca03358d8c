/**
 * Redis connections of a replica. Commands fail fast during an outage (the planner and renewals retry on
 * their own schedule); BullMQ's worker gets a connection that waits instead, as BullMQ requires.
 */
import { Redis, type RedisOptions } from 'ioredis';

/**
 * Reconnect backoff: 50 ms doubling up to 1 s, forever. Short, because a claim's lease keeps running on the
 * Redis clock while we are away: reconnecting fast after a Redis restart is what lets a run in flight keep it.
 */
const retryStrategy = (times: number): number => Math.min(50 * 2 ** Math.min(times, 5), 1_000);

/**
 * A connection for cronflock's own commands and BullMQ's Queue. Auto-pipelining sends the commands issued in
 * one event-loop tick in one write: hundreds of claims and completions per second otherwise cost one socket
 * write (and one Redis read) each, which profiling showed to be a replica's largest CPU cost.
 */
export function connectCommands(url: string, name: string): Redis {
  return new Redis(url, {
    connectionName: name,
    maxRetriesPerRequest: 1,
    retryStrategy,
    enableOfflineQueue: true,
    enableAutoPipelining: true,
  } satisfies RedisOptions);
}

/** A connection for BullMQ's Worker (blocking commands; `maxRetriesPerRequest: null` as BullMQ requires). */
export function connectWorker(url: string, name: string): Redis {
  return new Redis(url, { connectionName: name, maxRetriesPerRequest: null, retryStrategy } satisfies RedisOptions);
}

/** Redacts the password of a redis:// URL for logs. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '[unparseable Redis URL]';
  }
}
