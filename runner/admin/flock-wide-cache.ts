/**
 * What the admin server knows from Redis, read by ONE loop and served from memory: a request to `/metrics` or
 * `/readyz` never sends a Redis command, so neither a scrape storm nor many schedules reach Redis through the
 * admin port, and claims never wait behind a scrape. (Before: every scrape read the whole last-success hash;
 * 100 concurrent scrapes of 50,000 entries took 48 s and delayed claims by 22 s.)
 *
 * - Redis reachability: a PING every `pingEveryMs` (1 s), each given at most `pingTimeoutMs`.
 * - The flock-wide last success of each schedule this replica runs (`{ns}:lastok`): read with HSCAN in pages
 *   of `pageSize` fields, one page at a time, in passes that start `refreshEveryMs` (2 s) apart, or 10 times
 *   as long as the previous pass took if that is longer, up to 30 s (with 50,000 schedules a pass is 101
 *   small pages). A
 *   pass that runs out of its `budgetMs` stops and continues where it stopped on the next turn; the values
 *   served change only when a pass is complete. Each page is small work for Redis, and other commands (claims)
 *   go between pages.
 * - The flock's backfill backlog per schedule (runner/records/backfill.ts), read at the start of each pass:
 *   a few commands, proportional to the schedules with a backfill and the admitted ones (bounded by
 *   `--backfill-concurrency`), not to all schedules.
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { backfillCounts, type BackfillCount } from '../records/backfill.js';

/** Timing of the loop (ms) and the page size; tests and benchmarks may shorten them. */
export interface FlockWideCacheOptions {
  pingEveryMs: number;
  pingTimeoutMs: number;
  refreshEveryMs: number;
  /** Most time one turn spends scanning before it yields to the next turn. */
  budgetMs: number;
  pageSize: number;
}

export const DEFAULT_FLOCK_WIDE_CACHE_OPTIONS: FlockWideCacheOptions = {
  pingEveryMs: 1_000,
  pingTimeoutMs: 1_000,
  refreshEveryMs: 2_000,
  budgetMs: 2_000,
  pageSize: 500,
};

/** Passes start at most this far apart, however long the last one took (a busy start-up makes one slow). */
const MAX_PASS_EVERY_MS = 30_000;

/** Values read from Redis for the admin server, and the loop that reads them. */
export class FlockWideCache {
  /** Schedule → Redis time (ms) of its latest success, flock-wide; only schedules `known()` names. */
  lastSuccessMs: ReadonlyMap<string, number> = new Map();
  /** Monotonic time (performance.now) of the latest PING answered; 0 before the first. */
  redisOkAtMs = 0;
  /** Why the latest PING failed; undefined after a success. */
  redisProblem: string | undefined = 'no answer yet';
  /** Monotonic time of the latest complete last-success pass; 0 before the first. */
  refreshedAtMs = 0;
  /** Backfill occurrences per schedule that has any, flock-wide, as of the latest pass start. */
  backfill: ReadonlyMap<string, BackfillCount> = new Map();
  /** Called with the backlog read at each pass start. */
  onBackfill: ((counts: ReadonlyMap<string, BackfillCount>) => void) | undefined;
  /** Called with the values of each complete pass (and awaited: the metrics build their text from them). */
  onPass: ((values: ReadonlyMap<string, number>) => Promise<void> | void) | undefined;

  private readonly o: FlockWideCacheOptions;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private loop: Promise<void> | undefined;
  /** An unfinished pass: the HSCAN cursor and what it read so far. */
  private pass: { cursor: string; values: Map<string, number> } | undefined;
  /** Time between the starts of two passes: refreshEveryMs, or 10 × the latest pass if longer (≤ 30 s). */
  private passEveryMs: number;
  /** Monotonic time the latest pass started. */
  private passStartedMs = -Infinity;

  /**
   * @param known the schedules to report (this replica's): entries of schedules removed from the files stay
   *   in Redis and must not be reported forever.
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly known: () => ReadonlySet<string>,
    options: Partial<FlockWideCacheOptions> = {},
  ) {
    this.o = { ...DEFAULT_FLOCK_WIDE_CACHE_OPTIONS, ...options };
    this.passEveryMs = this.o.refreshEveryMs;
  }

  /** Starts the loop (the first turn at once). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.next(0);
  }

  /** Stops the loop; resolves when a turn in flight has ended (each of its commands is bounded). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.loop;
  }

  private next(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.loop = this.turn().finally(() => {
        this.loop = undefined;
        this.next(this.o.pingEveryMs);
      });
    }, delayMs);
    this.timer.unref?.();
  }

  /** One turn: a PING, then (when due, and Redis answers) part or all of a last-success pass. */
  private async turn(): Promise<void> {
    try {
      await this.bounded(this.redis.ping());
      this.redisOkAtMs = performance.now();
      this.redisProblem = undefined;
    } catch (err) {
      this.redisProblem = (err as Error).message;
      return;
    }
    if (this.pass === undefined && performance.now() - this.passStartedMs < this.passEveryMs) return;
    if (this.pass === undefined) {
      try {
        this.backfill = await this.bounded(backfillCounts(this.redis, this.keys));
        this.onBackfill?.(this.backfill);
      } catch {
        /* keep the last values; the next pass tries again */
      }
    }
    try {
      await this.scan();
    } catch {
      this.pass = undefined; // start the pass again next time; the values served stay as they were
    }
  }

  /** Continues (or starts) a last-success pass for at most `budgetMs`. */
  private async scan(): Promise<void> {
    const until = performance.now() + this.o.budgetMs;
    if (this.pass === undefined) this.passStartedMs = performance.now();
    const pass = (this.pass ??= { cursor: '0', values: new Map() });
    const known = this.known();
    do {
      const [cursor, flat] = await this.bounded(this.redis.hscan(this.keys.lastSuccess, pass.cursor, 'COUNT', this.o.pageSize));
      for (let i = 0; i + 1 < flat.length; i += 2) {
        if (known.has(flat[i]!)) pass.values.set(flat[i]!, Number(flat[i + 1]));
      }
      pass.cursor = cursor;
      if (cursor === '0') {
        this.lastSuccessMs = pass.values;
        this.refreshedAtMs = performance.now();
        this.passEveryMs = Math.min(MAX_PASS_EVERY_MS, Math.max(this.o.refreshEveryMs, 10 * (this.refreshedAtMs - this.passStartedMs)));
        this.pass = undefined;
        await this.onPass?.(pass.values);
        return;
      }
      await new Promise((r) => setImmediate(r)); // let claims and runs go between pages
    } while (performance.now() < until && !this.stopped);
  }

  /** A command of this loop, given at most `pingTimeoutMs` (Redis may hang: SIGSTOP, a long script). */
  private bounded<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.o.pingTimeoutMs} ms`)), this.o.pingTimeoutMs);
    });
    p.catch(() => undefined); // a late rejection after the timeout is not unhandled
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }

  /** Age (ms) of the latest answered PING; Infinity before the first. */
  get redisAgeMs(): number {
    return this.redisOkAtMs === 0 ? Infinity : performance.now() - this.redisOkAtMs;
  }
}
