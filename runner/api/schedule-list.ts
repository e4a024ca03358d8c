/**
 * The schedules list: filters, sort orders and cursor paging over the in-memory index (schedule-index.ts), and
 * the summary of each schedule on a page. A page costs one Redis round trip (its schedules' 24 h counts),
 * whatever the number of schedules.
 *
 * Cursors are keyset cursors: the sort key of the last item of a page. The next page starts after it, so items
 * do not repeat or vanish when schedules are added or removed between two pages (a sort by a value that changes,
 * like overdue, follows the values as they are at each request).
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { HistoryKeys } from '../history/keys.js';
import type { ScheduleIndex, ScheduleRow } from './schedule-index.js';
import type { ListQuery, ScheduleSummary } from './schemas.js';
import { definitionSuspension } from '../engine/definitions.js';

/** A bad cursor; the message says so. */
export class CursorError extends Error {
  readonly code = 'BAD_CURSOR';
}

type SortKey = (string | number)[];

/** The sort key of a row: compared element by element; the name last, so keys are unique. */
function sortKey(sort: ListQuery['sort'], r: ScheduleRow): SortKey {
  switch (sort) {
    case 'attention': {
      const failing = r.last?.state === 'failed' ? 0 : 1;
      return [r.health.overdueMs > 0 ? 0 : 1, -r.health.overdueMs, failing, r.suspension || r.def.suspend ? 1 : 0, r.name];
    }
    case 'next':
      return [r.health.nextFireMs ?? Number.MAX_SAFE_INTEGER, r.name];
    case 'last':
      return [-(r.last?.endMs ?? r.last?.dueMs ?? Number.MIN_SAFE_INTEGER), r.name];
    default:
      return [r.name];
  }
}

function compare(a: SortKey, b: SortKey): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return String(x) < String(y) ? -1 : 1;
  }
  return 0;
}

const encode = (sort: string, k: SortKey): string => Buffer.from(JSON.stringify({ s: sort, k })).toString('base64url');
function decode(sort: string, cursor: string): SortKey {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { s: string; k: SortKey };
    if (c.s === sort && Array.isArray(c.k)) return c.k;
  } catch {
    /* below */
  }
  throw new CursorError(`cursor is not one of this list's (sort ${sort}): pass the \`next\` of the previous page with the same sort`);
}

/** Sorted views of the index, per sort order, for the index's current version. */
const sortedCache = new WeakMap<ScheduleIndex, Map<string, { version: number; rows: { row: ScheduleRow; key: SortKey }[] }>>();
function sorted(index: ScheduleIndex, sort: ListQuery['sort']): { row: ScheduleRow; key: SortKey }[] {
  let per = sortedCache.get(index);
  if (!per) sortedCache.set(index, (per = new Map()));
  const hit = per.get(sort);
  if (hit && hit.version === index.version) return hit.rows;
  const rows = index.rows().map((row) => ({ row, key: sortKey(sort, row) }));
  if (sort !== 'name') rows.sort((a, b) => compare(a.key, b.key));
  per.set(sort, { version: index.version, rows });
  return rows;
}

function matches(q: ListQuery, r: ScheduleRow): boolean {
  if (q.prefix && !r.name.startsWith(q.prefix)) return false;
  if (q.q && !r.name.includes(q.q)) return false;
  if (q.state && (r.last?.state ?? 'none') !== q.state) return false;
  const suspended = r.suspension !== undefined || r.def.suspend === true;
  if (q.suspended && String(suspended) !== q.suspended) return false;
  if (q.overdue && String(r.health.overdueMs > 0) !== q.overdue) return false;
  if (q.tenant !== undefined && r.def.tenant !== q.tenant) return false;
  for (const [k, v] of Object.entries(q.labels ?? {})) if (r.def.labels?.[k] !== v) return false;
  return true;
}

/**
 * One page of the list.
 * @throws CursorError for a cursor of another sort order or not made here.
 */
export async function listSchedules(
  redis: RedisClient,
  keys: Keyspace,
  index: ScheduleIndex,
  q: ListQuery,
): Promise<{ items: ScheduleSummary[]; next: string | null; total: number }> {
  const rows = sorted(index, q.sort);
  let start = 0;
  if (q.cursor) {
    const after = decode(q.sort, q.cursor);
    let lo = 0;
    let hi = rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compare(rows[mid]!.key, after) <= 0) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  const page: { row: ScheduleRow; key: SortKey }[] = [];
  let total = 0;
  const filtered = Boolean(q.prefix || q.q || q.state || q.suspended || q.overdue || q.tenant !== undefined || Object.keys(q.labels ?? {}).length > 0);
  for (let i = 0; i < rows.length; i++) {
    if (filtered && !matches(q, rows[i]!.row)) continue;
    total++;
    if (i >= start && page.length <= q.limit) page.push(rows[i]!);
  }
  const more = page.length > q.limit;
  if (more) page.pop();
  const counts = await counts24h(redis, keys, page.map((p) => p.row.name), index.nowMs());
  return {
    items: page.map((p, i) => summarize(index.current(p.row), counts[i]!)),
    next: more ? encode(q.sort, page[page.length - 1]!.key) : null,
    total,
  };
}

const CODES = { s: 'succeeded', f: 'failed', m: 'missed', k: 'skipped' } as const;

/** Each schedule's outcomes in the last 24 hourly buckets (the current hour included). One pipeline. */
export async function counts24h(redis: RedisClient, keys: Keyspace, names: readonly string[], nowMs: number): Promise<ScheduleSummary['counts24h'][]> {
  if (names.length === 0) return [];
  const hk = new HistoryKeys(keys);
  const pipe = redis.pipeline();
  for (const n of names) pipe.hgetall(hk.counts(n));
  const hour = Math.floor(nowMs / 3_600_000);
  return ((await pipe.exec()) ?? []).map(([err, h]) => {
    if (err) throw err;
    const c = { succeeded: 0, failed: 0, missed: 0, skipped: 0 };
    for (const [field, v] of Object.entries(h as Record<string, string>)) {
      const [bucket, n] = v.split(':').map(Number);
      const state = CODES[field[0] as keyof typeof CODES];
      if (state && bucket! > hour - 24 && bucket! <= hour) c[state] += n!;
    }
    return c;
  });
}

/** A row as the API answers it. */
export function summarize(r: ScheduleRow, counts: ScheduleSummary['counts24h']): ScheduleSummary {
  const l = r.last;
  return {
    name: r.name,
    source: r.def.source ?? '',
    cron: r.def.cron,
    cronText: r.cronText,
    timeZone: r.def.timeZone,
    jitterMs: r.def.jitterMs,
    concurrencyPolicy: r.def.concurrencyPolicy,
    jobKind: r.def.jobKind ?? '',
    job: r.def.job ?? '',
    publishedBy: r.def.replica,
    tenant: r.def.tenant ?? null,
    labels: r.def.labels ?? {},
    nextDueMs: r.health.nextDueMs,
    nextFireMs: r.health.nextFireMs,
    lastExpectedDueMs: r.health.lastExpectedDueMs,
    last: l
      ? { key: l.key, state: l.state, dueMs: l.dueMs, ...(l.reason ? { reason: l.reason } : {}), ...(l.error ? { error: l.error } : {}), ...(l.endMs !== undefined ? { endMs: l.endMs } : {}) }
      : null,
    lastSuccessMs: r.lastSuccessMs ?? null,
    // Rounded up: a schedule overdue for 0.3 s is overdue (0 means it is not; the overdue filter and the pill agree).
    overdueSeconds: Math.ceil(r.health.overdueMs / 1000),
    suspended: r.suspension !== undefined || r.def.suspend === true,
    suspension: r.suspension ?? definitionSuspension(r.def) ?? null,
    counts24h: counts,
  };
}
