/**
 * The audit log: every action taken on the flock — trigger, suspend, resume, backfill, backfill cancel, and
 * every change of a stored schedule (upsert, delete: written by the store's scripts themselves, with the
 * version, in the same atomic step as the change: runner/store/) — whether from the command line, the HTTP API
 * or the library, with who, when (Redis time: the stream id), what and why. A
 * Redis stream (`{ns}:audit`), capped at {@link AUDIT_MAX_ENTRIES} entries (approximately: `MAXLEN ~`) and to
 * entries younger than the history (`--history`).
 */
import { z } from 'zod';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { HistoryKeys } from './keys.js';
import { apiSchemas } from './model.js';

/** Most entries kept (approximately). */
export const AUDIT_MAX_ENTRIES = 100_000;
/** Default age limit when the flock has not published its `--history`. */
const DEFAULT_AUDIT_AGE_MS = 30 * 86_400_000;

/** The reason an audit entry records when the action was given none. */
export const NO_REASON = '(no reason given)';

export const auditActionSchema = z.enum(['trigger', 'suspend', 'resume', 'backfill', 'backfill-cancel', 'upsert', 'delete']);
export type AuditAction = z.infer<typeof auditActionSchema>;

/** One entry of the audit log. */
export const auditEntrySchema = z
  .object({
    id: z.string().describe('stream id; its first part is the Redis time (ms) of the action'),
    atMs: z.number(),
    who: z.string().describe('token name (API) or user@host (command line)'),
    via: z.enum(['api', 'cli', 'library']).describe('library: connectFlock (runner/library/)'),
    action: auditActionSchema,
    schedule: z.string(),
    reason: z.string().describe(`why, as given; "\${NO_REASON}" when none was`),
    outcome: z.string().describe('what it did, in words (e.g. the occurrence key triggered)'),
    version: z.coerce.number().int().optional().describe("upsert and delete: the stored schedule's version the change took"),
  })
  .register(apiSchemas, { id: 'AuditEntry' });
export type AuditEntry = z.infer<typeof auditEntrySchema>;

/** What an action records: the reason may be left out (optional everywhere, as `kubectl cordon`'s). */
export type AuditRecord = Omit<AuditEntry, 'id' | 'atMs' | 'reason' | 'version'> & { reason?: string };

/**
 * Appends an entry; trims by count and by age. The one place that words a missing reason: an absent or blank
 * `reason` is recorded as {@link NO_REASON}, whether the action came from the command line or the API.
 * @returns its id.
 */
export async function recordAudit(redis: RedisClient, keys: Keyspace, e: AuditRecord): Promise<string> {
  const hk = new HistoryKeys(keys);
  const reason = e.reason?.trim() || NO_REASON;
  const id = (await redis.xadd(
    hk.audit,
    'MAXLEN',
    '~',
    AUDIT_MAX_ENTRIES,
    '*',
    'who',
    e.who,
    'via',
    e.via,
    'action',
    e.action,
    'schedule',
    e.schedule,
    'reason',
    reason,
    'outcome',
    e.outcome,
  ))!;
  const ageMs = Number(await redis.hget(hk.config, 'historyMs')) || DEFAULT_AUDIT_AGE_MS;
  await redis.xtrim(hk.audit, 'MINID', '~', Number(id.split('-')[0]) - ageMs);
  return id;
}

/** Result of {@link readAudit}. */
export interface AuditPage {
  items: AuditEntry[];
  /** Pass as `before` for the next (older) page; null at the end. */
  next: string | null;
}

/** The largest part of a Redis stream id (an unsigned 64-bit integer). */
const STREAM_ID_PART_MAX = 18446744073709551615n;

/**
 * Whether `cursor` can be a page's `next` of the audit log: a Redis stream id `<ms>-<seq>` (each part an unsigned
 * 64-bit integer) other than `0-0`, before which nothing can be. Anything else would reach Redis as a malformed
 * range (`ERR Invalid stream ID`): callers refuse it as the caller's mistake instead.
 */
export function isAuditCursor(cursor: string): boolean {
  const m = /^(\d{1,20})-(\d{1,20})$/.exec(cursor);
  if (!m) return false;
  const ms = BigInt(m[1]!);
  const seq = BigInt(m[2]!);
  return ms <= STREAM_ID_PART_MAX && seq <= STREAM_ID_PART_MAX && ms + seq > 0n;
}

/**
 * Entries newest first.
 * @param o.before only entries older than this id (a page's `next`; check it with {@link isAuditCursor}).
 * @param o.schedule only entries about this schedule (filtered while reading; pages may be shorter).
 */
export async function readAudit(redis: RedisClient, keys: Keyspace, o: { limit: number; before?: string; schedule?: string }): Promise<AuditPage> {
  const hk = new HistoryKeys(keys);
  const end = o.before ? `(${o.before}` : '+';
  const raw = (await redis.xrevrange(hk.audit, end, '-', 'COUNT', o.limit)) as [string, string[]][];
  const items: AuditEntry[] = [];
  for (const [id, flat] of raw) {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i]!] = flat[i + 1]!;
    const parsed = auditEntrySchema.safeParse({ ...f, id, atMs: Number(id.split('-')[0]) });
    if (parsed.success && (!o.schedule || parsed.data.schedule === o.schedule)) items.push(parsed.data);
  }
  return { items, next: raw.length === o.limit ? raw[raw.length - 1]![0] : null };
}

/** Most log entries one `GET /api/v1/audit?schedule=` call looks at (then it answers with what it has and `next`). */
export const AUDIT_API_SCAN = 10_000;

/** Entries one XREVRANGE reads while {@link scanAudit} looks for a schedule's entries. */
const AUDIT_SCAN_CHUNK = 1_000;

/** Result of {@link scanAudit}: a page of one schedule's entries and how far the log was read for it. */
export interface AuditScanPage extends AuditPage {
  /** Log entries looked at (every schedule's) to make this page. */
  scanned: number;
  /**
   * true: the scan stopped at its bound (`scanMax` entries looked at) before it had `limit` matches or reached the
   * log's end; `next` goes on from the last entry looked at, so older matches may follow.
   */
  scanLimitReached: boolean;
}

/**
 * The newest `limit` entries of `schedule` older than `before`: the log holds every schedule's entries in one
 * stream, so it is read newest first in chunks of 1,000 until `limit` matches are found, the log ends, or
 * `scanMax` entries were looked at. `next` is the id of the last entry looked at (null at the log's end), so
 * following it misses and repeats nothing; a page is empty only when no entry of the schedule was within reach
 * (`scanLimitReached`) or the log ended. Used by `GET /api/v1/audit?schedule=` and `cronflock audit --schedule`.
 */
export async function scanAudit(
  redis: RedisClient,
  keys: Keyspace,
  o: { schedule: string; limit: number; scanMax: number; before?: string },
): Promise<AuditScanPage> {
  const hk = new HistoryKeys(keys);
  const items: AuditEntry[] = [];
  let before = o.before;
  let scanned = 0;
  while (scanned < o.scanMax) {
    const count = Math.min(AUDIT_SCAN_CHUNK, o.scanMax - scanned);
    const raw = (await redis.xrevrange(hk.audit, before ? `(${before}` : '+', '-', 'COUNT', count)) as [string, string[]][];
    for (const [id, flat] of raw) {
      scanned++;
      before = id;
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i]!] = flat[i + 1]!;
      if (f.schedule !== o.schedule) continue;
      const parsed = auditEntrySchema.safeParse({ ...f, id, atMs: Number(id.split('-')[0]) });
      if (parsed.success) items.push(parsed.data);
      if (items.length >= o.limit) return { items, next: id, scanned, scanLimitReached: false };
    }
    if (raw.length < count) return { items, next: null, scanned, scanLimitReached: false };
  }
  return { items, next: before ?? null, scanned, scanLimitReached: true };
}
