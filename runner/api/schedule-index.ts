/**
 * Every published schedule with what the schedules list shows and filters on — definition, cron in words, next
 * fire time, latest result, suspension, overdue — kept in memory and refreshed in the background, so that a page
 * of the list costs neither a read of the whole definitions hash nor a health computation per schedule per
 * request (100,000 schedules). The dashboard process is stateless across restarts: the first request waits for
 * the first load.
 *
 * One pass: Redis `TIME`; the definitions only when their version changed (HSCAN, pages of 1000, compiling only
 * the changed ones); the suspensions (HGETALL, a handful); the latest results and last successes (HSCAN); then
 * each schedule's health (runner/records/health.ts: the one rule for "overdue"). Passes are
 * {@link MIN_REFRESH_MS} apart, or ten times as long as the last pass took (at most {@link MAX_REFRESH_MS}).
 */
import cronstrue from 'cronstrue';
import type { PublishedDefinition } from '../engine/definitions.js';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { overdueGraceMs, scheduleHealth, type ScheduleHealth } from '../records/health.js';
import { compileCron, type DueTimes } from '../schedule/cron.js';
import { fireTimeMs } from '../schedule/occurrence.js';
import { unpackEntry } from '../history/entry.js';
import { HistoryKeys } from '../history/keys.js';
import type { OccurrenceView } from '../history/model.js';
import { redisTimeMs } from '../redis/clock.js';

/** Shortest time between two passes. */
export const MIN_REFRESH_MS = 2_000;
/** Longest time between two passes, however long a pass takes. */
const MAX_REFRESH_MS = 30_000;
const SCAN_COUNT = 1_000;

/** A suspension at run time (`cronflock suspend`): since when, by whom, why. */
export interface SuspensionInfo {
  sinceMs: number;
  by: string;
  note?: string;
}

/** One schedule as the list shows it. Times are Redis UTC ms. */
export interface ScheduleRow {
  name: string;
  def: PublishedDefinition;
  /** The cron in words (cronstrue); the expression itself when it has none. */
  cronText: string;
  /** Null when this version cannot compile the published cron (shown without next fire time). */
  due: DueTimes | null;
  suspension?: SuspensionInfo;
  lastSuccessMs?: number;
  /** Its latest finished occurrence by due time. */
  last?: OccurrenceView;
  health: ScheduleHealth;
}

const NO_HEALTH: ScheduleHealth = { nextDueMs: null, nextFireMs: null, lastExpectedDueMs: null, lastExpectedFireMs: null, overdueFromMs: null, overdueSinceMs: null, overdueMs: 0 };

/** The cron expression in words; the expression itself when cronstrue has none (e.g. `H`). */
export function cronInWords(expr: string): string {
  try {
    return cronstrue.toString(expr, { use24HourTimeFormat: true, throwExceptionOnParseError: true });
  } catch {
    return expr;
  }
}

/** The next `n` due times of a row after `nowMs`, with their fire times and the ends of their jitter windows. */
export function upcomingOf(row: ScheduleRow, nowMs: number, n: number): { dueMs: number; fireMs: number; windowEndMs: number }[] {
  const out: { dueMs: number; fireMs: number; windowEndMs: number }[] = [];
  for (let t = nowMs; row.due && out.length < n; ) {
    const due = row.due.next(t);
    if (due === null) break;
    out.push({ dueMs: due, fireMs: fireTimeMs(row.name, due, row.def.jitterMs), windowEndMs: due + row.def.jitterMs });
    t = due;
  }
  return out;
}

/** A row's health at Redis time `nowMs` (runner/records/health.ts). */
function healthAt(row: ScheduleRow, nowMs: number): ScheduleHealth {
  if (!row.due) return NO_HEALTH;
  return scheduleHealth(
    {
      name: row.name,
      due: row.due,
      jitterMs: row.def.jitterMs,
      graceMs: overdueGraceMs({ timeoutMs: row.def.timeoutMs ?? null, overdueGraceMs: row.def.overdueGraceMs ?? null }),
      lastSuccessMs: row.lastSuccessMs,
      sinceMs: row.def.loadedAtMs,
      suspended: row.suspension !== undefined || row.def.suspend === true,
    },
    nowMs,
  );
}

/** The in-memory index; see the module doc. */
export class ScheduleIndex {
  private byName = new Map<string, ScheduleRow>();
  private sortedNames: string[] = [];
  private rawDefs = new Map<string, string>();
  private defsVersion: string | null | undefined = undefined;
  private nowAt = { redisMs: 0, mono: 0 };
  private first: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Bumped by every pass: sorted views are cached per version. */
  version = 0;
  /** How long the last pass took (ms). */
  lastPassMs = 0;
  /** The error of the last pass, if it failed. */
  lastError: string | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly o: { refreshMs?: number } = {},
  ) {}

  /** Resolves once the first pass is done (starting it and the background passes on the first call). */
  ready(): Promise<void> {
    this.first ??= this.refresh().then(
      () => this.schedule(),
      (err: unknown) => {
        this.first = undefined; // the next request tries again (Redis was away)
        throw err;
      },
    );
    return this.first;
  }

  /** Redis time now, estimated from the last pass on the monotonic clock. */
  nowMs(): number {
    return this.nowAt.redisMs + (performance.now() - this.nowAt.mono);
  }

  /** Every row, sorted by name. */
  rows(): ScheduleRow[] {
    return this.sortedNames.map((n) => this.byName.get(n)!);
  }

  /**
   * `row` with its health brought to now when its next fire time has passed since the last pass (a page shows at
   * most a hundred rows: cheap), so that a list never shows a next fire time in the past.
   */
  current(row: ScheduleRow): ScheduleRow {
    const now = this.nowMs();
    return row.health.nextFireMs !== null && row.health.nextFireMs <= now ? { ...row, health: healthAt(row, now) } : row;
  }

  get(name: string): ScheduleRow | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byName.size;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    const wait = Math.min(MAX_REFRESH_MS, Math.max(this.o.refreshMs ?? MIN_REFRESH_MS, this.lastPassMs * 10));
    this.timer = setTimeout(() => {
      void this.refresh()
        .catch((err: Error) => {
          this.lastError = err.message;
        })
        .finally(() => this.schedule());
    }, wait);
    this.timer.unref();
  }

  /** One pass (see the module doc). @throws what the Redis client throws. */
  async refresh(): Promise<void> {
    const t0 = performance.now();
    const hk = new HistoryKeys(this.keys);
    const [time, version, suspended] = await Promise.all([
      redisTimeMs(this.redis, this.keys),
      this.redis.get(this.keys.definitionsVersion),
      this.redis.hgetall(this.keys.suspended),
    ]);
    this.nowAt = { redisMs: time, mono: performance.now() };
    if (version !== this.defsVersion || this.byName.size === 0) {
      const fresh = await scanHash(this.redis, this.keys.definitions);
      const next = new Map<string, ScheduleRow>();
      for (const [name, raw] of fresh) {
        const old = this.byName.get(name);
        if (old && this.rawDefs.get(name) === raw) {
          next.set(name, old);
          continue;
        }
        const def = JSON.parse(raw) as PublishedDefinition;
        let due: DueTimes | null = null;
        try {
          due = compileCron(def.cron, def.timeZone, { hashSeed: name });
        } catch {
          /* a definition this version cannot compile: no next fire time */
        }
        next.set(name, { name, def, due, cronText: cronInWords(def.cron), health: NO_HEALTH });
      }
      this.rawDefs = fresh;
      this.byName = next;
      this.sortedNames = [...next.keys()].sort();
      this.defsVersion = version;
    }
    const [lastOk, last] = await Promise.all([scanHash(this.redis, this.keys.lastSuccess), scanHash(this.redis, hk.last)]);
    const now = this.nowAt.redisMs;
    for (const row of this.byName.values()) {
      const s = suspended[row.name];
      row.suspension = s ? (JSON.parse(s) as SuspensionInfo) : undefined;
      const ok = lastOk.get(row.name);
      row.lastSuccessMs = ok ? Number(ok) : undefined;
      const l = last.get(row.name);
      if (l) {
        const bar = l.indexOf('|');
        row.last = unpackEntry(row.name, Number(l.slice(0, bar)), l.slice(bar + 1)) ?? undefined;
      } else row.last = undefined;
      row.health = healthAt(row, now);
    }
    this.version++;
    this.lastError = undefined;
    this.lastPassMs = performance.now() - t0;
  }
}

/** A whole hash, a page at a time (HSCAN: Redis is never blocked by one large reply). */
export async function scanHash(redis: RedisClient, key: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(key, cursor, 'COUNT', SCAN_COUNT);
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i]!, flat[i + 1]!);
    cursor = next;
  } while (cursor !== '0');
  return out;
}
