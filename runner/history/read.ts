/**
 * Reading what happened to occurrences: the run record while it is kept (`--retention`, with the claim state),
 * else the compact history entry (`--history`). An open occurrence exists only as a record; a finished one has
 * both for a while, and the history entry then adds what the record does not keep (every attempt).
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { parseOccurrenceKey } from '../schedule/occurrence.js';
import { toRunRecord, type RunRecord } from '../records/runs.js';
import { parseResult, unpackAttempts, unpackEntry, type PackedAttempt } from './entry.js';
import { HistoryKeys } from './keys.js';
import type { OccurrenceView } from './model.js';

const OPEN = new Set(['scheduled', 'running', 'retrying']);

/** An occurrence view from a run record and its open attempt list. */
/**
 * The packed attempts of an open occurrence: its record's `att` field (JSON arrays, comma-separated: what the claim
 * script writes, lua/includes/history.lua `attemptsWith`), or, for a record claimed by an older version, its LIST
 * `{ns}:att:<key>` (`list`).
 */
export function attemptsOf(raw: Record<string, string>, list: readonly string[]): string[] {
  if (!raw.att) return [...list];
  return (JSON.parse(`[${raw.att}]`) as unknown[]).map((a) => JSON.stringify(a));
}

export function fromRecord(r: RunRecord, packedAttempts: readonly string[]): OccurrenceView {
  const attempts = unpackAttempts(
    packedAttempts.map((a) => JSON.parse(a) as PackedAttempt),
    r.dueMs,
    r.fireMs,
  );
  const v: OccurrenceView = {
    key: r.key,
    schedule: r.schedule,
    origin: (r.origin as OccurrenceView['origin'] | undefined) ?? (r.manual ? 'manual' : 'schedule'),
    state: r.state,
    dueMs: r.dueMs,
    fireMs: r.fireMs,
    refused: r.refused,
    attempts,
    from: 'record',
  };
  if (r.reason) v.reason = r.reason;
  if (r.firstStartMs !== undefined) v.startMs = r.firstStartMs;
  if (r.endMs !== undefined && !OPEN.has(r.state)) v.endMs = r.endMs;
  if (r.latenessMs !== undefined) v.latenessMs = r.latenessMs;
  if (r.error) v.error = r.error;
  if (r.result) v.result = parseResult(r.result);
  if (attempts.length === 0 && r.replica) v.replica = r.replica;
  if (r.origin && r.origin !== 'schedule' && r.plannedBy) v.plannedBy = r.plannedBy;
  return v;
}

/** The history entries of `schedule` due at exactly `dueMs` (usually one; tagged occurrences share a due time). */
async function entriesAt(redis: RedisClient, hk: HistoryKeys, schedule: string, dueMs: number): Promise<OccurrenceView[]> {
  const members = await redis.zrangebyscore(hk.history(schedule), dueMs, dueMs);
  return members.map((m) => unpackEntry(schedule, dueMs, m)).filter((v): v is OccurrenceView => v !== null);
}

/**
 * One occurrence by key: its record (with the attempts of the history entry once final), or its history entry.
 * @returns null when neither is kept (unknown key, or older than the history).
 */
export async function readOccurrence(redis: RedisClient, keys: Keyspace, key: string): Promise<OccurrenceView | null> {
  const parsed = parseOccurrenceKey(key);
  if (!parsed) return null;
  const hk = new HistoryKeys(keys);
  const [raw, list] = await Promise.all([redis.hgetall(keys.occurrence(key)), redis.lrange(hk.attempts(key), 0, -1)]);
  const rec = toRunRecord(raw);
  const attempts = attemptsOf(raw, list);
  const fromHistory = (await entriesAt(redis, hk, parsed.schedule, parsed.dueMs)).find((v) => v.key === key) ?? null;
  if (!rec) return fromHistory;
  const v = fromRecord(rec, attempts);
  if (fromHistory && v.attempts.length === 0 && fromHistory.attempts.length > 0) {
    v.attempts = fromHistory.attempts;
    delete v.replica; // named only for an occurrence closed without a run
  }
  return v;
}

/** Result of {@link readOccurrences}. */
export interface OccurrencePage {
  items: OccurrenceView[];
  /** True when the range held more than `limit` occurrences: the newest `limit` are returned. */
  truncated: boolean;
}

/**
 * The occurrences of `schedule` due in `[fromMs, toMs]`, newest first: finished ones from the history, open ones
 * (and finished ones not in the history) from the run records.
 * @param limit most occurrences returned (the newest).
 */
export async function readOccurrences(
  redis: RedisClient,
  keys: Keyspace,
  schedule: string,
  fromMs: number,
  toMs: number,
  limit: number,
): Promise<OccurrencePage> {
  const hk = new HistoryKeys(keys);
  const [hist, indexed] = await Promise.all([
    redis.zrevrangebyscore(hk.history(schedule), toMs, fromMs, 'WITHSCORES', 'LIMIT', 0, limit + 1),
    redis.zrevrangebyscore(keys.runs(schedule), toMs, fromMs, 'LIMIT', 0, limit + 1),
  ]);
  const byKey = new Map<string, OccurrenceView>();
  for (let i = 0; i + 1 < hist.length; i += 2) {
    const v = unpackEntry(schedule, Number(hist[i + 1]), hist[i]!);
    if (v) byKey.set(v.key, v);
  }
  const missing = indexed.filter((k) => !byKey.has(k));
  if (missing.length > 0) {
    const pipe = redis.pipeline();
    for (const k of missing) pipe.hgetall(keys.occurrence(k)).lrange(hk.attempts(k), 0, -1);
    const res = (await pipe.exec()) ?? [];
    for (let i = 0; i < missing.length; i++) {
      const [e1, h] = res[2 * i]!;
      const [e2, a] = res[2 * i + 1]!;
      if (e1) throw e1;
      if (e2) throw e2;
      const rec = toRunRecord(h as Record<string, string>);
      if (rec) byKey.set(rec.key, fromRecord(rec, attemptsOf(h as Record<string, string>, a as string[])));
    }
  }
  const all = [...byKey.values()].sort((a, b) => b.dueMs - a.dueMs || a.key.localeCompare(b.key));
  return { items: all.slice(0, limit), truncated: all.length > limit || hist.length / 2 > limit || indexed.length > limit };
}
