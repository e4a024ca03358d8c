/**
 * The contract between the engine and a job kind.
 *
 * A job kind is one module: a zod schema for its parameters (the `job:` block of a schedule, `kind` included)
 * and a `run(context, params)` that does the work and honours `context.signal`. The engine calls `run` only
 * while it holds the claim of the occurrence; when the claim is lost (stale claimant, timeout, hand-over on
 * SIGTERM) the signal fires and whatever `run` still does is refused at completion by the fencing token.
 */
import type { z } from 'zod';
import type { ConcurrencyPolicy } from '../runner/config/schema.js';
import type { Origin } from '../runner/records/runs.js';

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
  /**
   * Where the occurrence comes from: the cron (`schedule`), `cronflock trigger` (`manual`), `cronflock backfill`
   * (`backfill`, which never skips or replaces: it waits), or the run after `cronflock resume` (`resume`).
   * Given by the engine; absent outside a flock (read as `schedule`).
   */
  origin?: Origin;
}

/**
 * The longest result a run record keeps, in characters of its JSON (`JSON.stringify(result).length`, 4 KB): the
 * executor records a longer result as none at all, so job kinds cut their reports to fit.
 */
export const RESULT_LIMIT = 4096;

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
  /**
   * The policies of the schedule the occurrence belongs to, for kinds that carry them to another system (e.g.
   * `kind: job` sets a batch Job's `activeDeadlineSeconds` from the timeout and honours the concurrency policy
   * against the Jobs it finds). Given by the engine; absent when a job is run outside a flock.
   */
  schedule?: SchedulePolicies;
  /**
   * The headers that sign a request body with the schedule's `signing:` keys (`x-cronflock-signature:
   * t=<unix s>,v1=<hex>`; see `cronflock/receiver`). Absent when the schedule signs nothing. Throws when a key
   * cannot be read (the request must then not be sent unsigned).
   */
  signBody?: (body: string) => Record<string, string>;
  /**
   * The OpenTelemetry trace context of this attempt, when the replica traces (`--otel`): give `traceparent` to
   * the systems the job calls (the http job sends it as a header), or continue the trace with
   * `propagation.extract(context.active(), { traceparent })` from `@opentelemetry/api`. Absent otherwise.
   */
  trace?: TraceContext;
  /**
   * The claim's lease as this replica can prove it, for kinds that run the job where this process's timers do not
   * reach (`kind: module` in a child process ends it at the lease's end). Given by the engine; absent outside a flock.
   */
  lease?: JobLease;
}

/**
 * The lease of a claim, seen from the replica holding it (runner/engine/claim.ts). Times are `performance.now()`
 * of the replica's process: convert with the current difference before handing them to another process.
 */
export interface JobLease {
  /** The lease's length in ms (the replica's `--lock`). */
  readonly ttlMs: number;
  /** Until when the claim is certainly live: the last successful renewal's send time plus ttlMs. */
  readonly untilMono: number;
  /** Calls `f(untilMono)` after every successful renewal; returns the unsubscribe. */
  onRenewed(f: (untilMono: number) => void): () => void;
}

/** W3C trace context of an attempt (runner/tracing/): one trace per occurrence, this span the attempt's. */
export interface TraceContext {
  /** `00-<traceId>-<spanId>-01`, the W3C header value. */
  traceparent: string;
  traceId: string;
  spanId: string;
}

/** See {@link JobContext.schedule}. */
export interface SchedulePolicies {
  /** Kubernetes CronJob `concurrencyPolicy`, as the engine enforces it across the flock. */
  concurrencyPolicy: ConcurrencyPolicy;
  /** The schedule's `timeout` in ms (the engine aborts the attempt then); null: no limit. */
  timeoutMs: number | null;
}

/**
 * Thrown by a job that finds it must not run, for a reason the engine could not see when it claimed the
 * occurrence (e.g. `kind: job` finds a live batch Job of the schedule under concurrencyPolicy Forbid whose
 * claimant died): the executor records the occurrence `skipped` with `reason` (final, never retried), like the
 * claim script's own skips. Recognised by `code` (so a copy of this class from another module instance works).
 */
export class JobSkippedError extends Error {
  readonly code = 'JOB_SKIPPED';
  constructor(
    /** Recorded as the run record's reason, e.g. `overlap: Job x still running (concurrencyPolicy Forbid)`. */
    readonly reason: string,
  ) {
    super(`skipped: ${reason}`);
    this.name = 'JobSkippedError';
  }
}

/** True for a {@link JobSkippedError} (by its `code` and `reason`, not by class identity). */
export function isJobSkipped(e: unknown): e is JobSkippedError {
  const x = e as { code?: unknown; reason?: unknown } | null;
  return typeof x === 'object' && x !== null && x.code === 'JOB_SKIPPED' && typeof x.reason === 'string';
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
  /**
   * Starts, without waiting for it, set-up that {@link compile} would otherwise wait for (e.g. the module kind's
   * measure of what a bare Node reserves, a short child process). Called by the loader when a file it is about to
   * parse may hold jobs of this kind, so that the set-up runs beside the parse and validation. Must be cheap when
   * repeated and never throw; what it starts is what compile needs anyway.
   */
  prepare?(): void;
  /**
   * Checks the schedule's own fields against what the kind can honour (e.g. `kind: job` refuses schedule
   * `retries`). Called at load with the schedule block as written (fields may be missing or invalid: check types);
   * returns one issue per problem, `path` relative to the schedule (e.g. `['retries']`), empty when fine.
   */
  checkSchedule?(schedule: Readonly<Record<string, unknown>>): ScheduleIssue[];
  /**
   * Why this process cannot run jobs with these parameters now (e.g. `kind: handler` without the handler
   * registered here), or undefined when it can. Asked before the claim: a replica that cannot run it gives the
   * delivery back for another replica (engine/executor.ts), and past the horizon it is recorded skipped with
   * this reason.
   */
  unavailable?(params: Compiled): string | undefined;
  /**
   * What a replica must have to run jobs with these parameters (e.g. `handler:sendReport`), as replicas publish it
   * with {@link capabilities}; undefined when every replica can. Paired with {@link unavailable}: a replica that
   * cannot run a delivery hands it to a live replica that publishes this (runner/engine/handoffs.ts).
   */
  requires?(params: Compiled): string | undefined;
  /** What this process can run of this kind that others may not (e.g. its registered handlers, `handler:<name>`). */
  capabilities?(): string[];
  /** Does the work of one attempt. Resolves on success; rejects (or throws) on failure. */
  run(ctx: JobContext, params: Compiled): Promise<unknown>;
}

/** A problem {@link JobKind.checkSchedule} finds in a schedule's fields. */
export interface ScheduleIssue {
  /** Field path relative to the schedule, e.g. `['retries']`. */
  path: (string | number)[];
  /** What is wrong and how to fix it. */
  message: string;
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
