/**
 * What the admin server knows from Redis, read by ONE loop and served from memory: a request to `/metrics` or
 * `/readyz` never sends a Redis command, so neither a scrape storm nor many schedules reach Redis through the
 * admin port, and claims never wait behind a scrape. (Before: every scrape read the whole last-success hash;
 * 100 concurrent scrapes of 50,000 entries took 48 s and delayed claims by 22 s.)
 *
 * - Redis reachability: a PING every `pingEveryMs` (1 s), each given at most `pingTimeoutMs`.
 * - Per schedule this replica runs, flock-wide (the health metrics: admin/schedule-health.ts): its last success
 *   (`{ns}:lastok`), its latest final state with its consecutive failures (`{ns}:lastresult`), and whether it
 *   is suspended (`{ns}:suspended`). Each hash is read with HSCAN in pages of `pageSize` fields, one page at a
 *   time, in passes that start `refreshEveryMs` (2 s) apart, or 10 times as long as the previous pass took if
 *   that is longer, up to 30 s (with 100,000 schedules a pass is about 400 small pages). A pass that runs out of
 *   its `budgetMs` stops and continues where it stopped on the next turn; the values served change only when a
 *   pass is complete. Each page is small work for Redis, and other commands (claims) go between pages.
 * - At the start of each pass: the flock's backfill backlog per schedule (runner/records/backfill.ts), a few
 *   commands proportional to the schedules with a backfill and the admitted ones (bounded by
 *   `--backfill-concurrency`), not to all schedules; and, when `readQueues` is given, the queues' job counts
 *   (a few commands: BullMQ's `getJobCounts`); and the waiting occurrences of each concurrency group of this
 *   replica's schedules (one ZCARD per group, pipelined).
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { backfillCounts, type BackfillCount } from '../records/backfill.js';
import { parseLastResult, type LastResult } from '../records/last-result.js';

/** Jobs of a lane's BullMQ queue by state (waiting: ready for a worker; delayed: due later; active: held). */
export interface QueueCounts {
  waiting: number;
  delayed: number;
  active: number;
}

/** What one complete pass read, flock-wide, for the schedules this replica runs. Times are Redis UTC ms. */
export interface FlockWideValues {
  /** Schedule → Redis time of its latest success. */
  lastSuccessMs: ReadonlyMap<string, number>;
  /** Schedule → its latest final state (absent: none on record). */
  lastResult: ReadonlyMap<string, LastResult>;
  /** Schedules suspended at run time (`cronflock suspend`). */
  suspended: ReadonlySet<string>;
}

/** One hash a pass reads, and what it keeps of each field. */
interface PassPhase {
  key: string;
  take(values: PassValues, field: string, value: string): void;
}
type PassValues = { lastSuccessMs: Map<string, number>; lastResult: Map<string, LastResult>; suspended: Set<string> };

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
  /** The latest complete pass (empty before the first). */
  values: FlockWideValues = { lastSuccessMs: new Map(), lastResult: new Map(), suspended: new Set() };
  /** Jobs per lane (lane → counts), flock-wide, as of the latest pass start; empty without `readQueues`. */
  queues: ReadonlyMap<string, QueueCounts> = new Map();
  /** Reads the lanes' job counts at each pass start (replica.ts gives BullMQ's getJobCounts). */
  readQueues: (() => Promise<ReadonlyMap<string, QueueCounts>>) | undefined;
  /** Monotonic time (performance.now) of the latest PING answered; 0 before the first. */
  redisOkAtMs = 0;
  /** Why the latest PING failed; undefined after a success. */
  redisProblem: string | undefined = 'no answer yet';
  /** Monotonic time of the latest complete pass; 0 before the first. */
  refreshedAtMs = 0;
  /** How long the latest complete pass took (ms), from its first page to the end of its {@link onPass} listener, waits between turns included. */
  lastPassMs = 0;
  /** Backfill occurrences per schedule that has any, flock-wide, as of the latest pass start. */
  backfill: ReadonlyMap<string, BackfillCount> = new Map();
  /** Called with the queues' job counts read at each pass start. */
  onQueues: ((queues: ReadonlyMap<string, QueueCounts>) => void) | undefined;
  /** Waiting occurrences per concurrency group of `groups` (ZCARD of each group's waiting set), read at each pass start. */
  onGroupWaiting: ((counts: ReadonlyMap<string, number>) => void) | undefined;
  /** The concurrency groups to read for {@link onGroupWaiting} (this replica's schedules' groups). */
  groups: (() => readonly string[]) | undefined;
  /** Called with the backlog read at each pass start. */
  onBackfill: ((counts: ReadonlyMap<string, BackfillCount>) => void) | undefined;
  /** Called with the values of each complete pass (and awaited: the metrics build their text from them). */
  onPass: ((values: FlockWideValues) => Promise<void> | void) | undefined;

  private readonly o: FlockWideCacheOptions;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private loop: Promise<void> | undefined;
  /** An unfinished pass: which hash it reads (index into `phases`), the HSCAN cursor and what it read so far. */
  private pass: { phase: number; cursor: string; values: PassValues } | undefined;
  /** The hashes a pass reads, in order. */
  private readonly phases: readonly PassPhase[];
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
    this.phases = [
      { key: keys.lastSuccess, take: (v, field, value) => v.lastSuccessMs.set(field, Number(value)) },
      {
        key: keys.lastResult,
        take: (v, field, value) => {
          const r = parseLastResult(value);
          if (r) v.lastResult.set(field, r);
        },
      },
      { key: keys.suspended, take: (v, field) => v.suspended.add(field) },
    ];
  }

  /** Starts the loop (the first turn at once). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.next(0);
  }

  /**
   * Notes that Redis answered a command on this loop's connection just now (the replica's start: the clock sync),
   * as an answered PING would. The loop's first PING goes out when the loop starts, usually before the connection
   * is ready (the commands connection has no offline queue, so it fails at once), and the next turn is
   * `pingEveryMs` later: without this a replica that runs was not ready (/readyz "Redis is not reachable") for up
   * to a second after its start. What Redis answers later is still told by the PINGs alone.
   */
  answered(): void {
    this.redisOkAtMs = performance.now();
    this.redisProblem = undefined;
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
      const groups = this.groups?.() ?? [];
      if (groups.length > 0) {
        try {
          const p = this.redis.pipeline();
          for (const g of groups) p.zcard(this.keys.gate('group', g).waiting);
          const out = (await this.bounded(p.exec())) ?? [];
          this.onGroupWaiting?.(new Map(groups.map((g, i) => [g, Number(out[i]?.[1] ?? 0)])));
        } catch {
          /* as above */
        }
      }
      if (this.readQueues) {
        try {
          this.queues = await this.bounded(this.readQueues());
          this.onQueues?.(this.queues);
        } catch {
          /* as above */
        }
      }
    }
    try {
      await this.scan();
    } catch {
      this.pass = undefined; // start the pass again next time; the values served stay as they were
    }
  }

  /** Continues (or starts) a pass for at most `budgetMs`. */
  private async scan(): Promise<void> {
    const until = performance.now() + this.o.budgetMs;
    if (this.pass === undefined) this.passStartedMs = performance.now();
    const pass = (this.pass ??= { phase: 0, cursor: '0', values: { lastSuccessMs: new Map(), lastResult: new Map(), suspended: new Set() } });
    const known = this.known();
    do {
      const phase = this.phases[pass.phase]!;
      const [cursor, flat] = await this.bounded(this.redis.hscan(phase.key, pass.cursor, 'COUNT', this.o.pageSize));
      for (let i = 0; i + 1 < flat.length; i += 2) {
        if (known.has(flat[i]!)) phase.take(pass.values, flat[i]!, flat[i + 1]!);
      }
      pass.cursor = cursor;
      if (cursor === '0' && ++pass.phase === this.phases.length) {
        this.values = pass.values;
        this.lastSuccessMs = pass.values.lastSuccessMs;
        this.refreshedAtMs = performance.now();
        this.pass = undefined;
        await this.onPass?.(pass.values);
        // The pass's cost includes what its listener did with it (the schedule health board: a look at every
        // schedule this replica runs): at 1,000,000 schedules the reads took little (nothing had run) while the
        // board took seconds, and a pass every 2 s kept a replica's event loop busy half the time.
        this.lastPassMs = performance.now() - this.passStartedMs;
        this.passEveryMs = Math.min(MAX_PASS_EVERY_MS, Math.max(this.o.refreshEveryMs, 10 * this.lastPassMs));
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
