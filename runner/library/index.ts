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
import { lookup } from 'node:dns/promises';
import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { performAction, type ActionOutcome } from '../api/actions.js';
import { isOutcomeUnknown, outcomeUnknownMessage, REDIS_OUTCOME_UNKNOWN, RedisOutcomeUnknownError } from '../api/outcome-unknown.js';
import { nextRows, type NextRow } from '../cli/next-rows.js';
import type { ConfigError } from '../config/errors.js';
import { ControlError, type ControlContext } from '../engine/control.js';
import { closeLanes, openLanes } from '../engine/enqueue.js';
import { compileOptions, DEFAULT_OPTIONS, type RunnerOptions } from '../engine/options.js';
import { Replica } from '../engine/replica.js';
import { createLogger } from '../log.js';
import { LogCapture } from '../history/log-capture.js';
import { startReplicaExtras } from '../api/replica-extras.js';
import { packageVersion } from '../cli/package-info.js';
import { listRuns, type RunRecord } from '../records/runs.js';
import { RedisClock } from '../redis/clock.js';
import type { RedisClient } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { ScheduleSources } from '../sources/sources.js';
import { openStoredSchedules } from '../sources/stored.js';
import { checkDefinition, MAX_DEFINITION_BYTES, ScheduleDefinitionError, type DefinitionProblem, type ScheduleDefinition } from '../store/definition.js';
import { IF_EXISTS, NameOwnedError, ScheduleStore, TenantLimitArgumentError, TenantLimitError, VersionConflictError, type ListFilter, type NotStored, type RemoveResult, type StoredSchedule, type TenantInfo, type UpsertResult } from '../store/store.js';
import { registerHandlers, type HandlerContext, type JobHandler } from '../../jobs/handler.js';
import { settlesWithin } from '../time/wait.js';
import { connectCommands, redactRedisUrl } from '../redis/connect.js';
import { explainRedisError, formatRedisProblem, noAnswerProblem, type RedisSettingNames } from '../redis/explain.js';
import { decodeListCursor, encodeListCursor, FlockClosedError, labelsFilter, LibraryArgumentError, listenAddress, onlyKeys, scheduleName, text, timeMs, wholeNumber } from './arguments.js';

export { MAX_DEFINITION_BYTES, IF_EXISTS, ScheduleDefinitionError, VersionConflictError, NameOwnedError, TenantLimitError, ControlError, LibraryArgumentError, FlockClosedError, RedisOutcomeUnknownError, REDIS_OUTCOME_UNKNOWN };
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
   * replica applies it from its next due time. `ifVersion` makes it a compare-and-set: a version n: only if the
   * stored version is n; `0`: create only, refused when it exists (Temporal's create, HTTP `If-None-Match: *`);
   * `'exists'`: change only, refused when it does not exist (Temporal's update, HTTP `If-Match: *`). A failed
   * condition is a {@link VersionConflictError} naming it (`condition`: `absent` | `exists` | `version`, `actual`:
   * the stored version, 0 when none); nothing is written. Refusals are values (`ok: false`): {@link ScheduleDefinitionError} (nothing written; every
   * problem with its field; also a value JSON cannot carry, NOT_JSON with its path such as `job.params.when`, and
   * a definition over 64 KiB as JSON, TOO_LARGE), {@link VersionConflictError}, {@link NameOwnedError} (a file or Schedule resource
   * of a live replica defines the name), {@link TenantLimitError} (its `tenant` is at its limit of stored
   * schedules). Recorded in the audit log (via `library`, who: `by`, the version), with `reason` when given.
   * @throws RedisOutcomeUnknownError (code `REDIS_OUTCOME_UNKNOWN`) when the change was sent and Redis did not answer
   *   within `redisTimeoutMs` (paused, overloaded): it MAY have taken effect, or may when Redis answers; read it back
   *   (`get`: its version) before retrying with `ifVersion`.
   */
  upsert(def: ScheduleDefinition, o?: { ifVersion?: number | 'exists'; reason?: string }): Promise<UpsertResult>;
  /** The stored schedule, or undefined. */
  get(name: string): Promise<StoredSchedule | undefined>;
  /**
   * One page in name order: `prefix`, `tenant` and `labels` (an object such as `{ plan: 'gold' }`; every one must
   * match) filter, `cursor` is the previous page's as handed back (opaque), `limit` ≤ 1000 (default 100). With
   * `labels` a page may be short while `cursor` is set.
   * @throws LibraryArgumentError for labels that are not an object of strings, or a cursor list() did not hand out.
   */
  list(o?: ListFilter & { cursor?: string; limit?: number }): Promise<{ items: StoredSchedule[]; cursor?: string }>;
  /**
   * Removes a stored schedule: it stops after the run in flight; its planned occurrences are recorded skipped.
   * Audited. A name that is not stored answers NOT_FOUND; when a schedule file or Schedule resource defines it,
   * the message names that source and how to remove it there (`error.source`).
   * @throws RedisOutcomeUnknownError when the removal was sent and Redis did not answer within `redisTimeoutMs`: it
   *   MAY have taken effect; read it back (`get`) before retrying.
   */
  remove(name: string, o?: { ifVersion?: number | 'exists'; reason?: string }): Promise<RemoveResult>;
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
  /** Its run records with due times in [from, to] (UTC ms, inclusive; default all kept), newest first, at most `limit` (default 100). @throws LibraryArgumentError when `from` is after `to` */
  runs(name: string, o?: { from?: number; to?: number; limit?: number }): Promise<RunRecord[]>;
}

/** The tenants of a flock's stored schedules; see {@link connectFlock}. */
export interface FlockTenants {
  /** Every tenant with stored schedules or a limit of its own, with its count and limit; and the default limit. */
  list(): Promise<{ tenants: TenantInfo[]; defaultLimit: number | null }>;
  /**
   * Sets the most stored schedules a tenant may have, flock-wide, as `cronflock tenants set-limit` does. Stored
   * in Redis: every writer is held to it. `tenant`: a DNS-1123 label, or `'*'`: the default, for every tenant
   * without a limit of its own. `limit`: a whole number from 0 to 100,000,000; `null`: no limit (for a tenant: its
   * own "no limit", which overrides the default; for `'*'`: no default); `'default'`: the tenant drops its own
   * limit (or "no limit") and is held to the default again.
   * @throws LibraryArgumentError when the store refuses the tenant (not a DNS-1123 label or `*`) or the limit
   *   (none of the above, or `'default'` for `'*'`); nothing is written then.
   */
  setLimit(tenant: string, limit: number | null | 'default'): Promise<void>;
}

/** A connection to a flock; see {@link connectFlock}. */
export interface Flock {
  readonly namespace: string;
  readonly schedules: FlockSchedules;
  readonly tenants: FlockTenants;
  /**
   * Closes the connection (when it made one) and the queues it opened. Every later call of the flock's methods
   * throws {@link FlockClosedError}; calling close again does nothing.
   */
  close(): Promise<void>;
}

/** How the library's Redis errors name the settings: its own options, not the CLI's flags. */
const LIBRARY_SETTING_NAMES: RedisSettingNames = {
  url: 'the redis option (a URL such as redis://host:6379)',
  timeout: 'the redisTimeoutMs option',
  tlsCa: "a rediss:// URL and the CA in Node's NODE_EXTRA_CA_CERTS, or an ioredis client of yours with tls options",
};

/** Connection errors that waiting does not mend: nothing listens, or the host name does not resolve. */
const HOPELESS_CONNECT = /ECONNREFUSED|ENOTFOUND/;

/**
 * Connects to a flock's Redis to manage its schedules from code (see the module docs). Waits until Redis answers,
 * at most `redisTimeoutMs`; a refused connection (nothing listens there) or a host name that does not resolve
 * fails at once.
 * @throws LibraryArgumentError for an unknown option or a value of the wrong type; the namespace error (code
 *   NAMESPACE_INVALID); an Error saying in words why Redis could not be reached, with a hint naming the option
 *   to check (`redis`, `redisTimeoutMs`).
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
  let hopeless: ((err: Error) => void) | undefined;
  const noteError = (err: Error): void => {
    if (connectionErrors.length < 5) connectionErrors.push(err.message);
    // Nothing listens there (or no such host): retrying for redisTimeoutMs would only delay the same answer.
    if (HOPELESS_CONNECT.test(`${(err as NodeJS.ErrnoException).code ?? ''} ${err.message}`)) hopeless?.(err);
  };
  if (own) redis.on('error', noteError);
  let watchdog: NodeJS.Timeout | undefined;
  try {
    // Our connection does not queue commands while it connects (connect.ts): wait for it to be ready first.
    const ready = own && redis.status !== 'ready' ? new Promise<void>((resolve) => redis.once('ready', () => resolve())) : Promise.resolve();
    await Promise.race([
      ready.then(() => clock.sync()),
      new Promise<never>((_, reject) => {
        watchdog = setTimeout(() => reject(new Error('no answer')), timeoutMs);
        hopeless = reject;
      }),
    ]);
  } catch (err) {
    if (!own) throw err;
    redis.disconnect();
    const timedOut = (err as Error).message === 'no answer' || /^Command timed out/.test((err as Error).message);
    const problem =
      timedOut && connectionErrors.length === 0 ? noAnswerProblem(timeoutMs / 1000, LIBRARY_SETTING_NAMES) : explainRedisError(err, connectionErrors, LIBRARY_SETTING_NAMES);
    throw new Error(`cannot reach the flock's Redis at ${redactRedisUrl(o.redis as string)}: ${formatRedisProblem(problem)}`, { cause: err });
  } finally {
    clearTimeout(watchdog);
    if (own) redis.off('error', noteError);
  }
  let lanes: ReturnType<typeof openLanes> | undefined;
  let closed = false;
  /** Refuses a call after close(), in words (else ioredis says "Stream isn't writeable …"). */
  const open = (call: string): void => {
    if (closed) throw new FlockClosedError(call);
  };
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
    // 'exists': only if it exists, any version (the store's IF_EXISTS, HTTP If-Match: *).
    const ifVersion =
      v.ifVersion === 'exists'
        ? IF_EXISTS
        : wholeNumber(`${call} options.ifVersion`, v.ifVersion, 0, Number.MAX_SAFE_INTEGER, `0: only if it does not exist; or 'exists': only if it exists, at any version`);
    const reason = text(`${call} options.reason`, v.reason);
    return { ...(ifVersion !== undefined ? { ifVersion } : {}), ...(reason !== undefined ? { reason } : {}) };
  };
  // A change sent that got no answer within redisTimeoutMs may have taken effect: said so (the API's
  // REDIS_OUTCOME_UNKNOWN, api/outcome-unknown.ts), not thrown as a plain failure.
  const outcomeUnknown = (err: unknown, name: string, call: 'upsert' | 'remove'): never => {
    if (!isOutcomeUnknown(err)) throw err;
    throw new RedisOutcomeUnknownError(
      name,
      `schedules.${call}(${JSON.stringify(name)}): ${outcomeUnknownMessage(
        `no answer within ${timeoutMs} ms, the redisTimeoutMs option`,
        'schedules.get: its version, or cronflock audit',
        call === 'upsert' ? 'with ifVersion: the version read (0: create only) so a retry cannot apply it twice' : 'with ifVersion: the version read, if it is still stored',
      )}`,
      { cause: err },
    );
  };
  const actionReason = (call: string, a: unknown): string | undefined => text(`${call} options.reason`, onlyKeys(`${call} options`, a, ['reason']).reason);
  const schedules: FlockSchedules = {
    upsert: async (def, u) => {
      open('schedules.upsert');
      const name = typeof (def as { name?: unknown } | null)?.name === 'string' ? (def as { name: string }).name : '';
      return store.upsert(def, { ...changeOptions('upsert', u), by, via: 'library' }).catch((err: unknown) => outcomeUnknown(err, name, 'upsert'));
    },
    get: async (name) => (open('schedules.get'), store.get(text('get name', name) ?? '')),
    list: async (l) => {
      open('schedules.list');
      const v = onlyKeys('list options', l, ['prefix', 'tenant', 'labels', 'cursor', 'limit']);
      const prefix = text('list options.prefix', v.prefix);
      const tenant = text('list options.tenant', v.tenant);
      const labels = labelsFilter('list options.labels', v.labels);
      const after = v.cursor === undefined ? undefined : decodeListCursor(v.cursor);
      const limit = wholeNumber('list options.limit', v.limit, 1, 1000);
      const page = await store.list({
        ...(prefix !== undefined ? { prefix } : {}),
        ...(tenant !== undefined ? { tenant } : {}),
        ...(labels !== undefined ? { labels } : {}),
        ...(after !== undefined ? { cursor: after } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      return page.cursor === undefined ? { items: page.items } : { items: page.items, cursor: encodeListCursor(page.cursor) };
    },
    remove: async (name, r) => {
      open('schedules.remove');
      const n = scheduleName('remove name', name);
      return store.remove(n, { ...changeOptions('remove', r), by, via: 'library' }).catch((err: unknown) => outcomeUnknown(err, n, 'remove'));
    },
    suspend: async (name, s) => (open('schedules.suspend'), act('suspend', scheduleName('suspend name', name), actionReason('suspend', s))),
    resume: async (name, s) => (open('schedules.resume'), act('resume', scheduleName('resume name', name), actionReason('resume', s))),
    trigger: async (name, s) => (open('schedules.trigger'), act('trigger', scheduleName('trigger name', name), actionReason('trigger', s))),
    async next(name, count) {
      open('schedules.next');
      scheduleName('next name', name);
      const n = wholeNumber('next n', count, 1, 10_000) ?? 5;
      const stored = await store.get(name);
      if (!stored) throw new ControlError(`schedule "${name}" is not stored`);
      const c = await checkDefinition(stored.definition, o.baseDir !== undefined ? { baseDir: o.baseDir } : {});
      if (!c.ok) throw c.error;
      await clock.sync();
      return nextRows(c.schedule, clock.now(), n, false).rows;
    },
    runs: async (name, r) => {
      open('schedules.runs');
      scheduleName('runs name', name);
      const v = onlyKeys('runs options', r, ['from', 'to', 'limit']);
      const from = timeMs('runs options.from', v.from);
      const to = timeMs('runs options.to', v.to);
      if (from !== undefined && to !== undefined && from > to) {
        throw new LibraryArgumentError('runs options.from', `${new Date(from).toISOString()} is after runs options.to (${new Date(to).toISOString()}); from must not be after to (both UTC ms)`);
      }
      const limit = wholeNumber('runs options.limit', v.limit, 1, 100_000) ?? 100;
      return listRuns(redis, keys, { schedule: name, limit, ...(from !== undefined ? { fromMs: from } : {}), ...(to !== undefined ? { toMs: to } : {}) });
    },
  };
  return {
    namespace: keys.namespace,
    schedules,
    tenants: {
      list: async () => (open('tenants.list'), store.tenants()),
      // The store checks the tenant and the limit (the one check, also for the CLI); said in the library's words.
      setLimit: async (t, n) => {
        open('tenants.setLimit');
        return store.setTenantLimit(t, n).catch((err: unknown) => {
          if (err instanceof TenantLimitArgumentError) throw new LibraryArgumentError(`tenants.setLimit ${err.argument}`, `${err.rule}; got ${err.got}`);
          throw err;
        });
      },
    },
    async close() {
      if (closed) return;
      closed = true;
      if (lanes) await settlesWithin(closeLanes(lanes), 2_000);
      if (own) redis.disconnect();
    },
  };
}

/**
 * Refuses a runner option of the wrong type before compileOptions sees it (a `lockMs: '4s'` became NaN there and
 * was reported as a stalledIntervalMs problem): the numbers are plain numbers, durations in ms.
 * @throws LibraryArgumentError naming the option.
 */
function checkRunnerOptionTypes(v: Record<string, unknown>): void {
  for (const [k, x] of Object.entries(v)) {
    if (x === undefined) continue;
    const dflt = (DEFAULT_OPTIONS as unknown as Record<string, unknown>)[k];
    const want = k === 'replica' ? 'string' : typeof dflt;
    if (want === 'number' && (typeof x !== 'number' || !Number.isFinite(x) || x < 0)) {
      const example = k.endsWith('Ms') ? `a number of ms, e.g. ${k}: ${String(dflt)} (durations are ms here, not strings such as "4s")` : `a number, e.g. ${k}: ${String(dflt)}`;
      throw new LibraryArgumentError(`startReplica options.${k}`, `must be ${example}; got ${typeof x === 'string' ? JSON.stringify(x) : String(x)}`);
    }
    if (want === 'string' && typeof x !== 'string') throw new LibraryArgumentError(`startReplica options.${k}`, `must be a string; got ${typeof x}`);
  }
}

/** Refuses `jobs` that is not an object of functions. @throws LibraryArgumentError naming `jobs.<name>`. */
function checkJobs(jobs: unknown): void {
  if (jobs === undefined) return;
  if (typeof jobs !== 'object' || jobs === null || Array.isArray(jobs)) {
    throw new LibraryArgumentError('startReplica options.jobs', 'must be an object of handler name → async function, e.g. { sendReport: async ({ params, signal }) => … }');
  }
  for (const [name, fn] of Object.entries(jobs)) {
    if (typeof fn !== 'function') {
      throw new LibraryArgumentError(`startReplica options.jobs.${name}`, `must be a function (the handler of kind: handler jobs with handler: ${name}), e.g. async ({ params, occurrence, signal }) => …; got ${typeof fn === 'string' ? JSON.stringify(fn) : typeof fn}`);
    }
  }
}

/** Refuses a schedule path that is not there, as `cronflock start <path>` does. @throws LibraryArgumentError */
async function checkSchedulePath(path: string): Promise<void> {
  const st = await stat(path).catch((err: NodeJS.ErrnoException) => {
    const why = err.code === 'ENOENT' ? 'does not exist' : `cannot be read (${err.code ?? err.message})`;
    throw new LibraryArgumentError('startReplica options.schedulesDir', `${JSON.stringify(path)} ${why}: pass a schedule file or a directory of *.yaml / *.yml files, or leave it out to run the stored schedules alone`);
  });
  if (!st.isDirectory() && !st.isFile()) throw new LibraryArgumentError('startReplica options.schedulesDir', `${JSON.stringify(path)} is neither a file nor a directory`);
}

/**
 * A refusal of `startReplica({ schedulesDir })` whose schedule files hold no valid schedule (every file refused, or
 * none there), as `cronflock start <path>` refuses them (exit 2); nothing was started. `errors` are the files'
 * errors, each with `file`, `line`, `col`, `field`, `reason`, `hint` (as `cronflock validate` prints them).
 */
export class ScheduleFilesError extends Error {
  readonly code = 'SCHEDULE_FILES_INVALID';
  constructor(
    readonly path: string,
    readonly errors: readonly ConfigError[],
  ) {
    super(
      `startReplica options.schedulesDir: no valid schedules in ${JSON.stringify(path)}; nothing to run` +
        (errors.length > 0 ? `:\n${errors.map((e) => `  ${e.format()}`).join('\n')}` : ' (no schedule files there)'),
    );
    this.name = 'ScheduleFilesError';
  }
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
  /** Serve /metrics, /healthz and /readyz here: `{ host, port }` or `'host:port'` (as `--admin`); default none (`'off'`). */
  admin?: { host: string; port: number } | string | null;
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
 * @throws LibraryArgumentError for an unknown option, a value of the wrong type (a duration as a string:
 *   `lockMs: '4s'`; a handler that is not a function: `jobs.h1`), a Redis that is not a URL, or a `schedulesDir`
 *   that does not exist, an `admin` host that does not resolve or cannot be listened on; ScheduleFilesError when
 *   `schedulesDir` holds no valid schedule (every file refused: `errors` lists why); OptionsError for option values that do not fit together (runner/engine/options.ts);
 *   Redis errors while reading the stored schedules.
 */
export async function startReplica(o: StartReplicaOptions): Promise<ReplicaHandle> {
  const v = onlyKeys('startReplica options', o ?? null, [...new Set(['redis', 'namespace', 'schedulesDir', 'jobs', 'logger', 'admin', 'replica', ...Object.keys(DEFAULT_OPTIONS)])]);
  if (typeof o.redis !== 'string') throw new LibraryArgumentError('startReplica options.redis', 'must be a Redis URL (e.g. redis://localhost:6379)');
  checkRunnerOptionTypes(v);
  const { redis, namespace, schedulesDir, jobs, logger, admin, ...rest } = o;
  const adminAt = listenAddress('startReplica options.admin', admin);
  checkJobs(jobs);
  if (text('startReplica options.schedulesDir', schedulesDir) !== undefined) await checkSchedulePath(schedulesDir!);
  // A host that does not resolve is refused before anything starts (it failed as ENOTFOUND from deep inside).
  if (adminAt) {
    await lookup(adminAt.host).catch((err: NodeJS.ErrnoException) => {
      throw new LibraryArgumentError('startReplica options.admin', `the host ${JSON.stringify(adminAt.host)} does not resolve (${err.code ?? err.message}); give host:port with an address or name of this machine, e.g. '127.0.0.1:9464' ('0.0.0.0:9464': every interface)`);
    });
  }
  const unregister = registerHandlers(jobs ?? {});
  const options = compileOptions({ ...rest, ...(namespace !== undefined ? { namespace } : {}) });
  // Run log lines kept with the history (runner/history/log-capture.ts), as `cronflock start` keeps them: they are
  // taken from the default logger's lines; a logger of your own writes where you say, and its lines are not kept.
  const capture = new LogCapture();
  const log = logger ?? createLogger({ replica: options.replica }, capture);
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
    // As `cronflock start <path>` (which exits 2): files of which nothing is valid are refused whole; some refused
    // files beside valid ones are logged and ignored. A file refused only because the store holds one of its
    // names is not counted here (the CLI checks its files before it reads the store, and starts).
    if (schedulesDir !== undefined && first.runs.length === 0 && first.storeClashes.length === 0) throw new ScheduleFilesError(schedulesDir, first.fileErrors);
    if (first.refusedFiles.length > 0) log.warn({ refused: first.refusedFiles }, 'refused files are ignored; valid files run');
    replica = await Replica.start({ redisUrl: redis, schedules: sources.withStored(first), options, log, admin: adminAt });
  } catch (err) {
    await opened.close();
    unregister();
    const code = (err as NodeJS.ErrnoException).code;
    if (adminAt && (err as NodeJS.ErrnoException).syscall === 'listen' && code !== undefined) {
      throw new LibraryArgumentError('startReplica options.admin', `cannot listen on ${adminAt.host}:${adminAt.port} (${code}${code === 'EADDRINUSE' ? ': the port is in use' : code === 'EADDRNOTAVAIL' ? ': not an address of this machine' : ''}); pick another address or port (port 0: any free port)`);
    }
    throw err;
  }
  sources.applied(first);
  sources.watch(replica, schedulesDir !== undefined);
  // The same extras as `cronflock start` (runner/api/replica-extras.ts), without a dashboard: run log lines and the
  // replica's self-description for the flock page; the flock's --history is read, not set.
  const stopExtras = await startReplicaExtras(replica, { redisUrl: redis, capture, version: packageVersion(), log }).catch((err: unknown) => {
    log.warn({ err: (err as Error).message }, 'run log lines are not kept by this replica: its history connection failed');
    return async () => undefined;
  });
  let stopping: Promise<void> | undefined;
  return {
    name: options.replica,
    schedules: () => [...sources.running.map((r) => r.schedule.name), ...opened.stored.schedules().map((s) => s.name)],
    stop(graceMs) {
      stopping ??= (async () => {
        await sources.unwatch();
        await opened.close();
        await replica.stop(graceMs);
        await stopExtras();
        unregister();
      })();
      return stopping;
    },
  };
}
