/**
 * One replica: clock sync, planner and executor on one Redis. All replicas are equal; start as many as you
 * like against the same Redis and namespace.
 */
import type { Logger } from '../log.js';
import { MAX_HOST_SKEW_MS, RedisClock, type ClockSample } from '../redis/clock.js';
import { connectCommands, connectWorker, redactRedisUrl, type RedisClient, type RedisTlsFiles } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { AdminServer } from '../admin/server.js';
import { Metrics } from '../admin/metrics.js';
import { FlockWideCache } from '../admin/flock-wide-cache.js';
import { feedScheduleHealth, laneJobCounts, type ScheduleMetricsMode } from '../admin/schedule-health.js';
import { explainRedisError } from '../redis/explain.js';
import { settlesWithin, sleep } from '../time/wait.js';
import { linkedSignal } from '../time/deadline.js';
import { totalBackfill } from '../records/backfill.js';
import { scheduleOfKey } from '../schedule/occurrence.js';
import { BackfillAdmission } from './backfill-admission.js';
import { Definitions } from './definitions.js';
import { CapabilityDirectory } from './handoffs.js';
import { closeLanes, openLanes, type Lanes } from './enqueue.js';
import { EngineEvents } from './events.js';
import { Executor } from './executor.js';
import { LiveReplicas } from './ownership.js';
import type { RunnerOptions } from './options.js';
import { nextTurnMs } from './redis-turns.js';
import { LOADING_THRESHOLD, Planner } from './planner.js';
import { OutboxDeliverer } from '../outbox/deliverer.js';
import { NO_TRACING, type OccurrenceTracer } from '../tracing/tracer.js';
import type { CompiledSchedule } from '../config/load.js';
import { redisFailure } from '../redis/outage.js';

/** Clock resynchronisation period. */
const CLOCK_SYNC_MS = 5_000;
/** How often the host wall clock is checked for a step (against the monotonic clock). */
const CLOCK_STEP_CHECK_MS = 250;
/** Readiness: the latest answered PING (every second) may be this old. */
const REDIS_STALE_MS = 3_000;
/** Limits of the shutdown steps that wait on Redis (the executor's own: grace + 5 s hand-over, + this). */
const STOP_STEP_MS = 3_000;
/** At a stop, how long the outbox waits for its sends in flight (then another replica takes them over). */
const OUTBOX_SEND_WAIT_MS = 5_000;

/** The replica was asked to stop while it was starting (SIGTERM while waiting for Redis). */
export class ReplicaStartAborted extends Error {
  readonly code = 'REPLICA_START_ABORTED';
  constructor() {
    super('stopped while starting');
    this.name = 'ReplicaStartAborted';
  }
}

/** A running replica. Create with {@link Replica.start}. */
export class Replica {
  private clockTimer: NodeJS.Timeout | undefined;
  private stepTimer: NodeJS.Timeout | undefined;
  /** The sync in flight, if any: a step and the periodic loop share it. */
  private syncing: Promise<void> | undefined;
  /** Whether the host clock was within MAX_HOST_SKEW_MS of the Redis clock at the last look (logged on change). */
  private hostClockInBounds = true;
  private stopping: Promise<void> | undefined;
  /**
   * Names of the schedules this replica runs (what the flock-wide cache reports). Changed in place by
   * {@link applyChanges} (a batch of stored changes costs its own size, not a new set of every name: at 100,000
   * stored schedules rebuilding it and {@link running} took ~0.2 s per batch, the most of a replica's time while
   * following 1,000 changes a second); replaced by a reload.
   */
  private names: Set<string>;
  readonly opts: RunnerOptions;
  readonly keys: Keyspace;
  readonly store: Store;
  readonly clock: RedisClock;
  readonly planner: Planner;
  readonly executor: Executor;
  readonly admission: BackfillAdmission;
  /** The published definitions, as last read. */
  readonly definitions: Definitions;
  /** The live replicas of the planner's latest membership view. */
  readonly live: LiveReplicas;
  /** What this replica reports as it plans and runs (engine/events.ts). */
  readonly events: EngineEvents;
  /** Prometheus metrics of this replica. */
  readonly metrics: Metrics;
  /** The admin server, when started. */
  readonly admin: AdminServer | undefined;
  /** The flock-wide values the admin server serves, and the loop that reads them. */
  private readonly cache: FlockWideCache;
  private readonly lanes: Lanes;
  private readonly conns: RedisClient[];
  private readonly log: Logger;
  /** Delivers the flock's notifications and heartbeat pings (runner/outbox/); set once the replica runs. */
  outbox: OutboxDeliverer | undefined;
  /** The schedules this replica runs, by name (their health is reported); changed in place like {@link names}. */
  private runningByName: Map<string, CompiledSchedule>;
  /** {@link running} as last built; null after a change, built again when next read. */
  private runningList: readonly CompiledSchedule[] | null;
  /** Traces of occurrences (runner/tracing/); flushed at stop. */
  private readonly tracing: OccurrenceTracer;

  private constructor(parts: {
    opts: RunnerOptions;
    keys: Keyspace;
    store: Store;
    clock: RedisClock;
    planner: Planner;
    executor: Executor;
    admission: BackfillAdmission;
    definitions: Definitions;
    live: LiveReplicas;
    events: EngineEvents;
    metrics: Metrics;
    admin: AdminServer | undefined;
    cache: FlockWideCache;
    names: Set<string>;
    lanes: Lanes;
    conns: RedisClient[];
    log: Logger;
    running: readonly CompiledSchedule[];
    tracing: OccurrenceTracer;
  }) {
    ({
      opts: this.opts,
      keys: this.keys,
      store: this.store,
      clock: this.clock,
      planner: this.planner,
      executor: this.executor,
      admission: this.admission,
      definitions: this.definitions,
      live: this.live,
      events: this.events,
      metrics: this.metrics,
      admin: this.admin,
      cache: this.cache,
      names: this.names,
      lanes: this.lanes,
      conns: this.conns,
      log: this.log,
      running: this.runningList,
      tracing: this.tracing,
    } = parts);
    this.runningByName = new Map(parts.running.map((s) => [s.name, s]));
  }

  /** How many schedules this replica runs now. */
  get scheduleCount(): number {
    return this.runningByName.size;
  }

  /** The schedules this replica runs (their health is reported): the same array until they change. */
  private get running(): readonly CompiledSchedule[] {
    return (this.runningList ??= [...this.runningByName.values()]);
  }

  /**
   * Starts the admin server (at once: `/healthz` answers while Redis is unreachable), connects, synchronises
   * the clock (waiting for Redis as long as it takes), and starts planning and executing `schedules`.
   * @throws ReplicaStartAborted when `signal` aborts before the replica runs (everything started is closed).
   * @throws the admin server's listen error (e.g. EACCES).
   */
  static async start(p: {
    /** Any URL form of runner/redis/url.ts: one server, Sentinel or Cluster; `rediss…` with `redisTls`. */
    redisUrl: string;
    redisTls?: RedisTlsFiles;
    schedules: readonly CompiledSchedule[];
    options: RunnerOptions;
    log: Logger;
    /** Where the replica reports runs (subscribe before it starts to miss none); default: a new one. */
    events?: EngineEvents;
    /** Where to serve /metrics, /healthz and /readyz; null: no admin server. */
    admin?: { host: string; port: number } | null;
    /** Aborting stops a start that is still waiting for Redis. */
    signal?: AbortSignal;
    /** Which schedules get per-schedule health series (`--schedule-metrics`); default all. */
    scheduleMetrics?: ScheduleMetricsMode;
    /** Traces of occurrences (runner/tracing/tracer.ts startTracing); default none. */
    tracing?: OccurrenceTracer;
    /**
     * Decides what to run once Redis answers, before the replica joins, publishes, plans or claims anything
     * (`cronflock start` reads the stored schedules here: a file that defines a stored name is refused before
     * any of it runs). Its result replaces `schedules`. Errors end the start (everything started is closed).
     */
    resolveSchedules?: () => Promise<readonly CompiledSchedule[]>;
  }): Promise<Replica> {
    const { options: o, log } = p;
    const keys = new Keyspace(o.namespace);
    const cmd = connectCommands(p.redisUrl, `cronflock:${o.replica}`, p.redisTls);
    const wrk = connectWorker(p.redisUrl, `cronflock:${o.replica}:worker`, p.redisTls);
    // Claims and final states that wait for Redis replicas (WAIT) get a connection of their own: WAIT holds up
    // every command behind it on its connection, and renewals must not wait for it.
    const durable = o.redisWaitReplicas > 0 ? connectCommands(p.redisUrl, `cronflock:${o.replica}:durable`, p.redisTls) : undefined;
    const clock = new RedisClock(cmd, undefined, keys.ns);
    let names = new Set(p.schedules.map((s) => s.name));
    /** The replica once it runs (readiness and the cache look at it). */
    let r: Replica | undefined;
    const cache = new FlockWideCache(cmd, keys, () => r?.names ?? names);
    // A schedule's tenant for the metrics' tenant label, from what the replica runs now (its map by name once it
    // runs: no copy per change of the stored schedules; before, a map of the schedules given, built once).
    let tenants: { of: readonly CompiledSchedule[]; byName: Map<string, string> } | undefined;
    const tenantOf = (name: string): string | undefined => {
      if (r) return r.runningByName.get(name)?.tenant;
      const list = p.schedules;
      if (tenants?.of !== list) tenants = { of: list, byName: new Map(list.flatMap((s) => (s.tenant !== undefined ? [[s.name, s.tenant] as const] : []))) };
      return tenants.byName.get(name);
    };
    const metrics = new Metrics({ clock, activeRuns: () => r?.executor.activeCount ?? 0, replica: o.replica, redisUp: () => cache.redisAgeMs <= REDIS_STALE_MS, tenantOf });
    // Per-schedule health metrics (alerts): computed after each cache pass, for the schedules this replica runs.
    feedScheduleHealth({
      cache,
      metrics,
      mode: p.scheduleMetrics ?? { kind: 'on' },
      schedules: () => r?.running,
      sinceMs: (name) => r?.definitions.loadedAtMs(name),
      nowMs: () => clock.now(),
    });
    const events = p.events ?? new EngineEvents();
    metrics.subscribeTo(events);
    cache.onBackfill = (counts) => metrics.setBackfill(counts);
    // Computed again only when the running list is a new one: each cache turn (every second) asked, and at
    // 1,000,000 schedules a pass over all of them per turn was ~5 % of a replica's CPU.
    let groupsOf: readonly CompiledSchedule[] | undefined;
    let groups: string[] = [];
    cache.groups = () => {
      const list = r?.running ?? p.schedules;
      if (list !== groupsOf) {
        const names = new Set<string>();
        for (const s of list) if (s.groupLimits) names.add(s.groupLimits.name);
        groups = [...names];
        groupsOf = list;
      }
      return groups;
    };
    cache.onGroupWaiting = (counts) => metrics.setGroupWaiting(counts);
    const connectionErrors: string[] = [];
    for (const c of [cmd, wrk, ...(durable ? [durable] : [])]) {
      c.on('error', (err: Error) => {
        connectionErrors.push(err.message);
        if (connectionErrors.length > 5) connectionErrors.shift();
        metrics.countConnectionError();
        log.debug({ err: err.message }, 'redis connection error');
      });
    }
    const staleAfterMs = Math.max(5_000, o.tickMs * 10);
    const readiness = (): { ready: boolean; problems: string[]; backfill?: { waiting: number; admitted: number } } => {
      const problems: string[] = [];
      if (cache.redisAgeMs > REDIS_STALE_MS) {
        problems.push(`redis: ${explainRedisError(new Error(cache.redisProblem ?? 'no answer'), connectionErrors).message}`);
      }
      if (!r) problems.push('starting: waiting for Redis');
      else {
        // Monotonic: a host clock step must not make the planner look stale (or fresh).
        const age = performance.now() - r.planner.lastTickOkAt;
        if (age > staleAfterMs) problems.push(`planner: no completed tick for ${Math.round(age)} ms`);
        if (!clock.hostClockInBounds) problems.push(hostClockProblem(clock.offsetMs));
      }
      // The backfill backlog is shown for information: it never makes a replica unready (admin/server.ts).
      const backfill = cache.backfill.size > 0 ? totalBackfill(cache.backfill) : undefined;
      return { ready: problems.length === 0, problems, ...(backfill ? { backfill } : {}) };
    };
    const admin = p.admin ? await AdminServer.start(p.admin, { metrics: () => metrics.render(), readiness }, log).catch(async (err: unknown) => {
      metrics.close();
      for (const c of [cmd, wrk, ...(durable ? [durable] : [])]) c.disconnect();
      throw err;
    }) : undefined;
    cache.start();
    let built: Replica | undefined;
    try {
      const first = await firstSync(clock, connectionErrors, p.redisUrl, log, cmd, p.signal);
      // Redis answered on the cache's connection: readiness need not wait for the cache loop's next PING (a second).
      cache.answered();
      log.info({ skewMs: Math.round(first.offsetMs), rttMs: first.rttMs }, 'clock synchronised with Redis');
      if (p.resolveSchedules) {
        p = { ...p, schedules: await p.resolveSchedules() };
        names = new Set(p.schedules.map((s) => s.name));
        if (p.signal?.aborted) throw new ReplicaStartAborted();
      }
      const lanes = openLanes(cmd, keys, (err) => log.debug({ err: err.message }, 'queue error'));
      cache.readQueues = () => laneJobCounts(lanes);
      const store = new Store(
        cmd,
        keys,
        durable ? { redis: durable, replicas: o.redisWaitReplicas, timeoutMs: o.redisWaitTimeoutMs, target: redactRedisUrl(p.redisUrl) } : undefined,
        o.redisTurnMs > 0 ? () => clock.delayUntil(nextTurnMs(clock.now(), o.redisTurnMs)) : undefined,
      );
      // A definition counts while its publisher is live (definitions.ts); the planner's membership says who is.
      const live = new LiveReplicas();
      const definitions = new Definitions(cmd, keys, o.replica, live);
      const capabilities = new CapabilityDirectory(cmd, keys, o.replica, live);
      const planner = new Planner(store, lanes, keys, clock, o, log, {
        events,
        live,
        mayPlan: (s) => definitions.isCurrent(s),
        beforeTick: (waitMs) => definitions.refreshForTick(waitMs),
        afterHeartbeat: (handoffs) => {
          if (handoffs > 0) executor.takeHandoffs();
        },
        capabilities: () => capabilities.mine(),
      });
      const executor = new Executor(store, keys, wrk, clock, o, log, {
        events,
        isCurrent: (s) => definitions.isCurrent(s),
        isPublished: (name) => definitions.has(name),
        publisherOf: (name) => definitions.publisherOf(name),
        replicaWith: (capability) => capabilities.replicaWith(capability),
        isPublishedAs: (s) => definitions.isPublishedAs(s),
        definitionSinceMs: (name) => planner.definitionSinceMs(name),
        tracer: p.tracing ?? NO_TRACING,
      });
      const admission = new BackfillAdmission(store, lanes, keys, clock, o, log);
      // Tracing (runner/tracing/): plans, attempts and final states become spans of one trace per occurrence.
      const tracing = p.tracing ?? NO_TRACING;
      if (tracing !== NO_TRACING) {
        events.on('run', (e) => tracing.onRun(e));
        events.on('planned', (x) => tracing.planned(x.items, x.startMs, x.endMs));
      }
      // A backfill run that ended (or was paused) frees its place: admit the next one now, not at the next tick.
      events.on('run', (e) => {
        if (e.origin === 'backfill' && e.state !== 'started' && e.state !== 'retrying') admission.kick();
      });
      executor.setSchedules(p.schedules);
      const replica = (built = new Replica({
        opts: o,
        keys,
        store,
        clock,
        planner,
        executor,
        admission,
        definitions,
        live,
        events,
        metrics,
        admin,
        cache,
        names,
        lanes,
        conns: [cmd, wrk, ...(durable ? [durable] : [])],
        log,
        running: p.schedules,
        tracing,
      }));
      await planner.join(p.schedules);
      await definitions.publish(p.schedules);
      if (p.signal?.aborted) throw new ReplicaStartAborted();
      executor.start();
      replica.outbox = new OutboxDeliverer(cmd, keys, { replica: o.replica, namespace: o.namespace, now: () => clock.now() }, log);
      replica.outbox.setSchedules(p.schedules);
      replica.outbox.start();
      await planner.start(p.schedules);
      admission.start();
      r = replica;
      // The closures above read the replica from here on: the start's list and name set (~3 MB at 100,000
      // schedules) would otherwise live as long as it.
      names = new Set();
      p = { ...p, schedules: [] };
      replica.syncClockLoop();
      replica.watchClockSteps();
      replica.checkHostClockBounds();
      return replica;
    } catch (err) {
      if (built) await built.stop(0); // bounded; stops whatever of it started
      else {
        await settlesWithin(cache.stop(), STOP_STEP_MS);
        await settlesWithin(admin?.close() ?? Promise.resolve(), STOP_STEP_MS);
        metrics.close();
        for (const c of [cmd, wrk, ...(durable ? [durable] : [])]) c.disconnect();
      }
      throw err;
    }
  }

  /**
   * Applies reloaded schedule files: unchanged schedules go on; a changed one applies from its next due time
   * (occurrences planned under the old definition that the new one does not have are recorded skipped); a
   * removed one stops, and its planned occurrences are recorded skipped (schedule removed). Runs in flight
   * finish. The new definitions are published: being the latest loaded, they win (definitions.ts).
   */
  async reload(schedules: readonly CompiledSchedule[]): Promise<{ added: string[]; changed: string[]; removed: string[] }> {
    // A large reload (the stored schedules' first read, a big file) holds the membership (planner.ts whileLoading).
    if (this.changeCount(schedules) >= LOADING_THRESHOLD) return this.planner.whileLoading(() => this.reloadNow(schedules));
    return this.reloadNow(schedules);
  }

  /** How many schedules a reload to `schedules` adds, changes or removes. */
  private changeCount(schedules: readonly CompiledSchedule[]): number {
    const hashes = new Map(this.running.map((s) => [s.name, s.definitionHash]));
    let n = 0;
    for (const s of schedules) {
      if (hashes.get(s.name) !== s.definitionHash) n++;
      hashes.delete(s.name);
    }
    return n + hashes.size;
  }

  private async reloadNow(schedules: readonly CompiledSchedule[]): Promise<{ added: string[]; changed: string[]; removed: string[] }> {
    const diff = this.planner.update(schedules);
    this.executor.setSchedules(schedules);
    this.outbox?.setSchedules(schedules);
    await this.definitions.publish(schedules, diff.removed);
    const byName = new Map(schedules.map((s) => [s.name, s]));
    const touched = new Set([...diff.changed, ...diff.removed]);
    const changedAtMs = this.clock.now();
    if (touched.size > 0) {
      for (const key of await this.store.redis.zrange(this.keys.pending, 0, -1)) {
        const name = scheduleOfKey(key);
        if (!touched.has(name) || key.includes('~')) continue;
        const s = byName.get(name);
        const dueMs = Date.parse(key.slice(name.length + 1));
        // Still a due time of the new definition, or already due when the change came (it runs, with the new
        // definition: the one this replica has).
        if (s && (dueMs <= changedAtMs || s.due.next(dueMs - 1) === dueMs)) continue;
        await this.store.abandon(key, 'skipped', s ? 'schedule changed: not a due time of the new definition' : 'schedule removed', this.opts.retentionMs);
      }
    }
    this.names = new Set(schedules.map((s) => s.name));
    this.runningByName = new Map(schedules.map((s) => [s.name, s]));
    this.runningList = schedules;
    if (diff.added.length + diff.changed.length + diff.removed.length > 0) this.log.info(diff, 'schedules reloaded');
    return diff;
  }

  /**
   * Applies changes to some schedules (the stored schedules' change stream: runner/sources/stored.ts) by the
   * rule of {@link reload}, touching only those schedules: a changed one applies from its next due time (its
   * planned occurrences that the new definition does not have are recorded skipped), a removed one stops after
   * the run in flight (its planned occurrences are recorded skipped: schedule removed). The planned occurrences
   * are found through each touched schedule's run index, not by reading every pending occurrence.
   */
  async applyChanges(upserted: readonly CompiledSchedule[], removed: readonly string[]): Promise<{ added: string[]; changed: string[]; removed: string[] }> {
    // A large batch (a full read after a trimmed change stream) holds the membership (planner.ts whileLoading).
    if (upserted.length + removed.length >= LOADING_THRESHOLD) return this.planner.whileLoading(() => this.applyChangesNow(upserted, removed));
    return this.applyChangesNow(upserted, removed);
  }

  private async applyChangesNow(upserted: readonly CompiledSchedule[], removed: readonly string[]): Promise<{ added: string[]; changed: string[]; removed: string[] }> {
    const diff = this.planner.applyChanges(upserted, removed);
    this.executor.changeSchedules(upserted, diff.removed);
    this.outbox?.changeSchedules(upserted, diff.removed);
    const addedOrChanged = new Set([...diff.added, ...diff.changed]);
    await this.definitions.publishChanges(upserted.filter((s) => addedOrChanged.has(s.name)), diff.removed);
    const byName = new Map(upserted.map((s) => [s.name, s]));
    const touched = [...diff.changed, ...diff.removed];
    const changedAtMs = this.clock.now();
    if (touched.length > 0) {
      const fromMs = changedAtMs - this.opts.horizonMs;
      const p = this.store.redis.pipeline();
      for (const name of touched) p.zrangebyscore(this.keys.runs(name), fromMs, '+inf');
      const lists = ((await p.exec()) ?? []).map(([err, keys]) => {
        if (err) throw err;
        return keys as string[];
      });
      const candidates = lists.flat().filter((key) => !key.includes('~'));
      const q = this.store.redis.pipeline();
      for (const key of candidates) q.zscore(this.keys.pending, key);
      const scores = (await q.exec()) ?? [];
      for (const [i, key] of candidates.entries()) {
        if (scores[i]?.[1] === null || scores[i]?.[1] === undefined) continue; // not planned-and-unclaimed
        const name = scheduleOfKey(key);
        const s = byName.get(name);
        const dueMs = Date.parse(key.slice(name.length + 1));
        // Still a due time of the new definition, or already due when the change came (it runs, with the new
        // definition: the one this replica has).
        if (s && (dueMs <= changedAtMs || s.due.next(dueMs - 1) === dueMs)) continue;
        await this.store.abandon(key, 'skipped', s ? 'schedule changed: not a due time of the new definition' : 'schedule removed', this.opts.retentionMs);
      }
    }
    if (diff.added.length + diff.changed.length + diff.removed.length > 0) {
      for (const name of diff.removed) {
        this.runningByName.delete(name);
        this.names.delete(name);
      }
      for (const s of upserted) {
        this.runningByName.set(s.name, s);
        this.names.add(s.name);
      }
      this.runningList = null;
      this.log.info({ added: diff.added.length, changed: diff.changed.length, removed: diff.removed.length }, 'stored schedules applied');
    }
    return diff;
  }

  private syncClockLoop(): void {
    this.clockTimer = setTimeout(() => {
      void this.syncClock().finally(() => {
        if (!this.stopping) this.syncClockLoop();
      });
    }, CLOCK_SYNC_MS);
    this.clockTimer.unref?.();
  }

  /** One clock sample (shared with a sync already in flight); logs a sample that disagreed with the estimate. */
  private syncClock(): Promise<void> {
    this.syncing ??= this.clock
      .sync()
      .then((s) => {
        if (s.jumpMs !== undefined) this.log.warn({ jumpMs: s.jumpMs, skewMs: Math.round(s.offsetMs) }, 'Redis clock estimate re-based: a sample disagreed with the previous ones');
        else this.log.debug({ skewMs: Math.round(s.offsetMs), rttMs: s.rttMs }, 'clock sample');
      })
      .catch((err: Error) => {
        const f = redisFailure(err);
        this.log.warn(f.fields, `clock sync failed: ${f.text}`);
      })
      .finally(() => {
        this.syncing = undefined;
        this.checkHostClockBounds();
      });
    return this.syncing;
  }

  /**
   * Watches the host wall clock for steps (it moved unlike the monotonic clock): the Redis-time estimate does
   * not move with it (it rests on the monotonic clock), but BullMQ and the measured skew do, so a step is logged,
   * counted and measured again at once rather than at the next periodic sync.
   */
  private watchClockSteps(): void {
    this.clock.detectStep(); // first reference point
    this.stepTimer = setInterval(() => {
      const stepMs = this.clock.detectStep();
      if (stepMs === null) return;
      this.metrics.clockSteps.inc();
      this.log.warn({ stepMs, skewMs: Math.round(this.clock.offsetMs) }, 'host clock stepped');
      void this.syncClock();
    }, CLOCK_STEP_CHECK_MS);
    this.stepTimer.unref?.();
  }

  /** Logs when the host clock leaves or re-enters MAX_HOST_SKEW_MS of the Redis clock (readiness follows it). */
  private checkHostClockBounds(): void {
    const inBounds = this.clock.hostClockInBounds;
    if (inBounds === this.hostClockInBounds) return;
    this.hostClockInBounds = inBounds;
    const skewMs = Math.round(this.clock.offsetMs);
    if (inBounds) this.log.info({ skewMs }, 'host clock back within bounds of the Redis clock');
    else this.log.warn({ skewMs, limitMs: MAX_HOST_SKEW_MS }, hostClockProblem(skewMs));
  }

  /**
   * Stops: no new plans or claims; running runs get `graceMs` to finish, then are handed over to other
   * replicas at once. Closes the connections. Bounded whatever Redis does: each step that waits on Redis has a
   * time limit (a hung or unreachable Redis answers nothing), so this resolves within about
   * `graceMs + 20 s` (the outbox step included; ~`graceMs + 14 s` when Redis has stopped answering); what could not be handed over is re-claimed by another replica when its lease lapses.
   */
  stop(graceMs = this.opts.shutdownGraceMs): Promise<void> {
    this.stopping ??= (async () => {
      if (this.clockTimer) clearTimeout(this.clockTimer);
      if (this.stepTimer) clearInterval(this.stepTimer);
      const step = async (what: string, p: Promise<unknown>, ms: number): Promise<void> => {
        if (!(await settlesWithin(p, ms))) this.log.warn({ step: what, waitedMs: ms }, 'shutdown step did not finish in time; going on');
      };
      // Whether Redis answered lately: if not, the steps below that wait on it only wait for their limits, so
      // independent ones wait side by side and the outbox does not wait for sends it could not record anyway.
      const redisAnswering = this.cache.redisAgeMs <= REDIS_STALE_MS;
      // A definitions refresh a tick stopped waiting for may still be reading (or re-publishing): waited for too.
      await step('planner and backfill admission', Promise.all([this.planner.stop(), this.admission.stop(), this.definitions.settled()]), STOP_STEP_MS);
      // The executor waits graceMs for runs, then up to 5 s for the hand-overs, then for BullMQ's worker to
      // close, which never happens while Redis is unreachable: once no run is held, give it STOP_STEP_MS more.
      const executorStopped = this.executor.stop(graceMs);
      const runsGone = (async (): Promise<void> => {
        const until = performance.now() + graceMs + 5_000;
        while (this.executor.activeCount > 0 && performance.now() < until) await sleep(50);
        if (!(await settlesWithin(executorStopped, STOP_STEP_MS))) {
          this.log.warn({ step: 'queue worker', waitedMs: STOP_STEP_MS }, 'shutdown step did not finish in time; going on');
        }
      })();
      await step('runs', Promise.race([executorStopped, runsGone]), graceMs + 5_000 + STOP_STEP_MS);
      // After the runs: the outcomes of the runs that just finished are sent, and sends in flight settled (up to
      // OUTBOX_SEND_WAIT_MS), before this replica leaves the outbox's live consumers, which lets another replica
      // take over what is left at once.
      // A replica whose Redis does not answer cannot record a send either: another replica takes its entries over
      // once its outbox liveness lapses.
      const outboxWaitMs = redisAnswering ? OUTBOX_SEND_WAIT_MS : 0;
      await step('outbox', this.outbox?.stop(outboxWaitMs) ?? Promise.resolve(), outboxWaitMs + STOP_STEP_MS);
      await step(
        'queues, flock-wide cache and admin server',
        Promise.all([closeLanes(this.lanes), this.cache.stop(), this.admin?.close() ?? Promise.resolve()]),
        STOP_STEP_MS,
      );
      await step('tracing', this.tracing.shutdown(), STOP_STEP_MS);
      this.metrics.close();
      for (const c of this.conns) c.disconnect();
    })();
    return this.stopping;
  }
}

/** Why a replica whose host clock is far off the Redis clock is not ready (readiness, log line). */
function hostClockProblem(skewMs: number): string {
  const off = `${Math.abs(Math.round(skewMs / 1000))} s ${skewMs < 0 ? 'ahead of' : 'behind'}`;
  return `host clock: ${off} the Redis clock (limit ${MAX_HOST_SKEW_MS / 1000} s); runs still follow the Redis clock, but fix this host's time synchronisation`;
}

/**
 * The first clock sample. Replicas often start before Redis does (docker compose, Kubernetes): keep trying,
 * with what is wrong in words in a warning every attempt (a wrong password otherwise shows only as
 * "max retries", and a Sentinel setup stays silent), until Redis answers or `signal` aborts.
 * @throws ReplicaStartAborted when `signal` aborts.
 */
async function firstSync(
  clock: RedisClock,
  connectionErrors: readonly string[],
  url: string,
  log: Logger,
  conn: RedisClient,
  signal?: AbortSignal,
): Promise<ClockSample> {
  // Commands fail at once while disconnected (no offline queue): give the first connection a moment.
  if (conn.status !== 'ready') {
    const ready = new AbortController();
    conn.once('ready', () => ready.abort());
    // linkedSignal, not AbortSignal.any: the latter can miss an abort after a garbage collection (time/deadline.ts).
    const either = linkedSignal([ready.signal, signal]);
    try {
      await sleep(3_000, either.signal);
    } finally {
      either.dispose();
    }
  }
  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw new ReplicaStartAborted();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer within 5 s')), 5_000);
    });
    try {
      return await Promise.race([clock.sync(), timeout]);
    } catch (err) {
      const problem = explainRedisError(err, connectionErrors);
      log.warn({ redis: redactRedisUrl(url), attempt, problem: problem.message, hint: problem.hint }, `cannot reach Redis yet (${problem.message}); retrying`);
    } finally {
      clearTimeout(timer);
    }
    await sleep(Math.min(500 * attempt, 5_000), signal);
  }
}
