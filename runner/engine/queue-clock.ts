/**
 * BullMQ on the Redis clock (promise 5 of the design notes).
 *
 * BullMQ 6 scores a delayed job with the adding client's `Date.now()` and promotes delayed jobs with each
 * worker's own `Date.now()` (redis-queue-backend.js, moveToActive). Left alone, a replica whose host clock is an
 * hour ahead would score its jobs an hour late for everybody else, and promote everybody's jobs as early as it
 * can. cronflock bounds that:
 * - **Scores are on the Redis clock.** Jobs are added with BullMQ's `timestamp` option set to the Redis estimate
 *   (enqueue.ts), and moved back to the delayed set with {@link delayJobUntil}, which gives BullMQ the Redis
 *   estimate as its "now". A job's score is then the Redis time it is due, whichever host wrote it.
 * - **Promotion on `TIME` as well.** A worker whose host clock is behind Redis promotes late; {@link
 *   promoteDueJobs} (every replica's planner tick) promotes what is due on the Redis clock and nobody has
 *   promoted, so a flock whose hosts are all behind (one replica alone, its clock stepped back) delivers at most
 *   a tick late.
 * - **Early deliveries go back.** A worker whose host clock is ahead promotes early. A delivery more than
 *   {@link earlyHoldMs} before its time cannot come from a host within {@link MAX_HOST_SKEW_MS} of Redis; a
 *   replica whose own clock is within that bound gives it back to the delayed set at its time instead of holding
 *   a worker slot until then. A replica whose clock is further ahead holds it (it would only promote it again at
 *   once); that replica reports its clock as out of bounds (replica.ts).
 * Nothing here decides whether an occurrence runs: the claim script does, on `TIME`, and refuses any claim
 * before the fire time whatever BullMQ delivered when.
 */
import type { Job, Queue, Worker } from 'bullmq';
import { MAX_HOST_SKEW_MS, type RedisClock } from '../redis/clock.js';
import type { Store } from '../redis/store.js';

/** Most delayed jobs one replica promotes per planner tick. */
const PROMOTE_LIMIT = 200;

/**
 * How early (ms before the time it is due for, on the Redis clock) a delivery may come from a worker whose host
 * clock is within {@link MAX_HOST_SKEW_MS} of Redis: the prefetch, the largest tolerated skew, and a second for
 * BullMQ's own timing.
 */
export function earlyHoldMs(prefetchMs: number): number {
  return prefetchMs + MAX_HOST_SKEW_MS + 1_000;
}

/**
 * Whether an early delivery (due `earlyMs` from now) should go back to the delayed set rather than wait in a
 * worker slot: it is further ahead than {@link earlyHoldMs}, and this host's clock is not so far ahead of Redis
 * that its own worker would promote it again at once.
 */
export function shouldGiveBackEarly(earlyMs: number, prefetchMs: number, clock: RedisClock): boolean {
  return earlyMs > earlyHoldMs(prefetchMs) && clock.offsetMs >= -MAX_HOST_SKEW_MS;
}

/**
 * Moves an active job (held by `worker` with lock `token`) back to the delayed set, due at `redisMs` on the
 * Redis clock, whatever this host's clock says: BullMQ's score is its "now" plus the delay, and both are given
 * on the Redis clock here. Throws what BullMQ throws (e.g. the lock is no longer ours).
 */
export async function delayJobUntil(worker: Worker, job: Job, token: string | undefined, clock: RedisClock, redisMs: number): Promise<void> {
  const now = clock.now();
  await worker.backend.moveToDelayed(job.id!, now, Math.max(0, Math.round(redisMs) - now), token, { skipAttempt: true });
}

/**
 * Promotes the queue's delayed jobs that are due on the Redis clock and still delayed (no worker whose host
 * clock has reached their time has promoted them yet), through BullMQ's own `promote`.
 * @returns how many this call promoted (a job another replica promoted first is not counted).
 */
export async function promoteDueJobs(queue: Queue, store: Store): Promise<number> {
  const ids = await store.dueDelayed(queue.keys.delayed!, PROMOTE_LIMIT);
  let promoted = 0;
  for (const id of ids) {
    // A job promoted meanwhile by a worker or another replica is no longer delayed: BullMQ refuses, harmlessly.
    if (await queue.backend.promote(id).then(() => true, () => false)) promoted++;
  }
  return promoted;
}
