/**
 * What each replica says about itself for the flock page: version, host, when it started, its host clock's skew
 * against Redis and its runs in hand. Written by each replica every {@link INFO_EVERY_MS} into one hash
 * (`{ns}:replicas:info`); read beside the planning membership, which alone decides who is live.
 */
import { hostname } from 'node:os';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';

/** How often a replica refreshes its entry. */
export const INFO_EVERY_MS = 5_000;
/** Entries not refreshed for this long are removed (their replica is gone). */
const STALE_MS = 10 * 60_000;

/** One replica's entry. */
export interface ReplicaInfo {
  version: string;
  host: string;
  pid: number;
  startedAtMs: number;
  /** Host clock minus Redis clock, ms. */
  skewMs: number;
  activeRuns: number;
  /** Redis time of this entry (estimated). */
  atMs: number;
}

/** What a replica exposes to {@link startReplicaInfo}. */
export interface InfoSource {
  name: string;
  version: string;
  /** Redis time now (estimate), ms. */
  nowMs(): number;
  skewMs(): number;
  activeRuns(): number;
}

/**
 * Writes the replica's entry now and every {@link INFO_EVERY_MS}, and drops stale entries of others.
 * @returns stop: ends the loop and removes the entry.
 */
export function startReplicaInfo(redis: RedisClient, keys: Keyspace, src: InfoSource): () => Promise<void> {
  const startedAtMs = src.nowMs();
  const key = keys.replicaInfo;
  let timer: NodeJS.Timeout | undefined;
  const write = async (): Promise<void> => {
    const info: ReplicaInfo = {
      version: src.version,
      host: hostname(),
      pid: process.pid,
      startedAtMs,
      skewMs: Math.round(src.skewMs()),
      activeRuns: src.activeRuns(),
      atMs: Math.round(src.nowMs()),
    };
    await redis.hset(key, src.name, JSON.stringify(info));
    for (const [name, raw] of Object.entries(await redis.hgetall(key))) {
      if (info.atMs - (JSON.parse(raw) as ReplicaInfo).atMs > STALE_MS) await redis.hdel(key, name);
    }
  };
  const loop = (): void => {
    timer = setTimeout(() => void write().catch(() => undefined).finally(loop), INFO_EVERY_MS);
    timer.unref();
  };
  void write().catch(() => undefined);
  loop();
  return async () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    await redis.hdel(key, src.name).catch(() => undefined);
  };
}
