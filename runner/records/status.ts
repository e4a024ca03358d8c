/**
 * The state of a flock as `cronflock status` shows it: live replicas (the planning membership), schedules
 * (published definitions, suspensions, next fire time, last result, overdue occurrences) and the backlog.
 *
 * Its cost does not grow with the number of schedules: totals come from HLEN/ZCARD/ZCOUNT, and per-schedule
 * details are read for at most `limit` schedules — the ones asked for, else suspended and overdue ones first,
 * then others in the order Redis hands them out (HSCAN), shown sorted by name. With 100,000 schedules a status
 * costs a few dozen small commands, not 100,000.
 */
import type { Lanes } from '../engine/enqueue.js';
import { definitionSuspension, type PublishedDefinition } from '../engine/definitions.js';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { redisTimeMs } from '../redis/clock.js';
import { compileCron } from '../schedule/cron.js';
import { fireTimeMs, scheduleOfKey } from '../schedule/occurrence.js';
import { isFinalState, toRunRecord, type RunRecord } from './runs.js';

/** One live replica of the planning membership. */
export interface ReplicaStatus {
  name: string;
  /** Its membership lapses this long from now unless it heartbeats again (every tick). */
  expiresInMs: number;
  /** Digest of the definitions it runs: replicas with different digests run different schedule files. */
  definitions: string;
}

/** One schedule as the flock runs it. Times are UTC ms. */
export interface ScheduleStatus {
  name: string;
  cron: string;
  timeZone: string;
  jitterMs: number;
  /** The replica whose definition is published (the one loaded last). */
  publishedBy: string;
  /** Present while suspended: at run time (`cronflock suspend`: since when, by whom, the note given), else by its definition's `suspend: true` (definitionSuspension). */
  suspended?: { sinceMs: number; by: string; note?: string };
  /** Next due time after now and its fire time; null when the cron expression has no later due time. */
  nextDueMs: number | null;
  nextFireMs: number | null;
  /** The latest occurrence that ended (succeeded, failed, missed or skipped), if a record is kept. */
  last?: Pick<RunRecord, 'key' | 'state' | 'reason' | 'error' | 'dueMs' | 'endMs'>;
  /** Redis time of the latest success, flock-wide. */
  lastSuccessMs?: number;
  /** Its planned occurrences whose fire time passed more than `overdueAfterMs` ago and that no replica claimed. */
  overdue: number;
}

/** What {@link readFlockStatus} returns. */
export interface FlockStatus {
  /** Redis time of the reading (ms). */
  nowMs: number;
  replicas: ReplicaStatus[];
  schedules: {
    /** Schedules published by the replicas (their definitions). */
    total: number;
    /** Schedules suspended at run time (`cronflock suspend`, the library's and the API's suspend: `{ns}:suspended`). */
    suspended: number;
    /**
     * Published schedules whose definition says `suspend: true` (a file's, a Schedule's or a stored one; kept by
     * the publish-definitions script in `{ns}:defs:suspended`). A schedule can be both: the two are not added up.
     */
    suspendedByDefinition: number;
    /** The schedules read in detail, sorted by name. */
    shown: ScheduleStatus[];
    /** Names asked for that no replica publishes. */
    unknown: string[];
  };
  backlog: {
    /** Occurrences recorded scheduled and not yet claimed. */
    pending: number;
    /** Of those, how many should have started more than `overdueAfterMs` ago. */
    overdue: number;
    overdueAfterMs: number;
    /** BullMQ's view: jobs ready for a worker (waiting), due later (delayed), held by a worker (active). */
    queue: { waiting: number; delayed: number; active: number };
  };
}

/** Overdue occurrences looked at to name their schedules (the total is counted apart, exactly). */
const OVERDUE_SAMPLE = 1_000;
/** Records per schedule looked at for its last result (newer ones may still be planned or running). */
const LAST_LOOKBACK = 10;


/**
 * Reads the flock's status.
 * @param o.names only these schedules (else a selection of at most `limit`, see the module doc).
 * @param o.limit most schedules read in detail.
 * @param o.overdueAfterMs how long after its fire time an unclaimed occurrence counts as overdue.
 * @throws what the Redis client throws.
 */
export async function readFlockStatus(
  redis: RedisClient,
  keys: Keyspace,
  lanes: Lanes,
  o: { names?: readonly string[]; limit: number; overdueAfterMs: number },
): Promise<FlockStatus> {
  const nowMs = await redisTimeMs(redis, keys); // the node that owns the flock's slot
  const overdueBefore = nowMs - o.overdueAfterMs;
  const totals = await redis
    .pipeline()
    .hlen(keys.definitions)
    .hlen(keys.suspended)
    .zcard(keys.pending)
    .zcount(keys.pending, '-inf', overdueBefore)
    .zrangebyscore(keys.replicas, nowMs + 1, '+inf', 'WITHSCORES')
    .zrangebyscore(keys.pending, '-inf', overdueBefore, 'LIMIT', 0, OVERDUE_SAMPLE)
    .scard(keys.definitionsSuspended)
    .exec();
  const val = <T>(i: number): T => {
    const [err, v] = totals![i]!;
    if (err) throw err;
    return v as T;
  };
  const [total, suspendedCount, pending, overdueCount] = [val<number>(0), val<number>(1), val<number>(2), val<number>(3)];
  const membership = val<string[]>(4);
  const suspendedByDefinition = val<number>(6);
  const overdueBySchedule = new Map<string, number>();
  for (const key of val<string[]>(5)) overdueBySchedule.set(scheduleOfKey(key), (overdueBySchedule.get(scheduleOfKey(key)) ?? 0) + 1);

  const replicaNames: string[] = [];
  const expiries: number[] = [];
  for (let i = 0; i + 1 < membership.length; i += 2) {
    replicaNames.push(membership[i]!);
    expiries.push(Number(membership[i + 1]));
  }
  const digests = replicaNames.length ? await redis.hmget(keys.replicaDigests, ...replicaNames) : [];
  const replicas = replicaNames.map((name, i) => ({ name, expiresInMs: expiries[i]! - nowMs, definitions: (digests[i] ?? '').slice(0, 12) }));

  // Which schedules to read in detail.
  let names: string[];
  if (o.names && o.names.length > 0) names = [...new Set(o.names)];
  else {
    const chosen = new Set<string>();
    await scanFields(redis, keys.suspended, o.limit, (n) => chosen.add(n));
    if (chosen.size < o.limit && suspendedByDefinition > 0) {
      for (const n of await redis.srandmember(keys.definitionsSuspended, o.limit - chosen.size)) chosen.add(n);
    }
    for (const n of overdueBySchedule.keys()) if (chosen.size < o.limit) chosen.add(n);
    if (chosen.size < o.limit) await scanFields(redis, keys.definitions, o.limit - chosen.size, (n) => chosen.add(n));
    names = [...chosen];
  }
  names = names.slice(0, Math.max(o.limit, o.names?.length ?? 0)).sort();

  const shown: ScheduleStatus[] = [];
  const unknown: string[] = [];
  if (names.length > 0) {
    const [defs, suspensions, lastOks] = await Promise.all([
      redis.hmget(keys.definitions, ...names),
      redis.hmget(keys.suspended, ...names),
      redis.hmget(keys.lastSuccess, ...names),
    ]);
    const recent = redis.pipeline();
    for (const n of names) recent.zrevrangebyscore(keys.runs(n), nowMs, '-inf', 'LIMIT', 0, LAST_LOOKBACK);
    const recentKeys = ((await recent.exec()) ?? []).map(([err, v]) => {
      if (err) throw err;
      return v as string[];
    });
    const records = redis.pipeline();
    for (const ks of recentKeys) for (const k of ks) records.hgetall(keys.occurrence(k));
    const flat = ((await records.exec()) ?? []).map(([err, v]) => {
      if (err) throw err;
      return toRunRecord(v as Record<string, string>);
    });
    let at = 0;
    names.forEach((name, i) => {
      const recs = flat.slice(at, at + recentKeys[i]!.length);
      at += recentKeys[i]!.length;
      const raw = defs[i];
      if (!raw) {
        unknown.push(name);
        return;
      }
      const def = JSON.parse(raw) as PublishedDefinition;
      const s: ScheduleStatus = {
        name,
        cron: def.cron,
        timeZone: def.timeZone,
        jitterMs: def.jitterMs,
        publishedBy: def.replica,
        nextDueMs: null,
        nextFireMs: null,
        overdue: overdueBySchedule.get(name) ?? 0,
      };
      try {
        const next = compileCron(def.cron, def.timeZone, { hashSeed: name }).next(nowMs);
        if (next !== null) {
          s.nextDueMs = next;
          s.nextFireMs = fireTimeMs(name, next, def.jitterMs);
        }
      } catch {
        /* a definition this version cannot compile: leave the next fire time empty */
      }
      // One truth with the API: suspended at run time, else by its definition's own suspend: true.
      const byDefinition = definitionSuspension(def);
      if (suspensions[i]) s.suspended = JSON.parse(suspensions[i]!) as NonNullable<ScheduleStatus['suspended']>;
      else if (byDefinition) s.suspended = byDefinition;
      if (lastOks[i]) s.lastSuccessMs = Number(lastOks[i]);
      const last = recs.find((r): r is RunRecord => r !== null && isFinalState(r.state));
      if (last) {
        s.last = { key: last.key, state: last.state, dueMs: last.dueMs };
        for (const k of ['reason', 'error', 'endMs'] as const) if (last[k] !== undefined) (s.last as Record<string, unknown>)[k] = last[k];
      }
      shown.push(s);
    });
  }

  // Both lanes (live and backlog) together: what the workers of the flock have in hand or ahead.
  const counts: Record<string, number> = {};
  for (const q of [lanes.live, lanes.backlog]) {
    for (const [state, n] of Object.entries(await q.getJobCounts('wait', 'prioritized', 'delayed', 'active'))) counts[state] = (counts[state] ?? 0) + n;
  }
  return {
    nowMs,
    replicas,
    schedules: { total, suspended: suspendedCount, suspendedByDefinition, shown, unknown },
    backlog: {
      pending,
      overdue: overdueCount,
      overdueAfterMs: o.overdueAfterMs,
      queue: { waiting: (counts.wait ?? 0) + (counts.prioritized ?? 0), delayed: counts.delayed ?? 0, active: counts.active ?? 0 },
    },
  };
}

/** Calls `each` with up to `max` field names of a hash, a page at a time (HSCAN: never the whole hash at once). */
async function scanFields(redis: RedisClient, key: string, max: number, each: (field: string) => void): Promise<void> {
  let cursor = '0';
  let seen = 0;
  do {
    const [next, flat] = await redis.hscan(key, cursor, 'COUNT', Math.min(Math.max(max, 10), 1000));
    for (let i = 0; i < flat.length && seen < max; i += 2, seen++) each(flat[i]!);
    cursor = next;
  } while (cursor !== '0' && seen < max);
}
