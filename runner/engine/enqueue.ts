/**
 * Putting occurrences on the BullMQ queues: one job per occurrence, id derived from the occurrence key (so
 * concurrent enqueues of the same occurrence make one job), delayed until `fire − prefetch` on the Redis clock
 * (the job's score is a Redis time whatever this host's clock says: queue-clock.ts), removed as soon as it is
 * finished (the run record, not the job, is what de-duplicates).
 * Used by the planner, the sweeper, the backfill admission, and `cronflock trigger|resume`.
 *
 * Two lanes, each a queue with workers of its own on every replica (executor.ts):
 * - **live**: occurrences the planner plans on time. Nothing else is ever queued here, so a live occurrence
 *   never waits behind other work for a worker slot or a place in the queue.
 * - **backlog**: work asked for after the fact — `trigger`, the run after `resume`, catch-up runs after
 *   downtime, admitted backfill occurrences — served by `backlogConcurrency` slots per replica, in priority
 *   order: what a person is waiting for (trigger, resume) first, then catch-up runs, then backfill.
 * Why separate queues and not BullMQ priorities on one: a priority orders the queue but does not free a slot;
 * a long backfill run, or one waiting for its schedule's previous run (Forbid), would still hold a slot that a
 * live occurrence needs.
 */
import { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connect.js';
import type { RedisClock } from '../redis/clock.js';
import type { Keyspace } from '../redis/keys.js';
import type { Origin } from '../records/runs.js';
import { isCatchUpRun } from './dispositions.js';

/** Data of a BullMQ job: one occurrence. Times UTC ms. */
export interface OccurrenceJobData {
  schedule: string;
  key: string;
  dueMs: number;
  fireMs: number;
  origin: Origin;
}

/** What {@link enqueueOccurrences} takes: a job's data, and the recorded reason where there is one. */
export type EnqueueItem = OccurrenceJobData & { reason?: string };

/** The lane an occurrence runs in (see the module comment). */
export type Lane = 'live' | 'backlog';

/** The queue of each lane. */
export interface Lanes {
  live: Queue;
  backlog: Queue;
}

/** Opens the queues of both lanes on `connection` (errors go to `onError`). */
export function openLanes(connection: RedisClient, keys: Keyspace, onError: (err: Error) => void = () => undefined): Lanes {
  const open = (name: string): Queue => {
    const q = new Queue(name, { connection, prefix: keys.ns });
    q.on('error', onError);
    return q;
  };
  return { live: open(keys.queueName), backlog: open(keys.backlogQueueName) };
}

/** Closes both queues (never throws). */
export async function closeLanes(lanes: Lanes): Promise<void> {
  await Promise.all([lanes.live.close().catch(() => undefined), lanes.backlog.close().catch(() => undefined)]);
}

/**
 * The lane of an occurrence: live for a planned occurrence on time; backlog for a trigger, a resume run, a
 * backfill occurrence, and a catch-up run (origin schedule, recorded with the catch-up reason).
 */
export function laneOf(o: { origin: Origin; reason?: string }): Lane {
  return o.origin === 'schedule' && !isCatchUpRun(o.reason) ? 'live' : 'backlog';
}

/** BullMQ priority within the backlog lane (lower runs first; equal ones in the order added). */
function backlogPriority(o: { origin: Origin }): number {
  if (o.origin === 'manual' || o.origin === 'resume') return 1;
  return o.origin === 'schedule' ? 2 : 3;
}

/**
 * Adds one job per occurrence, each to its lane's queue.
 * @param prefetchMs how long before its fire time a job becomes available to workers.
 */
export async function enqueueOccurrences(
  lanes: Lanes,
  keys: Keyspace,
  clock: RedisClock,
  prefetchMs: number,
  items: readonly EnqueueItem[],
): Promise<void> {
  if (items.length === 0) return;
  const now = clock.now();
  const job = (it: EnqueueItem, priority?: number) => ({
    name: it.schedule,
    data: { schedule: it.schedule, key: it.key, dueMs: it.dueMs, fireMs: it.fireMs, origin: it.origin } satisfies OccurrenceJobData,
    opts: {
      jobId: keys.jobId(it.key),
      // BullMQ scores a delayed job at timestamp + delay: both on the Redis clock.
      timestamp: now,
      delay: Math.max(0, it.fireMs - prefetchMs - now),
      removeOnComplete: true,
      removeOnFail: true,
      ...(priority === undefined ? {} : { priority }),
    },
  });
  const live = items.filter((it) => laneOf(it) === 'live');
  const backlog = items.filter((it) => laneOf(it) === 'backlog');
  if (live.length > 0) await lanes.live.addBulk(live.map((it) => job(it)));
  if (backlog.length > 0) await lanes.backlog.addBulk(backlog.map((it) => job(it, backlogPriority(it))));
}
