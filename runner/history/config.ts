/**
 * The history's flock-wide setting: how long finished occurrences, their log lines and the audit log are kept
 * (`--history`). Each replica publishes its value at start (the scripts read it when they write a history entry),
 * so, like the other options, every replica of a flock should use the same.
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { HistoryKeys } from './keys.js';

/** Default history: 30 days. */
export const DEFAULT_HISTORY_MS = 30 * 86_400_000;
/** Shortest history accepted: a day (the 24 h views read it). */
export const MIN_HISTORY_MS = 86_400_000;

/** Publishes `historyMs` for the flock's scripts. */
export async function publishHistoryMs(redis: RedisClient, keys: Keyspace, historyMs: number): Promise<void> {
  await redis.hset(new HistoryKeys(keys).config, 'historyMs', String(historyMs));
}

/** The flock's published history (the default when none is). */
export async function readHistoryMs(redis: RedisClient, keys: Keyspace): Promise<number> {
  return Number(await redis.hget(new HistoryKeys(keys).config, 'historyMs')) || DEFAULT_HISTORY_MS;
}
