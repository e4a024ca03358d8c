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
import { randomBytes } from 'node:crypto';
import { isCatchUpRun } from './dispositions.js';

/** Data of a BullMQ job: one occurrence. Times UTC ms. */
export interface OccurrenceJobData {
  schedule: string;
  key: string;
  dueMs: number;
  fireMs: number;
  origin: Origin;
}

/**
 * Data of a batch job of the live lane (`--batch-size` > 1): up to `batchSize` occurrences whose fire times fall
 * in one slot of {@link BATCH_SLOT_MS}. The job is due at the earliest fire time − prefetch; the worker that takes
 * it waits for each occurrence's own fire time and claims each one on its own (executor.ts), so jitter is kept.
 */
export interface BatchJobData {
  batch: OccurrenceJobData[];
}

/** Data of any job of either lane: one occurrence, or a batch of them (live lane only). */
export type DeliveryJobData = OccurrenceJobData | BatchJobData;

/** Whether a job's data is a batch. */
export function isBatch(d: DeliveryJobData): d is BatchJobData {
  return Array.isArray((d as BatchJobData).batch);
}

/**
 * Width of a fire-time slot a batch is cut from, ms: occurrences of one batch fire within this of each other,
 * so a batch holds its worker for at most this plus the prefetch before its last run is claimed.
 */
export const BATCH_SLOT_MS = 250;

/** Run-record field naming the BullMQ batch job an occurrence was enqueued in (read by the sweep script). */
export const BATCH_JOB_FIELD = 'bj';

/** The job data of an occurrence (an {@link EnqueueItem}'s extra fields left out). */
export function occurrenceData(it: OccurrenceJobData): OccurrenceJobData {
  return { schedule: it.schedule, key: it.key, dueMs: it.dueMs, fireMs: it.fireMs, origin: it.origin };
}

/**
 * One occurrence as a BullMQ job of its own: id from the occurrence key (so at most one exists), due at `dueAtMs`
 * on the Redis clock (`nowMs` is the Redis clock's now: BullMQ scores a delayed job at timestamp + delay), removed
 * once finished. Used by the enqueue here and by the executor when it splits a batch or hands one of its
 * occurrences on.
 */
export function occurrenceJob(keys: Keyspace, it: OccurrenceJobData, nowMs: number, dueAtMs: number, priority?: number) {
  return {
    name: it.schedule,
    data: occurrenceData(it) as DeliveryJobData,
    opts: {
      jobId: keys.jobId(it.key),
      timestamp: nowMs,
      delay: Math.max(0, Math.round(dueAtMs) - nowMs),
      removeOnComplete: true,
      removeOnFail: true,
      ...(priority === undefined ? {} : { priority }),
    },
  };
}

/** What {@link enqueueOccurrences} takes: a job's data, and the recorded reason where there is one. */
export type EnqueueItem = OccurrenceJobData & {
  reason?: string;
  /**
   * The live-lane batch job the occurrence goes in, already written to its record (field {@link BATCH_JOB_FIELD})
   * by the plan script ({@link assignBatchJobs}); ignored unless it runs in the live lane with batches.
   */
  batchJob?: string;
};

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

/** How {@link enqueueOccurrences} groups live occurrences into jobs. */
export interface BatchOptions {
  /** Most occurrences per live-lane job; 1 (the default): one job per occurrence. */
  batchSize: number;
  /** Connection on which the batch job id is written to each record (field {@link BATCH_JOB_FIELD}). */
  redis: RedisClient;
}

/**
 * Adds the occurrences to their lanes' queues: one job per occurrence, except live occurrences with
 * `batch.batchSize` > 1, which go in batch jobs of at most that many occurrences of one fire-time slot
 * ({@link BATCH_SLOT_MS}). Each record first gets the id of its batch job (so the sweep knows it has a job),
 * then the jobs are added; a crash between the two only leaves work for the sweep.
 * @param prefetchMs how long before its fire time a job becomes available to workers.
 */
export async function enqueueOccurrences(
  lanes: Lanes,
  keys: Keyspace,
  clock: RedisClock,
  prefetchMs: number,
  items: readonly EnqueueItem[],
  batch?: BatchOptions,
): Promise<void> {
  if (items.length === 0) return;
  const now = clock.now();
  const job = (it: EnqueueItem, priority?: number) => occurrenceJob(keys, it, now, it.fireMs - prefetchMs, priority);
  const live = items.filter((it) => laneOf(it) === 'live');
  const backlog = items.filter((it) => laneOf(it) === 'backlog');
  if (live.length > 0 && batch && batch.batchSize > 1) {
    const batchJob = (members: readonly EnqueueItem[], jobId: string) => {
      const first = members[0]!;
      return {
        name: 'batch',
        data: { batch: members.map(occurrenceData) } as DeliveryJobData,
        opts: { jobId, timestamp: now, delay: Math.max(0, first.fireMs - prefetchMs - now), removeOnComplete: true, removeOnFail: true },
      };
    };
    // Those whose record names their batch job already (the plan script wrote it): grouped by it, in fire-time order.
    const named = new Map<string, EnqueueItem[]>();
    const unnamed: EnqueueItem[] = [];
    for (const it of live) {
      if (it.batchJob === undefined) unnamed.push(it);
      else {
        const list = named.get(it.batchJob) ?? [];
        list.push(it);
        named.set(it.batchJob, list);
      }
    }
    const jobs = [...named].map(([jobId, members]) => batchJob(members.sort((a, b) => a.fireMs - b.fireMs), jobId));
    // The others: cut into batches here, each record told its batch job before the job is added.
    const cut = batchesOf(unnamed, batch.batchSize).map((members) => batchJob(members, newBatchJobId(keys, members[0]!.key)));
    if (cut.length > 0) {
      const p = batch.redis.pipeline();
      for (const j of cut) for (const m of (j.data as BatchJobData).batch) p.hset(keys.occurrence(m.key), BATCH_JOB_FIELD, j.opts.jobId);
      await p.exec();
    }
    await lanes.live.addBulk([...jobs, ...cut]);
  } else if (live.length > 0) await lanes.live.addBulk(live.map((it) => job(it)));
  if (backlog.length > 0) await lanes.backlog.addBulk(backlog.map((it) => job(it, backlogPriority(it))));
}

/** A batch job's id: unique, so a batch is never de-duplicated against another (the records de-duplicate the occurrences). */
function newBatchJobId(keys: Keyspace, firstKey: string): string {
  return `b-${keys.jobId(firstKey)}-${randomBytes(4).toString('hex')}`;
}

/**
 * The batch jobs that occurrences about to be offered to the plan script go in if it records them to run on
 * time (live lane): occurrence key → job id, cut as {@link batchesOf} cuts. The plan script writes the id into
 * each record it creates to run on time (field {@link BATCH_JOB_FIELD}: the sweep's sign that a job exists), so
 * the enqueue after it writes nothing per occurrence; it adds the jobs ({@link EnqueueItem.batchJob}). An
 * occurrence the script does not create, or creates as a catch-up run or final, simply leaves its batch smaller.
 */
export function assignBatchJobs(keys: Keyspace, items: readonly { key: string; fireMs: number }[], size: number): Map<string, string> {
  const out = new Map<string, string>();
  for (const members of batchesOf(items, size)) {
    const id = newBatchJobId(keys, members[0]!.key);
    for (const m of members) out.set(m.key, id);
  }
  return out;
}

/**
 * Cuts live occurrences into batches: by fire-time slot ({@link BATCH_SLOT_MS}), fire-time order inside, at most
 * `size` each, and a slot's occurrences split evenly over its batches (so several workers share a busy slot).
 */
export function batchesOf<T extends { fireMs: number }>(items: readonly T[], size: number): T[][] {
  const bySlot = new Map<number, T[]>();
  for (const it of items) {
    const slot = Math.floor(it.fireMs / BATCH_SLOT_MS);
    const list = bySlot.get(slot) ?? [];
    list.push(it);
    bySlot.set(slot, list);
  }
  const out: T[][] = [];
  for (const list of bySlot.values()) {
    list.sort((a, b) => a.fireMs - b.fireMs);
    const n = Math.ceil(list.length / size);
    const per = Math.ceil(list.length / n);
    for (let i = 0; i < list.length; i += per) out.push(list.slice(i, i + per));
  }
  return out;
}
