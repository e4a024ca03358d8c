/**
 * Operating a running flock from outside: `cronflock trigger | backfill | suspend | resume`. Everything goes
 * through Redis — the same records, the same claim path and the same concurrency policy as scheduled
 * occurrences — so it works whichever replicas are up, and needs no leader to talk to.
 */
import type { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connect.js';
import { compileCron } from '../schedule/cron.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import type { RedisClock } from '../redis/clock.js';
import type { Keyspace } from '../redis/keys.js';
import type { Store } from '../redis/store.js';
import { listRuns } from '../records/runs.js';
import { enqueueOccurrences } from './enqueue.js';
import type { RunnerOptions } from './options.js';
import { isLiveMember, type PublishedDefinition } from './definitions.js';

/** A control operation refused; the message says why and what to do. */
export class ControlError extends Error {
  readonly code = 'CONTROL_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'ControlError';
  }
}

/** Context of a control operation. */
export interface ControlContext {
  redis: RedisClient;
  keys: Keyspace;
  store: Store;
  queue: Queue;
  clock: RedisClock;
  options: Pick<RunnerOptions, 'retentionMs' | 'prefetchMs'>;
  /** Who asks (recorded as plannedBy), e.g. `cli@host`. */
  by: string;
}

/**
 * The published definition of `schedule`.
 * @throws ControlError when no replica runs it, or when the replica that published it is no longer a live
 *   member (nobody would run the occurrence).
 */
export async function definitionOf(c: Pick<ControlContext, 'redis' | 'keys'>, schedule: string): Promise<PublishedDefinition> {
  const raw = await c.redis.hget(c.keys.definitions, schedule);
  if (raw) {
    const def = JSON.parse(raw) as PublishedDefinition;
    if (await isLiveMember(c.redis, c.keys, def.replica)) return def;
    throw new ControlError(
      `schedule "${schedule}" was published by replica ${def.replica}, which is no longer running; ` +
        'start a replica with the schedule file that defines it (or wait for the running ones to re-publish it)',
    );
  }
  const known = (await c.redis.hkeys(c.keys.definitions)).sort();
  throw new ControlError(
    `no replica runs a schedule named "${schedule}"` +
      (known.length ? `; known schedules: ${known.join(', ')}` : '; no replica has started in this namespace yet'),
  );
}

/**
 * Runs a schedule now, as a manual occurrence (`<schedule>@<now>~manual`) through the normal claim path: the
 * concurrency policy applies (Forbid skips it while another run is live), and it is recorded with origin manual.
 * @returns the occurrence key.
 */
export async function trigger(c: ControlContext, schedule: string): Promise<string> {
  await definitionOf(c, schedule);
  await c.clock.sync();
  const dueMs = c.clock.now();
  const key = occurrenceKey(schedule, dueMs, 'manual');
  const r = await c.store.enqueueManual({ schedule, key, dueMs, origin: 'manual', by: c.by, retentionMs: c.options.retentionMs });
  await enqueueOccurrences(c.queue, c.keys, c.clock, c.options.prefetchMs, [{ schedule, key, dueMs, fireMs: r.fireMs, origin: 'manual' }]);
  return key;
}

/** Result of {@link backfill}. */
export interface BackfillResult {
  /** Occurrences created and enqueued, oldest first. */
  enqueued: string[];
  /** Due times in the range that already had a record (ran, or are planned): left alone. */
  existing: string[];
}

/** Most occurrences one backfill may create. */
export const MAX_BACKFILL = 10_000;

/**
 * Creates the occurrences of `schedule` due in `[fromMs, toMs]` that have no record yet, and enqueues them to
 * run now, oldest first. With Forbid or Replace they run one at a time in due-time order; with Allow, side by
 * side up to maxConcurrent. De-duplicated against records, which are kept for the retention.
 * @throws ControlError for an empty or reversed range, or more than {@link MAX_BACKFILL} occurrences.
 */
export async function backfill(c: ControlContext, schedule: string, fromMs: number, toMs: number): Promise<BackfillResult> {
  if (!(fromMs <= toMs)) throw new ControlError('--from must not be after --to');
  const def = await definitionOf(c, schedule);
  const due = compileCron(def.cron, def.timeZone, { hashSeed: schedule });
  const dues: number[] = [];
  for (let t = due.next(fromMs - 1); t !== null && t <= toMs; t = due.next(t)) {
    dues.push(t);
    if (dues.length > MAX_BACKFILL) {
      throw new ControlError(`the range holds more than ${MAX_BACKFILL} occurrences of "${schedule}"; backfill a shorter range at a time`);
    }
  }
  const out: BackfillResult = { enqueued: [], existing: [] };
  const jobs = [];
  for (const dueMs of dues) {
    const key = occurrenceKey(schedule, dueMs);
    const r = await c.store.enqueueManual({ schedule, key, dueMs, origin: 'backfill', by: c.by, retentionMs: c.options.retentionMs });
    if (r.created) {
      out.enqueued.push(key);
      jobs.push({ schedule, key, dueMs, fireMs: r.fireMs, origin: 'backfill' as const });
    } else out.existing.push(key);
  }
  await c.clock.sync();
  await enqueueOccurrences(c.queue, c.keys, c.clock, c.options.prefetchMs, jobs);
  return out;
}

/** What {@link suspend} found and left: the suspension in force (a new one, or the one already there). */
export interface Suspension {
  /** True when the schedule was suspended before this call (nothing was changed). */
  alreadySuspended: boolean;
  /** Redis time (ms) the suspension began, who asked, and why (`--note`). */
  sinceMs: number;
  by: string;
  note?: string;
}

/**
 * Suspends a schedule on every replica at once: the claim script records each occurrence that fires while
 * suspended as skipped (suspended), until {@link resume}. Manual triggers still run. Idempotent: a second call
 * changes nothing and returns the suspension in force.
 * @param note why, shown by `cronflock status`.
 */
export async function suspend(c: Pick<ControlContext, 'redis' | 'keys' | 'clock' | 'by'>, schedule: string, note?: string): Promise<Suspension> {
  await definitionOf(c, schedule);
  await c.clock.sync();
  const mine = { sinceMs: c.clock.now(), by: c.by, ...(note ? { note } : {}) };
  if ((await c.redis.hsetnx(c.keys.suspended, schedule, JSON.stringify(mine))) === 1) return { alreadySuspended: false, ...mine };
  const raw = await c.redis.hget(c.keys.suspended, schedule);
  return { alreadySuspended: true, ...(raw ? (JSON.parse(raw) as Omit<Suspension, 'alreadySuspended'>) : mine) };
}

/** Result of {@link resume}. */
export interface ResumeResult {
  wasSuspended: boolean;
  /** With onResume: latest, the occurrence run now for the latest due time missed while suspended. */
  ran?: string;
  /** Why nothing was run although onResume is latest. */
  note?: string;
}

/**
 * Resumes a suspended schedule. With `onResume: latest`, the most recent occurrence skipped while suspended
 * runs once now (`<schedule>@<due>~resume`), unless its starting deadline has passed.
 */
export async function resume(c: ControlContext, schedule: string): Promise<ResumeResult> {
  const def = await definitionOf(c, schedule);
  const raw = await c.redis.hget(c.keys.suspended, schedule);
  if (!raw) return { wasSuspended: false };
  await c.redis.hdel(c.keys.suspended, schedule);
  if (def.onResume !== 'latest') return { wasSuspended: true };
  const { sinceMs } = JSON.parse(raw) as { sinceMs: number };
  await c.clock.sync();
  const now = c.clock.now();
  const skipped = (await listRuns(c.redis, c.keys, { schedule, fromMs: sinceMs, toMs: now, limit: 1000 })).find(
    (r) => r.state === 'skipped' && r.reason === 'suspended' && r.manual === false && r.dueMs <= now,
  );
  if (!skipped) return { wasSuspended: true, note: 'no occurrence was due while suspended' };
  if (def.startingDeadlineMs !== null && now > skipped.fireMs + def.startingDeadlineMs) {
    return { wasSuspended: true, note: `the latest missed occurrence ${skipped.key} is past its starting deadline` };
  }
  const key = occurrenceKey(schedule, skipped.dueMs, 'resume');
  const r = await c.store.enqueueManual({ schedule, key, dueMs: skipped.dueMs, origin: 'resume', by: c.by, retentionMs: c.options.retentionMs });
  if (r.created) {
    await enqueueOccurrences(c.queue, c.keys, c.clock, c.options.prefetchMs, [
      { schedule, key, dueMs: skipped.dueMs, fireMs: r.fireMs, origin: 'resume' },
    ]);
  }
  return { wasSuspended: true, ran: key };
}
