/**
 * Reading the backfill backlog (runner/redis/lua/backfill-*.lua): how many backfill occurrences of each
 * schedule wait for admission, and how many are admitted and not yet final. For metrics, `/readyz`, and what
 * `suspend` and `resume` report.
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { scheduleOfKey } from '../schedule/occurrence.js';
import { OPEN_STATES } from './runs.js';

/** Backfill occurrences of one schedule. */
export interface BackfillCount {
  /** Waiting for admission (including those paused by a suspension). */
  waiting: number;
  /** Admitted: queued on the backlog lane, running, or waiting for a retry. */
  admitted: number;
}


/**
 * Backfill occurrences per schedule that has any (all schedules, or only `schedule`).
 * @returns a map schedule → counts; schedules without backfill are absent.
 */
export async function backfillCounts(redis: RedisClient, keys: Keyspace, schedule?: string): Promise<Map<string, BackfillCount>> {
  const names = schedule ? [schedule] : await redis.zrange(keys.backfillSchedules, 0, -1);
  const admittedKeys = (await redis.zrange(keys.backfillAdmitted, 0, -1)).filter((k) => !schedule || scheduleOfKey(k) === schedule);
  const pipe = redis.pipeline();
  for (const n of names) pipe.zcard(keys.backfillQueue(n));
  // The admitted set is cleaned up at the next admission: count only those still open and admitted.
  for (const k of admittedKeys) pipe.hmget(keys.occurrence(k), 'state', 'admitted');
  const res = (await pipe.exec()) ?? [];
  const out = new Map<string, BackfillCount>();
  const at = (n: string): BackfillCount => {
    let c = out.get(n);
    if (!c) out.set(n, (c = { waiting: 0, admitted: 0 }));
    return c;
  };
  names.forEach((n, i) => {
    const [err, waiting] = res[i]!;
    if (err) throw err;
    if (Number(waiting) > 0) at(n).waiting = Number(waiting);
  });
  admittedKeys.forEach((k, j) => {
    const [err, rec] = res[names.length + j]!;
    if (err) throw err;
    const [state, admitted] = rec as [string | null, string | null];
    if (state && (OPEN_STATES as readonly string[]).includes(state) && admitted === '1') at(scheduleOfKey(k)).admitted++;
  });
  return out;
}

/** The sum of {@link backfillCounts} over schedules. */
export function totalBackfill(counts: ReadonlyMap<string, BackfillCount>): BackfillCount {
  const t = { waiting: 0, admitted: 0 };
  for (const c of counts.values()) {
    t.waiting += c.waiting;
    t.admitted += c.admitted;
  }
  return t;
}
