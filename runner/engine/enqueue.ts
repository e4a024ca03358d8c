/**
 * Putting occurrences on the BullMQ queue: one job per occurrence, id derived from the occurrence key (so
 * concurrent enqueues of the same occurrence make one job), delayed until `fire − prefetch` on the Redis clock
 * (the job's score is a Redis time whatever this host's clock says: queue-clock.ts), removed as soon as it is
 * finished (the run record, not the job, is what de-duplicates).
 * Used by the planner, the sweeper, and `cronflock trigger|backfill|resume`.
 */
import type { Queue } from 'bullmq';
import type { RedisClock } from '../redis/clock.js';
import type { Keyspace } from '../redis/keys.js';
import type { Origin } from '../redis/store.js';

/** Data of a BullMQ job: one occurrence. Times UTC ms. */
export interface OccurrenceJobData {
  schedule: string;
  key: string;
  dueMs: number;
  fireMs: number;
  origin: Origin;
}

/**
 * Adds one job per occurrence.
 * @param prefetchMs how long before its fire time a job becomes available to workers.
 */
export async function enqueueOccurrences(
  queue: Queue,
  keys: Keyspace,
  clock: RedisClock,
  prefetchMs: number,
  items: readonly OccurrenceJobData[],
): Promise<void> {
  if (items.length === 0) return;
  const now = clock.now();
  await queue.addBulk(
    items.map((it) => ({
      name: it.schedule,
      data: { schedule: it.schedule, key: it.key, dueMs: it.dueMs, fireMs: it.fireMs, origin: it.origin } satisfies OccurrenceJobData,
      opts: {
        jobId: keys.jobId(it.key),
        // BullMQ scores a delayed job at timestamp + delay: both on the Redis clock.
        timestamp: now,
        delay: Math.max(0, it.fireMs - prefetchMs - now),
        removeOnComplete: true,
        removeOnFail: true,
      },
    })),
  );
}
