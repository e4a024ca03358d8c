/**
 * The flock as the flock page shows it: live replicas (the planning membership) with what each says about itself
 * (replica-info.ts) and its share of the planning, and the Redis server's health.
 */
import { OwnershipView } from '../engine/ownership.js';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import type { ReplicaInfo } from './replica-info.js';
import type { ScheduleIndex } from './schedule-index.js';
import type { z } from 'zod';
import type { flockSchema } from './schemas.js';
import { redisTimeMs } from '../redis/clock.js';

export type FlockView = z.infer<typeof flockSchema>;

/** Fields of `INFO` as a map. */
function parseInfo(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) m.set(line.slice(0, i), line.slice(i + 1));
  }
  return m;
}

/**
 * Reads the flock's state. Planning shares are computed as the replicas compute them (rendezvous hashing over
 * the live members that agree on the definitions; engine/ownership.ts), over the published schedule names.
 * @throws what the Redis client throws.
 */
export async function readFlock(redis: RedisClient, keys: Keyspace, index: ScheduleIndex): Promise<FlockView> {
  const nowMs = await redisTimeMs(redis, keys);
  const [members, info, server, memory, replication, clients, policy] = await Promise.all([
    redis.zrangebyscore(keys.replicas, nowMs + 1, '+inf', 'WITHSCORES'),
    redis.hgetall(keys.replicaInfo),
    redis.info('server'),
    redis.info('memory'),
    redis.info('replication'),
    redis.info('clients'),
    redis.config('GET', 'maxmemory-policy').catch(() => [] as string[]) as Promise<string[]>,
  ]);
  const live: { replica: string; expiry: number }[] = [];
  for (let i = 0; i + 1 < members.length; i += 2) live.push({ replica: members[i]!, expiry: Number(members[i + 1]) });
  const digests = live.length ? await redis.hmget(keys.replicaDigests, ...live.map((m) => m.replica)) : [];
  const m = live.map((x, i) => ({ replica: x.replica, digest: digests[i] ?? '' }));
  const agree = m.length > 0 && m.every((x) => x.digest === m[0]!.digest);
  const plans = new Map<string, number>();
  const names = index.rows().map((r) => r.name);
  if (agree) {
    const views = m.map((x) => new OwnershipView(m, x.replica, x.digest));
    for (const n of names) {
      const owner = views.find((v) => v.owns(n));
      if (owner) plans.set(owner.self, (plans.get(owner.self) ?? 0) + 1);
    }
  }
  const s = parseInfo(server);
  const mem = parseInfo(memory);
  const rep = parseInfo(replication);
  const cl = parseInfo(clients);
  return {
    nowMs,
    planning: m.length === 0 ? 'none' : agree ? 'divided' : 'each-plans-all',
    schedules: names.length,
    replicas: live.map((x, i) => {
      const ri = info[x.replica] ? (JSON.parse(info[x.replica]!) as ReplicaInfo) : undefined;
      return {
        name: x.replica,
        definitions: (digests[i] ?? '').slice(0, 12),
        version: ri?.version ?? null,
        host: ri?.host ?? null,
        startedAtMs: ri?.startedAtMs ?? null,
        clockSkewMs: ri?.skewMs ?? null,
        activeRuns: ri?.activeRuns ?? null,
        membershipExpiresInMs: x.expiry - nowMs,
        plans: agree ? (plans.get(x.replica) ?? 0) : names.length,
      };
    }),
    redis: {
      version: s.get('redis_version') ?? '?',
      role: rep.get('role') ?? '?',
      usedMemoryBytes: Number(mem.get('used_memory') ?? 0),
      maxMemoryBytes: Number(mem.get('maxmemory') ?? 0),
      maxMemoryPolicy: policy[1] ?? mem.get('maxmemory_policy') ?? '?',
      connectedClients: Number(cl.get('connected_clients') ?? 0),
      timeMs: nowMs,
      uptimeSeconds: Number(s.get('uptime_in_seconds') ?? 0),
    },
  };
}
