/**
 * Operating a running flock from outside: `cronflock trigger | backfill | suspend | resume`. Everything goes
 * through Redis — the same records, the same claim path and the same concurrency policy as scheduled
 * occurrences — so it works whichever replicas are up, and needs no leader to talk to. What these commands ask
 * for runs on the backlog lane (enqueue.ts), never in place of a live occurrence.
 */
import type { RedisClient } from '../redis/connect.js';
import { compileCron } from '../schedule/cron.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import type { RedisClock } from '../redis/clock.js';
import type { Keyspace } from '../redis/keys.js';
import type { Store } from '../redis/store.js';
import { backfillCounts } from '../records/backfill.js';
import { listRuns } from '../records/runs.js';
import { enqueueOccurrences, type Lanes } from './enqueue.js';
import type { RunnerOptions } from './options.js';
import { isLiveMember, isStoredSource, type PublishedDefinition } from './definitions.js';
import { canonicalJson } from '../text/canonical-json.js';
import { knownNamesText } from '../text/known-names.js';
import { STORE_SOURCE_FILE } from '../store/definition.js';
import { ScheduleStore, type ChangeAuthor } from '../store/store.js';

/** A control operation refused; the message says why and what to do. */
export class ControlError extends Error {
  readonly code = 'CONTROL_REFUSED';
  /**
   * @param field the input the refusal is about, in the caller's words ({@link BackfillNames}: `--from` for the
   *   CLI, `body.from` for the API), when it is about one.
   */
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ControlError';
  }
}

/** Context of a control operation. */
export interface ControlContext {
  redis: RedisClient;
  keys: Keyspace;
  store: Store;
  lanes: Lanes;
  clock: RedisClock;
  options: Pick<RunnerOptions, 'retentionMs' | 'prefetchMs'>;
  /** Who asks (recorded as plannedBy), e.g. `alice@host` from the CLI (runner/cli/control-commands.ts cliIdentity). */
  by: string;
}

/**
 * How long (ms) a control operation waits for a live replica to re-publish a schedule whose publisher is gone: the
 * others re-publish it once the gone one's membership expires (2 s by default) and their next tick reads it.
 */
export const REPUBLISH_WAIT_MS = 4_000;

/**
 * The published definition of `schedule`. When its publisher is not a live member but other replicas are, waits
 * up to {@link REPUBLISH_WAIT_MS} for one of them to re-publish it (for a moment after a SIGKILL the flock still
 * runs the schedule while its entry names the dead replica: operations refused it); a stored schedule is accepted
 * at once then (every replica follows the store; the rename is lazy: definitions.ts).
 * @throws ControlError when no replica runs it, or when the replica that published it is no longer a live
 *   member and none re-published it (nobody would run the occurrence).
 */
export async function definitionOf(c: Pick<ControlContext, 'redis' | 'keys'>, schedule: string): Promise<PublishedDefinition> {
  const deadline = performance.now() + REPUBLISH_WAIT_MS;
  for (;;) {
    const raw = await c.redis.hget(c.keys.definitions, schedule);
    if (!raw) break;
    const def = JSON.parse(raw) as PublishedDefinition;
    if (await isLiveMember(c.redis, c.keys, def.replica)) return def;
    const [s] = await c.redis.time();
    const othersLive = (await c.redis.zcount(c.keys.replicas, `(${Number(s) * 1000}`, '+inf')) > 0;
    // A stored schedule runs on every live replica (each follows the store), whoever published it: its gone
    // publisher's name is replaced lazily (definitions.ts SAME_DEFINITION_RENAMES_PER_REFRESH), not waited for.
    if (othersLive && isStoredSource(def.source)) return def;
    if (!othersLive || performance.now() >= deadline) {
      throw new ControlError(
        `schedule "${schedule}" was published by replica ${def.replica}, which is no longer running; ` +
          'start a replica with the schedule file that defines it (or wait for the running ones to re-publish it)',
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  // The names probably meant and the known ones, never all of thousands (text/known-names.ts, as runs --schedule).
  const known = (await c.redis.hkeys(c.keys.definitions)).sort();
  throw new ControlError(`no replica runs a schedule named "${schedule}"; ${known.length ? knownNamesText(schedule, known) : 'no replica has started in this namespace yet'}`);
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
  await enqueueOccurrences(c.lanes, c.keys, c.clock, c.options.prefetchMs, [{ schedule, key, dueMs, fireMs: r.fireMs, origin: 'manual' }]);
  return key;
}

/** Result of {@link backfill}. */
export interface BackfillResult {
  /** True for `--dry-run`: nothing was written. */
  dryRun: boolean;
  /** Occurrences created (in a dry run: that would be), oldest first. */
  count: number;
  /** Due times of the first and last of them (ISO), or null when there are none. */
  firstDueAt: string | null;
  lastDueAt: string | null;
  /** Occurrences created, waiting for admission, oldest first (empty in a dry run). */
  enqueued: string[];
  /** Due times in the range that already had a record (ran, or are planned): left alone. */
  existing: string[];
}

/** What {@link backfill} may do. */
export interface BackfillOptions {
  /** Count and report, write nothing. */
  dryRun?: boolean;
  /** Accept more than {@link BACKFILL_CONFIRM_ABOVE} occurrences (up to {@link MAX_BACKFILL}). */
  yes?: boolean;
  /** Refuse (write nothing) if more than this many would be created; confirms the size of a large range. */
  max?: number;
  /** How the caller names the inputs in its errors (default: the CLI's flags; the API passes its body fields). */
  names?: BackfillNames;
}

/** The names of backfill's inputs in a caller's words, for its error messages and {@link ControlError.field}. */
export interface BackfillNames {
  from: string;
  to: string;
  dryRun: string;
  yes: string;
  max: string;
}

/** The CLI's flag names (the default of {@link BackfillOptions.names}). */
export const CLI_BACKFILL_NAMES: BackfillNames = { from: '--from', to: '--to', dryRun: '--dry-run', yes: '--yes', max: '--max' };

/** Due times a dry run counts, at most, to say how many a too-large range holds. */
export const MAX_BACKFILL_COUNTED = 1_000_000;

/** Most occurrences one backfill may create. */
export const MAX_BACKFILL = 10_000;
/** A backfill creating more occurrences than this needs `--yes` or `--max`. */
export const BACKFILL_CONFIRM_ABOVE = 100;
/** Reason recorded on backfill occurrences dropped by `cronflock backfill --cancel`. */
export const BACKFILL_CANCELLED = 'backfill cancelled';

/**
 * Creates the occurrences of `schedule` due in `[fromMs, toMs]` that have no record yet. They wait in the
 * flock's backfill backlog and are admitted `backfillConcurrency` at a time across the flock, oldest first, to
 * run on the backlog lane: never in a live occurrence's slot or place in a queue. With Forbid or Replace they
 * run one at a time in due-time order; with Allow, side by side up to the flock's backfill concurrency (and
 * maxConcurrent). De-duplicated against records, which are kept for the retention.
 * @throws ControlError for an empty or reversed range, more than {@link MAX_BACKFILL} occurrences, or more than
 *   {@link BACKFILL_CONFIRM_ABOVE} (or `max`) without `yes`; nothing is written then.
 */
export async function backfill(c: ControlContext, schedule: string, fromMs: number, toMs: number, o: BackfillOptions = {}): Promise<BackfillResult> {
  const n = o.names ?? CLI_BACKFILL_NAMES;
  if (!(fromMs <= toMs)) throw new ControlError(`${n.from} must not be after ${n.to} (${iso(fromMs)} is after ${iso(toMs)})`, n.from);
  const def = await definitionOf(c, schedule);
  const due = compileCron(def.cron, def.timeZone, { hashSeed: schedule });
  const dues: number[] = [];
  for (let t = due.next(fromMs - 1); t !== null && t <= toMs; t = due.next(t)) {
    dues.push(t);
    if (dues.length > MAX_BACKFILL) {
      // A dry run is asked how large the range is: count on (bounded) to say it.
      let total = dues.length;
      if (o.dryRun) for (t = due.next(t); t !== null && t <= toMs && total < MAX_BACKFILL_COUNTED; t = due.next(t)) total++;
      const holds = !o.dryRun ? `more than ${MAX_BACKFILL.toLocaleString('en-US')}` : total >= MAX_BACKFILL_COUNTED ? `at least ${total.toLocaleString('en-US')}` : total.toLocaleString('en-US');
      throw new ControlError(
        `the range holds ${holds} occurrences of "${schedule}" (${n.from} ${iso(fromMs)} to ${n.to} ${iso(toMs)}); one backfill creates at most ` +
          `${MAX_BACKFILL.toLocaleString('en-US')}: backfill a shorter range at a time`,
        n.to,
      );
    }
  }
  const items = dues.map((dueMs) => ({ key: occurrenceKey(schedule, dueMs), dueMs }));
  const exists = await existing(c, items.map((it) => it.key));
  const fresh = items.filter((_, i) => !exists[i]);
  const span = (list: readonly { dueMs: number }[]) => ({
    count: list.length,
    firstDueAt: list.length ? iso(list[0]!.dueMs) : null,
    lastDueAt: list.length ? iso(list[list.length - 1]!.dueMs) : null,
  });
  const existingKeys = items.filter((_, i) => exists[i]).map((it) => it.key);
  if (o.dryRun) return { dryRun: true, ...span(fresh), enqueued: [], existing: existingKeys };
  const limit = o.max ?? (o.yes ? MAX_BACKFILL : BACKFILL_CONFIRM_ABOVE);
  if (fresh.length > limit) {
    const what = `the range holds ${fresh.length} occurrences of "${schedule}" to backfill (due ${span(fresh).firstDueAt} to ${span(fresh).lastDueAt})`;
    throw new ControlError(
      o.max !== undefined
        ? `${what}, more than ${n.max} ${o.max}; nothing was enqueued: narrow the range or raise ${n.max}`
        : `${what}, more than ${BACKFILL_CONFIRM_ABOVE}; nothing was enqueued: check it with ${n.dryRun}, then run again with ${n.yes} (or ${n.max} ${fresh.length})`,
      o.max !== undefined ? n.max : n.yes,
    );
  }
  const created = await c.store.enqueueBackfill({
    schedule,
    items: fresh,
    policy: def.concurrencyPolicy,
    by: c.by,
    retentionMs: c.options.retentionMs,
  });
  // Between the check and the write another caller may have created some: report what this call created.
  const made = new Set(created);
  const ran = fresh.filter((it) => made.has(it.key));
  return {
    dryRun: false,
    ...span(ran),
    enqueued: created,
    existing: items.filter((it) => !made.has(it.key)).map((it) => it.key),
  };
}

/** Whether each occurrence key has a record (pipelined, in chunks). */
async function existing(c: Pick<ControlContext, 'redis' | 'keys'>, keys: readonly string[]): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let i = 0; i < keys.length; i += 1000) {
    const pipe = c.redis.pipeline();
    for (const k of keys.slice(i, i + 1000)) pipe.exists(c.keys.occurrence(k));
    for (const [err, n] of (await pipe.exec()) ?? []) {
      if (err) throw err;
      out.push(Number(n) === 1);
    }
  }
  return out;
}

/** Result of {@link cancelBackfill}. */
export interface CancelBackfillResult {
  /** Backfill occurrences that had not started, now recorded skipped (backfill cancelled). */
  cancelled: number;
  /** Backfill runs in flight (or waiting for a retry): they finish. */
  started: number;
}

/**
 * Cancels a schedule's backfill: every backfill occurrence that has not started is recorded `skipped: backfill
 * cancelled`; runs in flight finish. Works whether or not a replica still runs the schedule. Idempotent.
 */
export async function cancelBackfill(c: Pick<ControlContext, 'store' | 'options'>, schedule: string): Promise<CancelBackfillResult> {
  return c.store.cancelBackfill(schedule, BACKFILL_CANCELLED, c.options.retentionMs);
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** What {@link suspend} found and left: the suspension in force (a new one, or the one already there). */
export interface Suspension {
  /** True when the schedule was suspended before this call (nothing was changed). */
  alreadySuspended: boolean;
  /** Redis time (ms) the suspension began, who asked, and why (`--note`). */
  sinceMs: number;
  by: string;
  note?: string;
  /** Backfill occurrences of the schedule that wait (paused) until {@link resume}. */
  backfillWaiting: number;
}

/**
 * Suspends a schedule on every replica at once: the claim script records each occurrence that fires while
 * suspended as skipped (suspended), until {@link resume}. Its backfill pauses: no backfill occurrence of it
 * starts until resume (those waiting stay waiting; an admitted one goes back to waiting when claimed); a run in
 * flight finishes. `backfill --cancel` drops them instead. Manual triggers still run. Idempotent: a second
 * call changes nothing and returns the suspension in force.
 * @param note why, shown by `cronflock status`.
 */
export async function suspend(c: Pick<ControlContext, 'redis' | 'keys' | 'clock' | 'by'>, schedule: string, note?: string): Promise<Suspension> {
  await definitionOf(c, schedule);
  await c.clock.sync();
  const mine = { sinceMs: c.clock.now(), by: c.by, ...(note ? { note } : {}) };
  const created = (await c.redis.hsetnx(c.keys.suspended, schedule, JSON.stringify(mine))) === 1;
  const raw = created ? null : await c.redis.hget(c.keys.suspended, schedule);
  const inForce = raw ? (JSON.parse(raw) as Omit<Suspension, 'alreadySuspended' | 'backfillWaiting'>) : mine;
  return { alreadySuspended: !created, ...inForce, backfillWaiting: await backfillOf(c, schedule) };
}

/** Backfill occurrences of `schedule` not yet final (waiting or admitted). */
async function backfillOf(c: Pick<ControlContext, 'redis' | 'keys'>, schedule: string): Promise<number> {
  const n = (await backfillCounts(c.redis, c.keys, schedule)).get(schedule);
  return n ? n.waiting + n.admitted : 0;
}

/** Result of {@link resume}. */
export interface ResumeResult {
  wasSuspended: boolean;
  /** Backfill occurrences of the schedule that go on now (they waited while it was suspended). */
  backfillWaiting: number;
  /** With onResume: latest, the occurrence run now for the latest due time missed while suspended. */
  ran?: string;
  /** Why nothing was run although onResume is latest. */
  note?: string;
  /**
   * For a stored schedule whose definition said `suspend: true`: the version of its definition written without
   * it (resume clears it; the replicas apply it from its next due time, as any change).
   */
  definitionVersion?: number;
}

/**
 * Resumes a suspended schedule; its paused backfill goes on. With `onResume: latest`, the most recent
 * occurrence skipped while suspended runs once now (`<schedule>@<due>~resume`), unless its starting deadline
 * has passed.
 *
 * One rule for the two ways a schedule is suspended — by `cronflock suspend` (run time) and by its definition's
 * `suspend: true`: resume ends both where it can. The run-time suspension is removed; a STORED schedule's
 * definition is written again without `suspend` (a new version, audited as an upsert by `c.by` via `author.via`).
 * A schedule file's or Schedule resource's `suspend: true` belongs to that source: resume cannot change it and
 * says where to (when nothing else was suspended, it refuses).
 * @throws ControlError when no live replica runs it; when only its file's `suspend: true` suspends it.
 */
export async function resume(c: ControlContext, schedule: string, author: Omit<ChangeAuthor, 'by'> = {}): Promise<ResumeResult> {
  const def = await definitionOf(c, schedule);
  const raw = await c.redis.hget(c.keys.suspended, schedule);
  const backfillWaiting = await backfillOf(c, schedule);
  let definitionVersion: number | undefined;
  if (def.source === undefined || def.source.startsWith(STORE_SOURCE_FILE)) {
    const store = new ScheduleStore(c.redis, c.keys);
    const kept = await store.get(schedule);
    if (kept?.definition.suspend === true) {
      const { suspend: _suspend, ...rest } = kept.definition;
      // Checked when it was stored; only `suspend` goes (no re-validation: relative module paths need its baseDir).
      const w = await store.write(schedule, canonicalJson(rest), kept.tenant ?? '', { ...author, by: c.by, ifVersion: kept.version });
      if (!w.ok) throw new ControlError(`schedule "${schedule}": could not clear suspend: true of its stored definition: ${w.error.message}`);
      definitionVersion = w.version;
    }
  } else if (def.suspend === true && !raw) {
    throw new ControlError(
      `schedule "${schedule}" is suspended by its own definition (suspend: true in ${def.source}), not by cronflock suspend: ` +
        'set suspend: false (or remove it) there; the replicas reload it',
    );
  }
  if (!raw && definitionVersion === undefined) return { wasSuspended: false, backfillWaiting };
  if (raw) await c.redis.hdel(c.keys.suspended, schedule);
  // Suspended by its definition only: since when is not known; the latest skipped occurrence kept is the one.
  const r = await runLatestMissed(c, def, schedule, raw ? (JSON.parse(raw) as { sinceMs: number }) : { sinceMs: 0 });
  return { wasSuspended: true, backfillWaiting, ...(definitionVersion !== undefined ? { definitionVersion } : {}), ...r };
}

/** With onResume: latest, runs the latest occurrence skipped while suspended (see {@link resume}). */
async function runLatestMissed(
  c: ControlContext,
  def: PublishedDefinition,
  schedule: string,
  { sinceMs }: { sinceMs: number },
): Promise<Pick<ResumeResult, 'ran' | 'note'>> {
  if (def.onResume !== 'latest') return {};
  await c.clock.sync();
  const now = c.clock.now();
  const skipped = (await listRuns(c.redis, c.keys, { schedule, fromMs: sinceMs, toMs: now, limit: 1000 })).find(
    (r) => r.state === 'skipped' && r.reason === 'suspended' && r.manual === false && r.dueMs <= now,
  );
  if (!skipped) return { note: 'no occurrence was due while suspended' };
  if (def.startingDeadlineMs !== null && now > skipped.fireMs + def.startingDeadlineMs) {
    return { note: `the latest missed occurrence ${skipped.key} is past its starting deadline` };
  }
  const key = occurrenceKey(schedule, skipped.dueMs, 'resume');
  const r = await c.store.enqueueManual({ schedule, key, dueMs: skipped.dueMs, origin: 'resume', by: c.by, retentionMs: c.options.retentionMs });
  if (r.created) {
    await enqueueOccurrences(c.lanes, c.keys, c.clock, c.options.prefetchMs, [
      { schedule, key, dueMs: skipped.dueMs, fireMs: r.fireMs, origin: 'resume' },
    ]);
  }
  return { ran: key };
}
