/**
 * One replica: clock sync, planner and executor on one Redis. All replicas are equal; start as many as you
 * like against the same Redis and namespace.
 */
import { Queue } from 'bullmq';
import type { Logger } from '../log.js';
import { RedisClock, type ClockSample } from '../redis/clock.js';
import { connectCommands, connectWorker, redactRedisUrl, type RedisClient, type RedisTlsFiles } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { AdminServer } from '../admin/server.js';
import { Metrics } from '../admin/metrics.js';
import { Definitions } from './definitions.js';
import { Executor, type RunEvent } from './executor.js';
import type { RunnerOptions } from './options.js';
import { Planner } from './planner.js';
import type { EngineSchedule } from './schedule.js';

/** Clock resynchronisation period. */
const CLOCK_SYNC_MS = 5_000;

/** A running replica. Create with {@link Replica.start}. */
export class Replica {
  private clockTimer: NodeJS.Timeout | undefined;
  /** Prometheus metrics of this replica. */
  metrics!: Metrics;
  /** The admin server, when started. */
  admin: AdminServer | undefined;
  /** The published definitions, as last read. */
  definitions!: Definitions;
  private stopped = false;

  private constructor(
    readonly opts: RunnerOptions,
    readonly keys: Keyspace,
    readonly store: Store,
    readonly clock: RedisClock,
    readonly planner: Planner,
    readonly executor: Executor,
    private readonly queue: Queue,
    private readonly conns: RedisClient[],
    private readonly log: Logger,
  ) {}

  /**
   * Connects, synchronises the clock, and starts planning and executing `schedules`.
   * @throws when Redis cannot be reached for the first clock sample.
   */
  static async start(p: {
    /** Any URL form of runner/redis/url.ts: one server, Sentinel or Cluster; `rediss…` with `redisTls`. */
    redisUrl: string;
    redisTls?: RedisTlsFiles;
    schedules: readonly EngineSchedule[];
    options: RunnerOptions;
    log: Logger;
    onRun?: (e: RunEvent) => void;
    /** Where to serve /metrics, /healthz and /readyz; null: no admin server. */
    admin?: { host: string; port: number } | null;
  }): Promise<Replica> {
    const { options: o, log } = p;
    const keys = new Keyspace(o.namespace);
    const cmd = connectCommands(p.redisUrl, `cronflock:${o.replica}`, p.redisTls);
    const wrk = connectWorker(p.redisUrl, `cronflock:${o.replica}:worker`, p.redisTls);
    let onRedisError = (): void => undefined;
    let lastRedisError = '';
    for (const c of [cmd, wrk]) {
      c.on('error', (err: Error) => {
        lastRedisError = err.message;
        onRedisError();
        log.debug({ err: err.message }, 'redis connection error');
      });
    }
    const store = new Store(cmd, keys);
    const clock = new RedisClock(cmd, undefined, keys.ns);
    const first = await firstSync(clock, () => lastRedisError, p.redisUrl, log, cmd);
    log.info({ skewMs: Math.round(first.offsetMs), rttMs: first.rttMs }, 'clock synchronised with Redis');
    const queue = new Queue(keys.queueName, { connection: cmd, prefix: keys.ns });
    queue.on('error', (err) => log.debug({ err: err.message }, 'queue error'));
    const planner = new Planner(store, queue, keys, clock, o, log);
    const executor = new Executor(store, keys, wrk, clock, o, log);
    const metrics = new Metrics({ redis: cmd, keys, clock, activeRuns: () => executor.activeCount, replica: o.replica });
    onRedisError = () => metrics.redisErrors.inc();
    executor.onRun = (e) => {
      metrics.onRun(e);
      p.onRun?.(e);
    };
    planner.onFinal = (x) => metrics.onPlannedFinal(x);
    planner.onPlannedLate = (x) => metrics.onPlannedLate(x);
    executor.setSchedules(p.schedules);
    const r = new Replica(o, keys, store, clock, planner, executor, queue, [cmd, wrk], log);
    r.metrics = metrics;
    const definitions = new Definitions(cmd, keys, o.replica);
    await planner.join(p.schedules);
    await definitions.publish(p.schedules);
    r.definitions = definitions;
    planner.mayPlan = (s) => definitions.isCurrent(s);
    planner.beforeTick = () => definitions.refresh();
    // A definition counts while its publisher is live (definitions.ts); the planner's membership says who is.
    definitions.isLive = (replica) => planner.liveReplicas?.has(replica) ?? true;
    executor.isCurrent = (s) => definitions.isCurrent(s);
    executor.isPublished = (name) => definitions.has(name);
    executor.start();
    await planner.start(p.schedules);
    r.syncClockLoop();
    if (p.admin) {
      r.admin = await AdminServer.start(
        p.admin,
        metrics,
        { ping: () => cmd.ping(), lastTickOkAt: () => planner.lastTickOkAt, staleAfterMs: Math.max(5_000, o.tickMs * 10) },
        log,
      );
    }
    return r;
  }

  /**
   * Applies reloaded schedule files: unchanged schedules go on; a changed one applies from its next due time
   * (occurrences planned under the old definition that the new one does not have are recorded skipped); a
   * removed one stops, and its planned occurrences are recorded skipped (schedule removed). Runs in flight
   * finish. The new definitions are published: being the latest loaded, they win (definitions.ts).
   */
  async reload(schedules: readonly EngineSchedule[]): Promise<{ added: string[]; changed: string[]; removed: string[] }> {
    const diff = this.planner.update(schedules);
    this.executor.setSchedules(schedules);
    await this.definitions.publish(schedules, diff.removed);
    const byName = new Map(schedules.map((s) => [s.name, s]));
    const touched = new Set([...diff.changed, ...diff.removed]);
    if (touched.size > 0) {
      for (const key of await this.store.redis.zrange(this.keys.pending, 0, -1)) {
        const name = key.slice(0, key.lastIndexOf('@'));
        if (!touched.has(name) || key.includes('~')) continue;
        const s = byName.get(name);
        const dueMs = Date.parse(key.slice(name.length + 1));
        if (s && s.due.next(dueMs - 1) === dueMs) continue; // still a due time of the new definition
        await this.store.abandon(key, 'skipped', s ? 'schedule changed: not a due time of the new definition' : 'schedule removed', this.opts.retentionMs);
      }
    }
    this.log.info(diff, 'schedules reloaded');
    return diff;
  }

  private syncClockLoop(): void {
    this.clockTimer = setTimeout(() => {
      this.clock
        .sync()
        .then((s) => this.log.debug({ skewMs: Math.round(s.offsetMs), rttMs: s.rttMs }, 'clock sample'))
        .catch((err: Error) => this.log.warn({ err: err.message }, 'clock sync failed'))
        .finally(() => {
          if (!this.stopped) this.syncClockLoop();
        });
    }, CLOCK_SYNC_MS);
    this.clockTimer.unref?.();
  }

  /**
   * Stops: no new plans or claims; running runs get `graceMs` to finish, then are handed over to other
   * replicas at once. Closes the connections.
   */
  async stop(graceMs = this.opts.shutdownGraceMs): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.clockTimer) clearTimeout(this.clockTimer);
    await this.planner.stop();
    await this.executor.stop(graceMs);
    await this.queue.close().catch(() => undefined);
    await this.admin?.close();
    for (const c of this.conns) c.disconnect();
  }
}

/**
 * The first clock sample. Replicas often start before Redis does (docker compose, Kubernetes): keep trying,
 * with the connection's own error in a warning every attempt (a wrong password otherwise shows only as
 * "max retries", and a Sentinel setup stays silent), until Redis answers. SIGTERM ends the wait.
 */
async function firstSync(clock: RedisClock, lastError: () => string, url: string, log: Logger, conn: RedisClient): Promise<ClockSample> {
  // Commands fail at once while disconnected (no offline queue): give the first connection a moment.
  if (conn.status !== 'ready') {
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, 3_000);
      function done(): void {
        clearTimeout(t);
        conn.off('ready', done);
        resolve();
      }
      conn.once('ready', done);
    });
  }
  for (let attempt = 1; ; attempt++) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer within 5 s')), 5_000);
    });
    try {
      return await Promise.race([clock.sync(), timeout]);
    } catch (err) {
      const cause = lastError();
      log.warn(
        { redis: redactRedisUrl(url), attempt, err: (err as Error).message, cause: cause || undefined },
        'cannot reach Redis yet; retrying',
      );
    } finally {
      clearTimeout(timer);
    }
    await new Promise((r) => setTimeout(r, Math.min(500 * attempt, 5_000)));
  }
}
