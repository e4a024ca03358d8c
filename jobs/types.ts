/**
 * The contract between the engine and a job kind.
 *
 * A job kind is one module: a zod schema for its parameters (the `job:` block of a schedule, `kind` included)
 * and a `run(context, params)` that does the work and honours `context.signal`. The engine calls `run` only
 * while it holds the claim of the occurrence; when the claim is lost (stale claimant, timeout, hand-over on
 * SIGTERM) the signal fires and whatever `run` still does is refused at completion by the fencing token.
 */
import type { z } from 'zod';

/** Minimal structured logger handed to jobs (a pino child logger satisfies it). */
export interface JobLogger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  debug(obj: object | string, msg?: string): void;
}

/** What a job sees of the occurrence it runs. Times are UTC ms since the epoch. */
export interface OccurrenceInfo {
  /** Schedule name (DNS-1123 label). */
  schedule: string;
  /** `<schedule>@<due ISO>`: the identity of the occurrence. */
  key: string;
  /** Nominal instant produced by the cron expression. */
  dueMs: number;
  /** Due time plus the jitter offset: when the run was meant to start. */
  fireMs: number;
  /** When this attempt started, on the Redis clock. */
  startMs: number;
  /** 1 for the first attempt; re-claims after a stall add attempts. */
  attempt: number;
  /** Grows with every claim of this occurrence; pass it to systems that can refuse stale writers. */
  fencingToken: number;
  /** True for `cronflock trigger` and backfill occurrences. */
  manual: boolean;
}

/** Argument of {@link JobKind.run}. */
export interface JobContext {
  occurrence: OccurrenceInfo;
  /** Fires when the claim is lost, the run times out, or the replica hands the run over. Stop promptly. */
  signal: AbortSignal;
  log: JobLogger;
  /** Identity of the replica running the job. */
  replica: string;
  /**
   * Flock-wide locks with fencing tokens and fenced checkpoints (on the flock's Redis), for jobs that must run
   * one at a time per target across all schedules and replicas, and resume after a re-claim (e.g. restore).
   * Given by the engine; absent when a job is run outside a flock (and in `kind: module` sandboxes: processes and threads).
   */
  coordination?: JobCoordination;
}

/** Options of {@link JobCoordination.lock}. */
export interface JobLockOptions {
  /** Lease of the lock in ms (renewed every ttlMs/3 while held; lost when not renewed within ttlMs). */
  ttlMs: number;
  /** How long to wait for a lock another holder has, in ms; default 0 (refuse at once with `LOCK_HELD`). */
  waitMs?: number;
  /** Who holds it, for messages (default: the replica). */
  owner?: string;
  /** Stops waiting (and renewing, once held). */
  signal?: AbortSignal;
}

/**
 * A held lock. Its fencing token grows with every acquisition of the same name; {@link signal} fires (reason: an
 * error with code `LOCK_LOST`) when the lease is lost: refused renewal, or not renewed within the TTL on this
 * host's monotonic clock (e.g. after SIGSTOP), so the holder stops before anyone else could take it.
 */
export interface JobLock {
  readonly name: string;
  readonly fencingToken: number;
  readonly signal: AbortSignal;
  /** Checkpoints of one piece of work under this lock (`scope` names the work, e.g. a backup name). */
  checkpoints(scope: string): JobCheckpoints;
  /** Gives the lock up (idempotent); stops renewal. */
  release(): Promise<void>;
}

/**
 * String fields kept in Redis beside a lock, readable by any later holder (to resume), writable only by the
 * current holder: a write by a holder whose token is no longer current, or whose lease lapsed, is refused with
 * an error whose code is `LOCK_LOST`. Kept for 7 days after the last write.
 */
export interface JobCheckpoints {
  /** Every field (empty map when none). */
  getAll(): Promise<Map<string, string>>;
  /** Sets the fields atomically, fenced. */
  set(fields: Record<string, string>): Promise<void>;
  /** Removes every field, fenced (work finished: nothing to resume). */
  clear(): Promise<void>;
}

/** Flock-wide coordination between jobs; see {@link JobContext.coordination}. */
export interface JobCoordination {
  /**
   * Takes the lock `name` (e.g. `restore:<cluster id>`). Errors: code `LOCK_HELD` (with `holder` and
   * `remainingMs`) when another holder keeps it past `waitMs`; code `ABORTED` when `signal` fires while waiting;
   * Redis errors as they come.
   */
  lock(name: string, options: JobLockOptions): Promise<JobLock>;
}

/** What `compile` may use: where the schedule file is, for paths relative to it. */
export interface CompileContext {
  /** Absolute directory of the schedule file that defined the job. */
  baseDir: string;
  /**
   * Shared by every compile of one load (all files of a directory), so that work on one input is done once per load
   * (e.g. a module file used by many schedules is checked once). Keys are the kind's own; absent = no memo.
   */
  memo?: Map<string, Promise<unknown>>;
}

/**
 * A job kind. `Params` is what the schema outputs (e.g. durations already in ms); `Compiled` is what `compile`
 * returns (defaults to the params) and what `run` receives.
 */
export interface JobKind<Params extends { kind: string } = { kind: string }, Compiled = Params> {
  /** Value of `job.kind` in schedule files. */
  readonly kind: Params['kind'];
  /** Validates the whole `job:` block, `kind` included. Errors carry the field path for file:line:col reports. */
  readonly schema: z.ZodType<Params>;
  /**
   * Checks that need the file system or other context (e.g. that a module path exists and exports `run`).
   * Runs at load time, before anything is scheduled; throws `JobCompileError` with the field and the reason.
   * Must not run user code in the caller's process, and must finish in bounded time (a reload waits for it).
   */
  compile?(params: Params, ctx: CompileContext): Promise<Compiled>;
  /** Does the work of one attempt. Resolves on success; rejects (or throws) on failure. */
  run(ctx: JobContext, params: Compiled): Promise<unknown>;
}

/** A load-time error of a job block: `path` is relative to the `job:` block (e.g. `['path']`). */
export class JobCompileError extends Error {
  readonly code = 'JOB_INVALID';
  constructor(
    message: string,
    readonly path: (string | number)[],
  ) {
    super(message);
    this.name = 'JobCompileError';
  }
}
