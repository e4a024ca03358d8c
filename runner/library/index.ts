/**
 * cronflock as a library: manage schedules from code and run replicas inside an application.
 *
 *     import { connectFlock, startReplica } from 'cronflock';
 *
 *     // In the application that runs the jobs (as many processes as you like: every replica is equal):
 *     const replica = await startReplica({
 *       redis: 'redis://localhost:6379',
 *       jobs: { sendReport: async ({ params, occurrence, signal }) => sendReport(params.customer, { signal }) },
 *     });
 *
 *     // Anywhere (an API handler, a migration): schedules as data, stored in Redis, applied by every replica.
 *     const flock = await connectFlock({ redis: 'redis://localhost:6379' });
 *     const r = await flock.schedules.upsert({
 *       name: 'report-acme', cron: '0 8 * * 1-5', timeZone: 'Europe/Berlin', jitter: '5m',
 *       job: { kind: 'handler', handler: 'sendReport', params: { customer: 'acme' } },
 *     });
 *     if (!r.ok) console.error(r.error.message); // ScheduleDefinitionError: r.error.problems name the fields
 *     await flock.close();
 *
 * A definition is one entry of a schedule file's `schedules:` list, validated by the same code (runner/store/).
 */
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { performAction, type ActionOutcome } from '../api/actions.js';
import { nextRows, type NextRow } from '../cli/next-rows.js';
import { ControlError, type ControlContext } from '../engine/control.js';
import { closeLanes, openLanes } from '../engine/enqueue.js';
import { compileOptions, DEFAULT_OPTIONS, type RunnerOptions } from '../engine/options.js';
import { Replica } from '../engine/replica.js';
import { createLogger } from '../log.js';
import { listRuns, type RunRecord } from '../records/runs.js';
import { RedisClock } from '../redis/clock.js';
import type { RedisClient } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { ScheduleSources } from '../sources/sources.js';
import { openStoredSchedules } from '../sources/stored.js';
import { checkDefinition, MAX_DEFINITION_BYTES, ScheduleDefinitionError, type DefinitionProblem, type ScheduleDefinition } from '../store/definition.js';
import { NameOwnedError, ScheduleStore, TenantLimitArgumentError, TenantLimitError, VersionConflictError, type ListFilter, type NotStored, type RemoveResult, type StoredSchedule, type TenantInfo, type UpsertResult } from '../store/store.js';
import { registerHandlers, type HandlerContext, type JobHandler } from '../../jobs/handler.js';
import { settlesWithin } from '../time/wait.js';
import { connectCommands, redactRedisUrl } from '../redis/connect.js';
import { explainRedisError, formatRedisProblem, noAnswerProblem } from '../redis/explain.js';
import { LibraryArgumentError, onlyKeys, text, timeMs, wholeNumber } from './arguments.js';

export { MAX_DEFINITION_BYTES, ScheduleDefinitionError, VersionConflictError, NameOwnedError, TenantLimitError, ControlError, LibraryArgumentError };
export type { ListFilter, NotStored, TenantInfo, DefinitionProblem, ScheduleDefinition, StoredSchedule, UpsertResult, RemoveResult, RunRecord, NextRow, HandlerContext, JobHandler, ActionOutcome };

/** Options of {@link connectFlock}. */
export interface ConnectFlockOptions {
  /** A Redis URL (closed by `close()`), or an ioredis client of yours (left open). */
  redis: string | RedisClient;
  /** The flock's namespace (default `cronflock`, like `--namespace`). */
  namespace?: string;
  /** Who makes the changes, kept with each stored schedule and in the audit log (default `library@<host>`). */
  by?: string;
  /** Where relative module paths of `kind: module` jobs resolve (default: the working directory). */
  baseDir?: string;
  /**
   * For a Redis URL: how long connecting, and each command, may wait for a Redis that does not answer (paused,
   * wedged) before failing with an error that says so, ms (default 10,000, like the CLI's `--redis-timeout`).
   */
  redisTimeoutMs?: number;
}

/** The stored schedules of a flock, and the operations on schedules; see {@link connectFlock}. */
export interface FlockSchedules {
  /**
   * Creates or changes a schedule (the definition of a schedule file's entry). Atomic; the version grows; every
   * replica applies it from its next due time. `ifVersion`: only if the stored version is this one (0: only if it
   * does not exist). Refusals are values (`ok: false`): {@link ScheduleDefinitionError} (nothing written; every
   * problem with its field; also a value JSON cannot carry, NOT_JSON with its path such as `job.params.when`, and
   * a definition over 64 KiB as JSON, TOO_LARGE), {@link VersionConflictError}, {@link NameOwnedError} (a file or Schedule resource
   * of a live replica defines the name), {@link TenantLimitError} (its `tenant` is at its limit of stored
   * schedules). Recorded in the audit log (via `library`, who: `by`, the version), with `reason` when given.
   */
  upsert(def: ScheduleDefinition, o?: { ifVersion?: number; reason?: string }): Promise<UpsertResult>;
  /** The stored schedule, or undefined. */
  get(name: string): Promise<StoredSchedule | undefined>;
  /**
   * One page in name order: `prefix`, `tenant` and `labels` (every one must match) filter, `cursor` is the
   * previous page's, `limit` ≤ 1000 (default 100). With `labels` a page may be short while `cursor` is set.
   */
  list(o?: ListFilter & { cursor?: string; limit?: number }): Promise<{ items: StoredSchedule[]; cursor?: string }>;
  /**
   * Removes a stored schedule: it stops after the run in flight; its planned occurrences are recorded skipped.
   * Audited. A name that is not stored answers NOT_FOUND; when a schedule file or Schedule resource defines it,
   * the message names that source and how to remove it there (`error.source`).
   */
  remove(name: string, o?: { ifVersion?: number; reason?: string }): Promise<RemoveResult>;
  /** Suspends a schedule on every replica (as `cronflock suspend`; audited). @throws ControlError when no live replica runs it */
  suspend(name: string, o?: { reason?: string }): Promise<ActionOutcome>;
  /**
   * Resumes it (as `cronflock resume`; audited): ends a run-time suspension and, when its stored definition says
   * `suspend: true`, writes the definition again without it (a new version). @throws ControlError when no live
   * replica runs it, or when only its schedule file's `suspend: true` suspends it (change it there)
   */
  resume(name: string, o?: { reason?: string }): Promise<ActionOutcome>;
  /** Runs it now as a manual occurrence (as `cronflock trigger`; audited). @throws ControlError when no live replica runs it */
  trigger(name: string, o?: { reason?: string }): Promise<ActionOutcome>;
  /** The next `n` occurrences of a stored schedule after now (Redis clock), as `cronflock next` shows them. @throws ControlError when not stored */
  next(name: string, n?: number): Promise<NextRow[]>;
  /** Its run records with due times in [from, to] (UTC ms, inclusive; default all kept), newest first, at most `limit` (default 100). */
  runs(name: string, o?: { from?: number; to?: number; limit?: number }): Promise<RunRecord[]>;
}

/** The tenants of a flock's stored schedules; see {@link connectFlock}. */
export interface FlockTenants {
  /** Every tenant with stored schedules or a limit of its own, with its count and limit; and the default limit. */
  list(): Promise<{ tenants: TenantInfo[]; defaultLimit: number | null }>;
  /**
   * Sets the most stored schedules a tenant may have, flock-wide (`'*'`: every tenant without its own; null:
   * no limit), as `cronflock tenants set-limit` does. Stored in Redis: every writer is held to it.
   * @throws LibraryArgumentError when the store refuses the tenant (not a DNS-1123 label or `*`) or the limit
   *   (not a whole number from 0 to 100,000,000, or null); nothing is written then.
   */
  setLimit(tenant: string, limit: number | null): Promise<void>;
}

/** A connection to a flock; see {@link connectFlock}. */
export interface Flock {
  readonly namespace: string;
  readonly schedules: FlockSchedules;
  readonly tenants: FlockTenants;
  /** Closes the connection (when it made one) and the queues it opened. */
  close(): Promise<void>;
}

/**
 * Connects to a flock's Redis to manage its schedules from code (see the module docs). Waits until Redis answers.
 * @throws LibraryArgumentError for an unknown option or a value of the wrong type; the namespace error (code
 *   NAMESPACE_INVALID); an Error saying in words why Redis could not be reached (within `redisTimeoutMs`).
 */
export async function connectFlock(o: ConnectFlockOptions): Promise<Flock> {
  onlyKeys('connectFlock options', o ?? null, ['redis', 'namespace', 'by', 'baseDir', 'redisTimeoutMs']);
  if (typeof o.redis !== 'string' && !(o.redis instanceof Redis) && typeof (o.redis as { call?: unknown } | undefined)?.call !== 'function') {
    throw new LibraryArgumentError('connectFlock options.redis', 'must be a Redis URL (e.g. redis://localhost:6379) or an ioredis client');
  }
  text('connectFlock options.namespace', o.namespace);
  text('connectFlock options.by', o.by);
  text('connectFlock options.baseDir', o.baseDir);
  const timeoutMs = wholeNumber('connectFlock options.redisTimeoutMs', o.redisTimeoutMs, 1, 86_400_000) ?? 10_000;
  const keys = new Keyspace(o.namespace ?? DEFAULT_OPTIONS.namespace);
  const own = typeof o.redis === 'string';
  // Our own connection waits for a Redis that does not answer only so long, and says why in words.
  const redis: RedisClient = typeof o.redis === 'string' ? connectCommands(o.redis, 'cronflock:library', undefined, timeoutMs) : o.redis;
  const by = o.by ?? `library@${hostname()}`;
  const store = new ScheduleStore(redis, keys, o.baseDir !== undefined ? { baseDir: o.baseDir } : {});
  const clock = new RedisClock(redis, undefined, keys.ns);
  const connectionErrors: string[] = [];
  const noteError = (err: Error): void => void (connectionErrors.length < 5 && connectionErrors.push(err.message));
  if (own) redis.on('error', noteError);
  let watchdog: NodeJS.Timeout | undefined;
  try {
    // Our connection does not queue commands while it connects (connect.ts): wait for it to be ready first.
    const ready = own && redis.status !== 'ready' ? new Promise<void>((resolve) => redis.once('ready', () => resolve())) : Promise.resolve();
    await Promise.race([
      ready.then(() => clock.sync()),
      new Promise<never>((_, reject) => {
        watchdog = setTimeout(() => reject(new Error('no answer')), timeoutMs);
      }),
    ]);
  } catch (err) {
    if (!own) throw err;
    redis.disconnect();
    const timedOut = (err as Error).message === 'no answer' || /^Command timed out/.test((err as Error).message);
    const problem = timedOut && connectionErrors.length === 0 ? noAnswerProblem(timeoutMs / 1000) : explainRedisError(err, connectionErrors);
    throw new Error(`cannot reach the flock's Redis at ${redactRedisUrl(o.redis as string)}: ${formatRedisProblem(problem)}`, { cause: err });
  } finally {
    clearTimeout(watchdog);
    if (own) redis.off('error', noteError);
  }
  let lanes: ReturnType<typeof openLanes> | undefined;
  const control = (): ControlContext => {
    lanes ??= openLanes(redis, keys);
    return { redis, keys, store: new Store(redis, keys), lanes, clock, options: { retentionMs: DEFAULT_OPTIONS.retentionMs, prefetchMs: DEFAULT_OPTIONS.prefetchMs }, by };
  };
  const act = (action: 'suspend' | 'resume' | 'trigger', schedule: string, reason?: string): Promise<ActionOutcome> =>
    performAction(control(), { who: by, via: 'library' }, { action, schedule, ...(reason !== undefined ? { reason } : {}) });
  // Options are checked before anything is sent: a misspelled ifVersion must not turn a compare-and-set into an
  // overwrite (arguments.ts).
  const changeOptions = (call: string, c: unknown): { ifVersion?: number; reason?: string } => {
    const v = onlyKeys(`${call} options`, c, ['ifVersion', 'reason']);
    const ifVersion = wholeNumber(`${call} options.ifVersion`, v.ifVersion, 0, Number.MAX_SAFE_INTEGER, '0: only if it does not exist');
    const reason = text(`${call} options.reason`, v.reason);
    return { ...(ifVersion !== undefined ? { ifVersion } : {}), ...(reason !== undefined ? { reason } : {}) };
  };
  const actionReason = (call: string, a: unknown): string | undefined => text(`${call} options.reason`, onlyKeys(`${call} options`, a, ['reason']).reason);
  const schedules: FlockSchedules = {
    upsert: async (def, u) => store.upsert(def, { ...changeOptions('upsert', u), by, via: 'library' }),
    get: async (name) => store.get(text('get name', name) ?? ''),
    list: async (l) => {
      const v = onlyKeys('list options', l, ['prefix', 'tenant', 'labels', 'cursor', 'limit']);
      text('list options.prefix', v.prefix);
      text('list options.tenant', v.tenant);
      text('list options.cursor', v.cursor);
      wholeNumber('list options.limit', v.limit, 1, 1000);
      return store.list(v as ListFilter & { cursor?: string; limit?: number });
    },
    remove: async (name, r) => store.remove(name, { ...changeOptions('remove', r), by, via: 'library' }),
    suspend: async (name, s) => act('suspend', name, actionReason('suspend', s)),
    resume: async (name, s) => act('resume', name, actionReason('resume', s)),
    trigger: async (name, s) => act('trigger', name, actionReason('trigger', s)),
    async next(name, count) {
      const n = wholeNumber('next n', count, 1, 10_000) ?? 5;
      const stored = await store.get(name);
      if (!stored) throw new ControlError(`schedule "${name}" is not stored`);
      const c = await checkDefinition(stored.definition, o.baseDir !== undefined ? { baseDir: o.baseDir } : {});
      if (!c.ok) throw c.error;
      await clock.sync();
      return nextRows(c.schedule, clock.now(), n, false).rows;
    },
    runs: async (name, r) => {
      const v = onlyKeys('runs options', r, ['from', 'to', 'limit']);
      const from = timeMs('runs options.from', v.from);
      const to = timeMs('runs options.to', v.to);
      const limit = wholeNumber('runs options.limit', v.limit, 1, 100_000) ?? 100;
      return listRuns(redis, keys, { schedule: name, limit, ...(from !== undefined ? { fromMs: from } : {}), ...(to !== undefined ? { toMs: to } : {}) });
    },
  };
  return {
    namespace: keys.namespace,
    schedules,
    tenants: {
      list: () => store.tenants(),
      // The store checks the tenant and the limit (the one check, also for the CLI); said in the library's words.
      setLimit: (t, n) =>
        store.setTenantLimit(t, n).catch((err: unknown) => {
          if (err instanceof TenantLimitArgumentError) throw new LibraryArgumentError(`tenants.setLimit ${err.argument}`, `${err.rule}; got ${err.got}`);
          throw err;
        }),
    },
    async close() {
      if (lanes) await settlesWithin(closeLanes(lanes), 2_000);
      if (own) redis.disconnect();
    },
  };
}

/** Options of {@link startReplica}: the replica's own, plus any option of `cronflock start` (RunnerOptions). */
export interface StartReplicaOptions extends Partial<Omit<RunnerOptions, 'namespace'>> {
  /** A Redis URL (any form `cronflock start --redis` takes). */
  redis: string;
  /** The flock's namespace (default `cronflock`). */
  namespace?: string;
  /** Schedule files to run too (a file or a directory, watched); default: the stored schedules only. */
  schedulesDir?: string;
  /** Handlers for `kind: handler` jobs, by name (one set per process: see jobs/handler.ts). */
  jobs?: Readonly<Record<string, JobHandler>>;
  /** Where to log (pino); default: JSON lines on stdout at `CRONFLOCK_LOG_LEVEL` (info). */
  logger?: Logger;
  /** Serve /metrics, /healthz and /readyz here; default none. */
  admin?: { host: string; port: number };
}

/** A replica running inside this process; see {@link startReplica}. */
export interface ReplicaHandle {
  /** This replica's name. */
  readonly name: string;
  /** The names of the schedules it runs now. */
  schedules(): string[];
  /** Stops it: no new claims; runs in flight get `graceMs` (default the shutdown grace), then are handed over. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Runs one replica of the flock in this process: the stored schedules (followed as they change) and the
 * schedule files of `schedulesDir`, with `jobs` as the handlers of `kind: handler`. Start as many as you like,
 * in as many processes: all replicas are equal.
 * @throws LibraryArgumentError for an unknown option or a Redis that is not a URL; TypeError for bad `jobs`;
 *   OptionsError for bad option values; Redis errors while reading the stored schedules.
 */
export async function startReplica(o: StartReplicaOptions): Promise<ReplicaHandle> {
  onlyKeys('startReplica options', o ?? null, ['redis', 'namespace', 'schedulesDir', 'jobs', 'logger', 'admin', 'replica', ...Object.keys(DEFAULT_OPTIONS)]);
  if (typeof o.redis !== 'string') throw new LibraryArgumentError('startReplica options.redis', 'must be a Redis URL (e.g. redis://localhost:6379)');
  const { redis, namespace, schedulesDir, jobs, logger, admin, ...rest } = o;
  const unregister = registerHandlers(jobs ?? {});
  const options = compileOptions({ ...rest, ...(namespace !== undefined ? { namespace } : {}) });
  const log = logger ?? createLogger({ replica: options.replica });
  const opened = await openStoredSchedules({ redisUrl: redis, namespace: options.namespace, replica: options.replica, log }).catch((err: unknown) => {
    unregister();
    throw err;
  });
  const sources = new ScheduleSources({ ...(schedulesDir !== undefined ? { path: schedulesDir } : {}), stored: opened.stored, log });
  let replica: Replica;
  let first;
  try {
    first = await sources.compose();
    for (const e of first.fileErrors) log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, e.reason);
    replica = await Replica.start({ redisUrl: redis, schedules: sources.withStored(first), options, log, admin: admin ?? null });
  } catch (err) {
    await opened.close();
    unregister();
    throw err;
  }
  sources.applied(first);
  sources.watch(replica, schedulesDir !== undefined);
  let stopping: Promise<void> | undefined;
  return {
    name: options.replica,
    schedules: () => [...sources.running.map((r) => r.schedule.name), ...opened.stored.applied.keys()],
    stop(graceMs) {
      stopping ??= (async () => {
        await sources.unwatch();
        await opened.close();
        await replica.stop(graceMs);
        unregister();
      })();
      return stopping;
    },
  };
}
