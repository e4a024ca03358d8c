/**
 * Reading run records: what happened to each occurrence (see the words table of the design notes).
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';

/**
 * States of an occurrence. `scheduled`, `running` and `retrying` (a failed attempt waits for its retry) are open;
 * the others are final. The engine's policies and deadlines never record an occurrence that has started (an
 * attempt was claimed) `missed` or `skipped`: it ends `succeeded` or `failed`.
 */
export type RunState = OpenState | FinalState;

/** The open states: the occurrence is still to run, running, or waiting for a retry. */
export const OPEN_STATES = ['scheduled', 'running', 'retrying'] as const;
export type OpenState = (typeof OPEN_STATES)[number];

/** The final states, each recorded with its reason (the scripts' `isFinal`, runner/redis/lua/includes/record.lua). */
export const FINAL_STATES = ['succeeded', 'failed', 'missed', 'skipped'] as const;
export type FinalState = (typeof FINAL_STATES)[number];

/** Whether `state` (a run record's `state` field) is final. */
export function isFinalState(state: string | undefined): state is FinalState {
  return (FINAL_STATES as readonly (string | undefined)[]).includes(state);
}

/**
 * Where an occurrence comes from: the planner (`schedule`), `cronflock trigger` (`manual`), `cronflock backfill`
 * (`backfill`), or the run after `cronflock resume` (`resume`). The run record's `origin` field.
 */
export type Origin = 'schedule' | 'manual' | 'backfill' | 'resume';

/** The record of one occurrence. Times are UTC ms; optional fields are absent until they apply. */
export interface RunRecord {
  key: string;
  schedule: string;
  state: RunState;
  /** Why it was missed, skipped or failed. */
  reason?: string;
  dueMs: number;
  fireMs: number;
  manual: boolean;
  /** Fencing token of the latest claim (0: never claimed). */
  fencingToken: number;
  /** Attempts started (claims). */
  attempt: number;
  /** Re-claims after a claimant's lease lapsed. */
  stalls: number;
  /** Claims given up on purpose (SIGTERM hand-over). */
  handovers: number;
  /** Completions refused because their fencing token was stale. */
  refused: number;
  /** Replica of the latest claim (or that closed it without a run). */
  replica?: string;
  /** When it was recorded (Redis ms) and by whom (replica, or `user@host` for trigger/backfill from the CLI). */
  plannedAt?: number;
  plannedBy?: string;
  /** schedule, manual (trigger), backfill or resume. */
  origin?: Origin;
  firstStartMs?: number;
  startMs?: number;
  /** First start minus fire time. */
  latenessMs?: number;
  endMs?: number;
  error?: string;
  result?: string;
  /** What the start waited for and how long: "group cluster-prod 1.2 s", "rate limit of <schedule> 0.4 s" (redis/lua/includes/gates.lua). */
  waited?: string;
}

const num = (v: string | undefined): number | undefined => (v === undefined || v === '' ? undefined : Number(v));

/** Converts a run-record hash to a {@link RunRecord}; null for an empty hash (expired). */
export function toRunRecord(h: Record<string, string>): RunRecord | null {
  if (!h.key) return null;
  const r: RunRecord = {
    key: h.key,
    schedule: h.schedule ?? '',
    state: h.state as RunState,
    dueMs: Number(h.dueMs),
    fireMs: Number(h.fireMs),
    manual: h.manual === '1',
    fencingToken: Number(h.token ?? 0),
    attempt: Number(h.attempt ?? 0),
    stalls: Number(h.stalls ?? 0),
    handovers: Number(h.handovers ?? 0),
    refused: Number(h.refused ?? 0),
  };
  const opt: [keyof RunRecord, string | undefined][] = [
    ['reason', h.reason],
    ['replica', h.replica],
    ['plannedBy', h.plannedBy],
    ['origin', h.origin],
    ['error', h.error],
    ['result', h.result],
    ['waited', h.waited],
  ];
  for (const [k, v] of opt) if (v) (r as unknown as Record<string, unknown>)[k] = v;
  for (const k of ['plannedAt', 'firstStartMs', 'startMs', 'latenessMs', 'endMs'] as const) {
    const v = num(h[k]);
    if (v !== undefined) r[k] = v;
  }
  return r;
}

/**
 * Lists run records, newest due time first.
 * @param o.schedule only this schedule (default: all schedules with records).
 * @param o.limit at most this many per schedule (default 100).
 * @param o.fromMs / o.toMs due-time bounds, inclusive (UTC ms).
 */
export async function listRuns(
  redis: RedisClient,
  keys: Keyspace,
  o: { schedule?: string; limit?: number; fromMs?: number; toMs?: number } = {},
): Promise<RunRecord[]> {
  const names = o.schedule ? [o.schedule] : (await redis.smembers(keys.schedules)).sort();
  const limit = o.limit ?? 100;
  const out: RunRecord[] = [];
  for (const name of names) {
    const occ = await redis.zrevrangebyscore(
      keys.runs(name),
      o.toMs ?? '+inf',
      o.fromMs ?? '-inf',
      'LIMIT',
      0,
      limit,
    );
    if (occ.length === 0) continue;
    const pipe = redis.pipeline();
    for (const k of occ) pipe.hgetall(keys.occurrence(k));
    const res = (await pipe.exec()) ?? [];
    for (const [err, h] of res) {
      if (err) throw err;
      const r = toRunRecord(h as Record<string, string>);
      if (r) out.push(r);
    }
  }
  return out.sort((a, b) => b.dueMs - a.dueMs || a.schedule.localeCompare(b.schedule));
}
