/**
 * Backfill admission, on every replica: lets waiting backfill occurrences out of the backlog a few at a time
 * (`backfillConcurrency` admitted across the whole flock, decided atomically in Redis: runner/redis/lua/backfill-admit.lua)
 * and enqueues them on the backlog lane.
 *
 * Why admission and not one queued job per occurrence: thousands of queued jobs are thousands of deliveries,
 * each of which takes a worker slot while it waits for its turn (one at a time under Forbid) and polls Redis;
 * they cannot be paused by a suspension without being polled, and cancelling them means finding them. Waiting in
 * a Redis ZSET costs nothing until a place is free, and `suspend`, `backfill --cancel`, the metrics and a dry run
 * all read or change one place.
 *
 * Every replica admits (no leader): on its planner period, and at once when a backfill run it held ended, so a
 * backfill moves on without waiting for a tick. Calls from several replicas are atomic and see the same cap.
 * A replica that dies after admitting and before enqueueing leaves the occurrence in `pending` without a job:
 * the sweeper enqueues it (as for any planned occurrence).
 */
import type { Logger } from '../log.js';
import type { RedisClock } from '../redis/clock.js';
import type { Keyspace } from '../redis/keys.js';
import type { Store } from '../redis/store.js';
import { enqueueOccurrences, type Lanes } from './enqueue.js';
import type { RunnerOptions } from './options.js';
import { redisFailure } from '../redis/outage.js';

/** Admits backfill occurrences for the flock; one per replica. */
export class BackfillAdmission {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  /** Occurrences this replica admitted and enqueued (logs, tests). */
  admitted = 0;

  constructor(
    private readonly store: Store,
    private readonly lanes: Lanes,
    private readonly keys: Keyspace,
    private readonly clock: RedisClock,
    private readonly opts: Pick<RunnerOptions, 'backfillConcurrency' | 'retentionMs' | 'prefetchMs' | 'tickMs'>,
    private readonly log: Logger,
  ) {}

  /** Starts admitting every `tickMs`. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Admits now (a backfill run ended: its place is free); calls during an admission run one more after it. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  /** Stops; waits for an admission in flight (its occurrences are enqueued before this resolves). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.admit()
        .catch((err: unknown) => {
          const f = redisFailure(err);
          this.log.warn(f.fields, `backfill admission failed: ${f.text}; retrying`);
        })
        .finally(() => {
          this.running = undefined;
          const again = this.again;
          this.again = false;
          this.schedule(again ? 0 : this.opts.tickMs);
        });
    }, delayMs);
    this.timer.unref?.();
  }

  private async admit(): Promise<void> {
    const items = await this.store.admitBackfill({ cap: this.opts.backfillConcurrency, retentionMs: this.opts.retentionMs });
    if (items.length === 0) return;
    await enqueueOccurrences(
      this.lanes,
      this.keys,
      this.clock,
      this.opts.prefetchMs,
      items.map((it) => ({ ...it, origin: 'backfill' as const })),
    );
    this.admitted += items.length;
    this.log.debug({ occurrences: items.map((it) => it.key) }, 'backfill admitted');
  }
}
