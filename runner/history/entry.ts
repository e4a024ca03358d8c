/**
 * The packed history entry `recordHistory` (runner/redis/lua/includes/history.lua) writes for each finished occurrence, and
 * the attempt entries `attemptsWith` makes at each claim (record field `att`). Packed as JSON arrays with times relative to the due
 * time (the ZSET score), so that an entry costs about 100 bytes plus Redis' per-member overhead.
 *
 * Entry: `[key after '@', state code, reason, fire − due, end − due, [attempt…], error, result, replica,
 * refused, '<origin> <plannedBy>' | '']`; attempt: `[fencing token, replica, start − due, why]`.
 */
import type { Attempt, OccurrenceView } from './model.js';

const STATES = { s: 'succeeded', f: 'failed', m: 'missed', k: 'skipped' } as const;

/** A packed attempt as the claim script writes it. */
export type PackedAttempt = [number, string, number, Attempt['why']];

/** Unpacks attempts (relative to `dueMs`), numbering them in claim order. */
export function unpackAttempts(packed: readonly PackedAttempt[], dueMs: number, fireMs: number): Attempt[] {
  return packed.map(([token, replica, startDelta, why], i) => ({
    attempt: i + 1,
    fencingToken: token,
    replica,
    startMs: dueMs + startDelta,
    latenessMs: dueMs + startDelta - fireMs,
    why,
  }));
}

/** The origin of an occurrence from its key's tag, or what the entry says. */
function originOf(key: string, asked: string): OccurrenceView['origin'] {
  const o = asked.split(' ', 1)[0];
  if (o === 'manual' || o === 'backfill' || o === 'resume') return o;
  return key.endsWith('~manual') ? 'manual' : key.endsWith('~resume') ? 'resume' : 'schedule';
}

/**
 * Decodes one history entry of `schedule` due at `dueMs`.
 * @returns null for a member that is not an entry (never written by this version).
 */
export function unpackEntry(schedule: string, dueMs: number, member: string): OccurrenceView | null {
  let e: unknown[];
  try {
    e = JSON.parse(member) as unknown[];
  } catch {
    return null;
  }
  if (!Array.isArray(e) || e.length < 11) return null;
  const [suffix, code, reason, fireDelta, endDelta, attempts, error, result, replica, refused, asked] = e as [
    string, keyof typeof STATES, string, number, number, PackedAttempt[], string, string, string, number, string,
  ];
  const key = `${schedule}@${suffix}`;
  const fireMs = dueMs + fireDelta;
  const list = unpackAttempts(attempts, dueMs, fireMs);
  const v: OccurrenceView = {
    key,
    schedule,
    origin: originOf(key, asked),
    state: STATES[code] ?? 'failed',
    dueMs,
    fireMs,
    endMs: dueMs + endDelta,
    refused,
    attempts: list,
    from: 'history',
  };
  if (reason) v.reason = reason;
  if (list.length > 0) {
    v.startMs = list[0]!.startMs;
    v.latenessMs = list[0]!.latenessMs;
  }
  if (error) v.error = error;
  if (result) v.result = parseResult(result);
  if (replica) v.replica = replica;
  const by = asked.indexOf(' ');
  if (by > 0 && asked.length > by + 1) v.plannedBy = asked.slice(by + 1);
  return v;
}

/** A stored result: JSON when it parses, else the text. */
export function parseResult(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
