/**
 * The executor: a BullMQ worker whose processor turns a delivered occurrence into at most one live claim.
 *
 * BullMQ gives at-least-once delivery, stall detection (a job whose lock expired goes back to wait) and fast
 * hand-off between replicas (blocking pops, markers). It does not fence: a stale worker's side effects go on,
 * and a failed lock renewal only emits an event. So each delivery goes through the claim script (one live
 * claimant, fencing token, the Redis clock), the run is tied to a {@link ClaimHolder} whose AbortSignal fires
 * when the claim is lost, and the result is recorded only by the current claimant.
 *
 * When a claim ends without a recorded result (lost, or handed over on SIGTERM), the job is put back in
 * `wait` at once so another replica claims it without waiting for BullMQ's stall check.
 *
 * One worker per lane (enqueue.ts): the live lane's `concurrency` slots take only on-time occurrences; the
 * backlog lane's `backlogConcurrency` slots take triggers, resume runs, catch-up runs and admitted backfill.
 * Both run the same processor: the lanes differ in which slots a run takes, not in how it is claimed.
 *
 * With `--batch-size` > 1 a live-lane job may carry a batch of occurrences of one fire-time slot (enqueue.ts):
 * each goes through the same processor on its own (its own fire time, claim, fencing token, run slot of
 * `concurrency`), and whatever would go back to the queue goes on as a job of its own ({@link Delivery}).
 */
import { DelayedError, Queue, WaitingError, Worker, type Job } from 'bullmq';
import { setMaxListeners } from 'node:events';
import type { RedisClient } from '../redis/connect.js';
import { findJobKind } from '../../jobs/registry.js';
import { isJobSkipped, RESULT_LIMIT, type JobContext } from '../../jobs/types.js';
import type { Logger } from '../log.js';
import type { Keyspace } from '../redis/keys.js';
import { RedisJobCoordination } from '../redis/job-locks.js';
import type { RedisClock } from '../redis/clock.js';
import type { FinishResult, Store } from '../redis/store.js';
import { ClaimHolder, ClaimLostError } from './claim.js';
import type { EngineEvents, RunEvent } from './events.js';
import type { RunnerOptions } from './options.js';
import { isBatch, occurrenceJob, type BatchJobData, type DeliveryJobData, type OccurrenceJobData } from './enqueue.js';
import type { CompiledSchedule } from '../config/load.js';
import { delayJobUntil, shouldGiveBackEarly } from './queue-clock.js';
import { signatureHeaders } from '../notify/signing.js';
import { NO_TRACING, type OccurrenceTracer } from '../tracing/tracer.js';
import { nextTurnMs } from './redis-turns.js';
import { armBlackoutAbort, startingDeadlineForClaimMs } from './windows.js';
import { sleep } from '../time/wait.js';
import { outboxOn } from '../notify/events.js';
import { redisFailure } from '../redis/outage.js';
import { isRedisUnavailable } from '../redis/explain.js';
import { HANDOFF_TAKE_LIMIT, parseHandoff } from './handoffs.js';

/** outboxOn per compiled schedule (a reload makes new objects: no stale entry is read). */
const OUTBOX_ON = new WeakMap<CompiledSchedule, string>();

/** What the executor needs from the rest of the replica, given at construction. */
export interface ExecutorRequirements {
  /** Where runs are reported (`run`). */
  events: EngineEvents;
  /** Whether this replica's definition of a schedule is the published one (see definitions.ts); default: yes. */
  isCurrent?: (s: CompiledSchedule) => boolean;
  /** Whether some live replica publishes a definition of this schedule name; default: none does. */
  isPublished?: (name: string) => boolean;
  /** The live replica whose definition of this schedule name is the published one, if any (handoffs.ts). */
  publisherOf?: (name: string) => string | undefined;
  /** A live replica that can run what this one lacks (a job kind's `requires`), if any (handoffs.ts). */
  replicaWith?: (capability: string) => Promise<string | undefined>;
  /**
   * Whether the published definition of a schedule is this replica's (same hash): then the claim and finish carry
   * the schedule's `outboxOn` and the scripts need not read the published definition per outcome; default: no.
   */
  isPublishedAs?: (s: CompiledSchedule) => boolean;
  /**
   * When this replica's definition of a schedule took effect here (Redis ms: added or changed; planner.ts), or
   * undefined: an occurrence due before it is run even when the definition no longer has its due time (it was
   * already due when the change came); default: unknown (such an occurrence is recorded skipped).
   */
  definitionSinceMs?: (name: string) => number | undefined;
  /** Traces of attempts (runner/tracing/): gives each job its span context; default: no tracing. */
  tracer?: OccurrenceTracer;
}

/**
 * How one delivered occurrence goes back when it does not end here: each ends the delivery (throws).
 * `slot` takes a run slot before the claim and returns its release.
 */
interface Delivery {
  /** Back to wait at once (a hand-over, a lost claim). */
  back(): Promise<never>;
  /** Delivered again at `redisMs` on the Redis clock. */
  backUntil(redisMs: number): Promise<never>;
  /** Delivered again at the retry time `redisMs` (throws when that cannot be arranged). */
  retryAt(redisMs: number): Promise<never>;
  slot(): Promise<() => void>;
}

/** An occurrence of a batch went on as a job of its own: it is delivered, as far as the batch is concerned. */
class HandedOn extends Error {
  constructor() {
    super('handed on as a job of its own');
    this.name = 'HandedOn';
  }
}

/** Counting semaphore of run slots, first come first served; a stop releases the waiters (with no slot). */
class Slots {
  private free: number;
  private readonly waiters: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  /** Resolves with the slot's release once one is free, or with a no-op when `signal` fires first. */
  acquire(signal: AbortSignal): Promise<() => void> {
    const release = (): void => {
      const next = this.waiters.shift();
      if (next) next();
      else this.free++;
    };
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(once(release));
    }
    if (signal.aborted) return Promise.resolve(() => undefined);
    return new Promise((resolve) => {
      const take = (): void => {
        signal.removeEventListener('abort', gone);
        resolve(once(release));
      };
      const gone = (): void => {
        const i = this.waiters.indexOf(take);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(() => undefined);
      };
      this.waiters.push(take);
      signal.addEventListener('abort', gone, { once: true });
    });
  }
}

function once(f: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      f();
    }
  };
}

interface ActiveRun {
  holder: ClaimHolder;
}

/** Whether a claim was held by a gate (a concurrency group or a rate limit: lua/includes/gates.lua labels). */
function isGate(holder: string): boolean {
  return holder.startsWith('group ') || holder.startsWith('rate limit of ');
}

/** Added to the local wait for a fire time, so that the claim reaches Redis at or just after it. */
/** A gate's wait (a rate limit's) longer than this goes back to the delayed set instead of holding a slot, ms. */
const HELD_HERE_MAX_MS = 2_000;
/** The shortest delay of a held-back delivery given back to the delayed set (each round costs BullMQ moves), ms. */
const HELD_GIVE_BACK_MIN_MS = 1_000;
const FIRE_MARGIN_MS = 2;
/** Longest wait between two sends of a finish while Redis is away (finishReachable). */
const FINISH_RETRY_MAX_MS = 250;

/** Runs claimed occurrences on this replica. */
export class Executor {
  private workers: Worker<DeliveryJobData>[] = [];
  /** The live lane's queue, to hand occurrences of a batch on as jobs of their own (batchSize > 1). */
  private liveQueue: Queue | undefined;
  /** The live lane's run slots when occurrences come in batches (batchSize > 1): `concurrency` of them. */
  private runSlots: Slots | undefined;
  private readonly stopping = new AbortController();
  /** Deliveries here waiting for a slot of a concurrency group: woken when a run of it ends here. */
  private readonly groupWaiters = new Map<string, Set<() => void>>();
  /** Deliveries waiting here because a claim was held back (bounded by {@link heldHereLimit}). */
  private heldHere = 0;
  /** At most a quarter of the worker slots wait for held-back claims (at least one). */
  private readonly heldHereLimit: number;
  private readonly active = new Map<string, ActiveRun>();
  /**
   * Runs that ended here whose finish waits for Redis (finishReachable), by occurrence key: a delivery of the same
   * occurrence (BullMQ gave its job back after the outage) waits for it instead of claiming it again.
   */
  private readonly pendingFinishes = new Map<string, Promise<unknown>>();
  /** When this replica last warned that it cannot run a schedule (monotonic ms), per schedule. */
  private readonly unavailableWarned = new Map<string, number>();
  private schedules = new Map<string, CompiledSchedule>();
  private readonly isCurrent: (s: CompiledSchedule) => boolean;
  private readonly isPublished: (name: string) => boolean;
  private readonly publisherOf: (name: string) => string | undefined;
  private readonly replicaWith: (capability: string) => Promise<string | undefined>;
  /** Deliveries handed to this replica that are being processed (handoffs.ts); a stop waits for them. */
  private readonly handedHere = new Set<Promise<unknown>>();
  private takingHandoffs = false;
  private readonly isPublishedAs: (s: CompiledSchedule) => boolean;
  private readonly definitionSinceMs: (name: string) => number | undefined;
  private readonly events: EngineEvents;
  /** Traces of attempts (runner/tracing/); none unless tracing is on. */
  private readonly tracer: OccurrenceTracer;

  constructor(
    private readonly store: Store,
    private readonly keys: Keyspace,
    private readonly connection: RedisClient,
    private readonly clock: RedisClock,
    private readonly opts: RunnerOptions,
    private readonly log: Logger,
    needs: ExecutorRequirements,
  ) {
    this.events = needs.events;
    this.isCurrent = needs.isCurrent ?? (() => true);
    this.isPublished = needs.isPublished ?? (() => false);
    this.publisherOf = needs.publisherOf ?? (() => undefined);
    this.replicaWith = needs.replicaWith ?? (() => Promise.resolve(undefined));
    this.isPublishedAs = needs.isPublishedAs ?? (() => false);
    this.definitionSinceMs = needs.definitionSinceMs ?? (() => undefined);
    this.tracer = needs.tracer ?? NO_TRACING;
    this.heldHereLimit = Math.max(1, Math.floor(opts.concurrency / 4));
    // Every job waiting for its fire time listens on this signal: thousands at high rates, by design.
    setMaxListeners(0, this.stopping.signal);
  }

  /** Sets the schedules this replica knows; deliveries of other schedules are recorded skipped. */
  setSchedules(schedules: readonly CompiledSchedule[]): void {
    this.schedules = new Map(schedules.map((s) => [s.name, s]));
  }

  /** Changes some of the schedules this replica knows (stored schedules' changes); the others stay. */
  changeSchedules(upserted: readonly CompiledSchedule[], removed: readonly string[]): void {
    for (const name of removed) this.schedules.delete(name);
    for (const s of upserted) this.schedules.set(s.name, s);
  }

  /** Starts taking deliveries: one worker on each lane's queue. */
  start(): void {
    // Members of batches, and deliveries handed to this replica (handoffs.ts), go back as jobs of their own
    // through this queue and take these run slots.
    this.liveQueue = new Queue(this.keys.queueName, { connection: this.connection, prefix: this.keys.ns });
    this.liveQueue.on('error', (err) => this.log.debug({ err: err.message }, 'queue error'));
    this.runSlots = new Slots(this.opts.concurrency);
    const lanes: [string, number][] = [
      [this.keys.queueName, this.opts.concurrency],
      [this.keys.backlogQueueName, this.opts.backlogConcurrency],
    ];
    this.workers = lanes.map(([queueName, concurrency]) => {
      const worker = new Worker<DeliveryJobData>(queueName, (job, token) => this.processJob(job, token), {
        connection: this.connection,
        prefix: this.keys.ns,
        concurrency,
        lockDuration: this.opts.lockMs,
        stalledInterval: this.opts.stalledIntervalMs,
        // Stalls are counted by the claim script, which records the failure; BullMQ must not fail jobs silently.
        maxStalledCount: 1_000_000,
        autorun: true,
      });
      worker.on('error', (err) => this.log.debug({ err: err.message, queue: queueName }, 'queue worker error'));
      // Losing BullMQ's lock only means the job may be delivered again; the claim (our lease) decides who runs,
      // and a second delivery waits ('held') until this claim ends. So the run goes on.
      worker.on('lockRenewalFailed', (ids: string[]) =>
        this.log.warn({ jobs: ids }, 'queue lock lost; the claim lease still decides who runs'),
      );
      return worker;
    });
  }

  /** Number of claims held now. */
  get activeCount(): number {
    return this.active.size;
  }

  /**
   * Stops taking deliveries; lets running runs finish within `graceMs`, then aborts the rest and hands them over
   * (released claim, job back in wait) so another replica claims them at once.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.workers.length === 0) return;
    const closing = Promise.all(this.workers.map((w) => w.close())); // stops fetching; resolves when processors returned
    this.stopping.abort(); // jobs still waiting for their fire time go back at once
    // Monotonic: a step of the host clock must not cut the grace short or stretch it.
    const deadline = performance.now() + graceMs;
    while (this.active.size > 0 && performance.now() < deadline) await sleep(50);
    for (const run of this.active.values()) run.holder.abort(new ClaimLostError('replica shutting down: handed over', 'handover'));
    // Wait for the hand-overs (release + job back in wait), not for job code that ignores its signal: that
    // code is fenced, and the process must be able to exit.
    const handoverDeadline = performance.now() + 5_000;
    while (this.active.size > 0 && performance.now() < handoverDeadline) await sleep(20);
    await Promise.allSettled([...this.handedHere]);
    await closing;
    await this.liveQueue?.close().catch(() => undefined);
  }

  /**
   * Closes an occurrence this replica will not run (the abandon script) and reports the state recorded: the one
   * asked for, or failed when the occurrence had started; nothing is reported when it was already final or is
   * held by a live claim.
   * @param minAgeMs close it only once its fire time is this far in the past on the Redis clock.
   * @returns false when it is younger than that (nothing recorded: the caller gives the delivery back).
   */
  private async closeUnrun(base: Omit<RunEvent, 'state'>, state: 'skipped' | 'missed', reason: string, minAgeMs?: number): Promise<boolean> {
    const r = await this.store.abandon(base.key, state, reason, this.opts.retentionMs, { minAgeMs });
    if (r.outcome === 'too-early') return false;
    this.emit(r.outcome === 'recorded' ? { ...base, state: r.state, error: reason } : { ...base, state: 'final' });
    return true;
  }

  private emit(e: RunEvent): void {
    this.events.report('run', e);
  }

  /** The worker of the lane (queue) a job came from: BullMQ moves a job only through its own queue's keys. */
  private workerOf(job: Job<DeliveryJobData>): Worker<DeliveryJobData> {
    const w = this.workers.find((x) => x.name === job.queueName);
    if (!w) throw new Error(`no worker of queue ${job.queueName}`); // unreachable: every job comes from one of ours
    return w;
  }

  private async giveBack(job: Job<DeliveryJobData>, token: string | undefined): Promise<never> {
    await job.moveToWait(token).catch(() => undefined); // fails harmlessly when our queue lock is gone
    throw new WaitingError();
  }

  /**
   * Puts the job back in the delayed set, due at `redisMs` on the Redis clock (not this host's), and ends this
   * delivery. Fails harmlessly when our queue lock is gone (then BullMQ's stall check delivers it again).
   */
  private async giveBackUntil(job: Job<DeliveryJobData>, token: string | undefined, redisMs: number): Promise<never> {
    await delayJobUntil(this.workerOf(job), job, token, this.clock, redisMs).catch(() => undefined);
    throw new DelayedError();
  }

  /** The delivery of a job of its own: it goes back, or waits for a retry, as that job. */
  private singleDelivery(job: Job<DeliveryJobData>, token: string | undefined): Delivery {
    return {
      back: () => this.giveBack(job, token),
      backUntil: (redisMs) => this.giveBackUntil(job, token, redisMs),
      retryAt: async (redisMs) => {
        await delayJobUntil(this.workerOf(job), job, token, this.clock, redisMs);
        throw new DelayedError();
      },
      slot: async () => () => undefined, // the job's worker slot is its slot
    };
  }

  /**
   * The delivery of one occurrence of a batch job: what goes back goes back as a job of its own (id from the
   * occurrence key, so at most one exists), and the batch counts the occurrence as delivered. Its run takes one of
   * the live lane's `concurrency` run slots once its fire time has come.
   */
  private memberDelivery(d: OccurrenceJobData): Delivery {
    const handOn = async (redisMs: number): Promise<never> => {
      await this.addSingle(d, redisMs);
      throw new HandedOn();
    };
    return {
      back: () => handOn(this.clock.now()),
      backUntil: handOn,
      retryAt: handOn,
      slot: () => this.runSlots!.acquire(this.stopping.signal),
    };
  }

  /** Adds a job of its own for an occurrence, due at `redisMs` on the Redis clock (live lane). */
  private async addSingle(d: OccurrenceJobData, redisMs: number): Promise<void> {
    const j = occurrenceJob(this.keys, d, this.clock.now(), redisMs);
    await this.liveQueue!.add(j.name, j.data, j.opts);
  }

  /** A job of either kind: one occurrence, or a batch (enqueue.ts). */
  private processJob(job: Job<DeliveryJobData>, token?: string): Promise<unknown> {
    const d = job.data;
    if (isBatch(d)) return this.processBatch(job as Job<BatchJobData>, token);
    return this.processSafely(d, this.singleDelivery(job, token));
  }

  /**
   * Leaves a delivery this replica may not or cannot run: hands it to replica `to` (the live publisher of the
   * winning definition, or one that can run the job: handoffs.ts; none: no hand-off) and gives its job back for a
   * second as well, so a failed or lost hand-off only costs the shortcut.
   */
  private async leaveTo(d: OccurrenceJobData, dl: Delivery, to: string | undefined): Promise<never> {
    if (to !== undefined && to !== this.opts.replica) {
      const delivery: OccurrenceJobData = { schedule: d.schedule, key: d.key, dueMs: d.dueMs, fireMs: d.fireMs, origin: d.origin ?? 'schedule' };
      await this.store.handOff(to, delivery, this.opts.horizonMs).catch((err: unknown) => this.log.debug({ occurrence: d.key, err: String(err) }, 'hand-off failed; the delivery goes back to the queue alone'));
    }
    return dl.backUntil(this.clock.now() + 1000);
  }

  /**
   * Takes the deliveries handed to this replica that fire within the prefetch and processes each as a member of
   * a batch (what goes back goes back as a job of its own). Called after a heartbeat that found some; one call at
   * a time; entries firing later are taken at a later heartbeat.
   */
  takeHandoffs(): void {
    if (this.takingHandoffs || this.stopping.signal.aborted || !this.liveQueue) return;
    this.takingHandoffs = true;
    void this.store
      .takeHandoffs(this.opts.replica, this.opts.prefetchMs + this.opts.tickMs, HANDOFF_TAKE_LIMIT)
      .then((entries) => {
        for (const raw of entries) {
          const d = parseHandoff(raw);
          if (!d) continue;
          const p = this.processSafely(d, this.memberDelivery(d)).catch(() => undefined);
          this.handedHere.add(p);
          void p.finally(() => this.handedHere.delete(p));
        }
      })
      .catch((err: unknown) => this.log.debug({ err: String(err) }, 'taking hand-offs failed; next heartbeat'))
      .finally(() => {
        this.takingHandoffs = false;
      });
  }

  /**
   * A batch job: each occurrence waits for its own fire time and is claimed on its own (in parallel). The job
   * completes when every occurrence has ended here or gone on as a job of its own (a retry, a give-back, a
   * hand-over on SIGTERM). A batch delivered a second time (its holder died: BullMQ's stall check put it back)
   * is split at once into one job per occurrence, so the dead holder's occurrences spread over the replicas and
   * are re-claimed one by one (each claim waits for a lapsed lease, counts the stall, and fences with a new
   * token). If an occurrence can be neither finished nor handed on (Redis away), the batch goes back to the
   * delayed set for a second and is then split the same way.
   */
  private async processBatch(job: Job<BatchJobData>, token: string | undefined): Promise<unknown> {
    const members = job.data.batch;
    if (job.attemptsStarted > 1 || this.stopping.signal.aborted) {
      const now = this.clock.now();
      await this.liveQueue!.addBulk(members.map((d) => occurrenceJob(this.keys, d, now, d.fireMs - this.opts.prefetchMs)));
      return undefined;
    }
    const results = await Promise.allSettled(members.map((d) => this.processSafely(d, this.memberDelivery(d))));
    const failed = results.find((r) => r.status === 'rejected' && !(r.reason instanceof HandedOn));
    if (failed) return this.giveBackUntil(job, token, this.clock.now() + 1000);
    return undefined;
  }

  /**
   * A delivery that fails for an unexpected reason (Redis unreachable mid-way, a bug) goes back to the queue
   * a second later rather than into BullMQ's failed set, where nothing would deliver it again. If even that
   * fails (Redis away), the job keeps its place in `active` and BullMQ's stall check delivers it again.
   */
  private async processSafely(d: OccurrenceJobData, dl: Delivery): Promise<unknown> {
    try {
      return await this.process(d, dl);
    } catch (err) {
      if (err instanceof WaitingError || err instanceof DelayedError || err instanceof HandedOn) throw err;
      const f = redisFailure(err);
      this.log.warn({ occurrence: d.key, ...f.fields }, `delivery failed: ${f.text}; retrying in 1 s`);
      return dl.backUntil(this.clock.now() + 1000);
    }
  }

  private async process(d: OccurrenceJobData, dl: Delivery): Promise<unknown> {
    const o = this.opts;
    const base = { schedule: d.schedule, key: d.key, dueMs: d.dueMs, fireMs: d.fireMs, replica: o.replica, origin: d.origin };
    const sched = this.schedules.get(d.schedule);
    if (!sched) {
      // With another replica running this schedule (a rollout with different files), leave the delivery to it
      // until the horizon has passed on the Redis clock.
      const reason = `schedule "${d.schedule}" is not defined on replica ${o.replica}`;
      const closed = await this.closeUnrun(base, 'skipped', reason, this.isPublished(d.schedule) ? o.horizonMs : undefined);
      if (!closed) return this.leaveTo(d, dl, this.publisherOf(d.schedule));
      this.log.warn({ occurrence: d.key }, reason);
      return;
    }
    const kind = findJobKind(sched.job.kind);
    if (!kind) throw new Error(`unknown job kind ${sched.job.kind}`); // refused at load; unreachable
    if (!this.isCurrent(sched)) {
      // A newer definition of this schedule is published: leave the run to a replica that has it; past the
      // horizon on the Redis clock, nobody ran it in time.
      if (await this.closeUnrun(base, 'missed', 'no replica ran the current definition within the horizon', o.horizonMs)) return;
      this.log.debug({ occurrence: d.key }, 'a newer definition is published; handing the delivery to its publisher');
      return this.leaveTo(d, dl, this.publisherOf(d.schedule));
    }
    const unavailable = kind.unavailable?.(sched.job);
    if (unavailable !== undefined) {
      // This replica cannot run it (kind: handler without that handler): leave it, unclaimed, to a replica that
      // can; past the horizon on the Redis clock, nobody could.
      if (await this.closeUnrun(base, 'skipped', unavailable, o.horizonMs)) return;
      // Handed to a replica that can run it (handoffs.ts); said at warn once a minute per schedule only when no
      // live replica publishes what it needs: a handler name no replica registers (a typo) would otherwise stay
      // silent until the horizon records the occurrences skipped, and a warning while another replica runs them
      // (every replica start, before the others' capabilities are read) would cry wolf.
      const need = kind.requires?.(sched.job);
      const to = need === undefined ? undefined : await this.replicaWith(need).catch(() => undefined);
      const now = performance.now();
      if (to === undefined && now - (this.unavailableWarned.get(d.schedule) ?? -Infinity) >= 60_000) {
        this.unavailableWarned.set(d.schedule, now);
        this.log.warn({ schedule: d.schedule, occurrence: d.key, reason: unavailable }, `cannot run ${d.schedule} here (${unavailable}); left for a replica that can`);
      }
      return this.leaveTo(d, dl, to);
    }
    const origin = d.origin ?? 'schedule';
    if (origin === 'schedule' && sched.due.next(d.dueMs - 1) !== d.dueMs && !(d.dueMs <= (this.definitionSinceMs(d.schedule) ?? -Infinity))) {
      // Planned under an earlier definition whose cron is gone: the current one (ours, checked above) does not
      // have this due time, which came after the change. One due before the change was already due: it runs
      // (with the definition this replica has), as a changed CronJob leaves the Jobs it created.
      await this.closeUnrun(base, 'skipped', 'schedule changed: not a due time of the current definition');
      return;
    }

    // Wait for the fire time on a local timer set from the Redis clock; a shutdown hands the job back. The
    // margin covers the timer's and the clock estimate's millisecond rounding: without it most first claims
    // arrived 0–2 ms early and were refused ('early'), a second claim round trip for ~75 % of occurrences.
    // A delivery far earlier than any healthy worker promotes (a host clock far ahead promoted it) goes back to
    // the delayed set instead of holding a slot until then.
    const untilFire = this.clock.delayUntil(d.fireMs);
    if (shouldGiveBackEarly(untilFire, o.prefetchMs, this.clock)) return dl.backUntil(d.fireMs - o.prefetchMs);
    // With Redis turns (options.ts redisTurnMs), the claim waits for the first turn at or after that instant, when
    // the other replicas' calls of the turn reach Redis too.
    await sleep(o.redisTurnMs > 0 ? this.clock.delayUntil(nextTurnMs(d.fireMs + FIRE_MARGIN_MS, o.redisTurnMs)) : untilFire + FIRE_MARGIN_MS, this.stopping.signal);
    // This replica ran it and is still sending its outcome (Redis was away): that finish decides, not a new claim.
    const finishing = this.pendingFinishes.get(d.key);
    if (finishing) await finishing.catch(() => undefined);
    const releaseSlot = await dl.slot();
    try {
      return await this.claimAndRun(d, dl, sched, kind, base);
    } finally {
      releaseSlot();
    }
  }

  /** Claims the occurrence (asking again while the claim script says wait) and runs it when claimed. */
  private async claimAndRun(
    d: OccurrenceJobData,
    dl: Delivery,
    sched: CompiledSchedule,
    kind: NonNullable<ReturnType<typeof findJobKind>>,
    base: Omit<RunEvent, 'state'>,
  ): Promise<unknown> {
    const o = this.opts;
    let claim;
    let gateWait: { gate: string; sinceMono: number } | undefined;
    for (;;) {
      if (this.stopping.signal.aborted) return dl.back();
      const sentMono = performance.now();
      claim = await this.store.claim({
        replica: o.replica,
        schedule: d.schedule,
        key: d.key,
        dueMs: d.dueMs,
        fireMs: d.fireMs,
        lockMs: o.lockMs,
        horizonMs: o.horizonMs,
        retentionMs: o.retentionMs,
        startingDeadlineMs: startingDeadlineForClaimMs(sched, d), // a blackout delay counts against it
        earlyToleranceMs: 0,
        catchUpGraceMs: o.catchUpGraceMs,
        maxStalls: o.maxStalls,
        origin: d.origin ?? 'schedule',
        concurrencyPolicy: sched.concurrencyPolicy,
        maxConcurrent: sched.maxConcurrent,
        gates: { group: sched.groupLimits, rateLimit: sched.rateLimit },
        outboxOn: this.knownOutboxOn(d.schedule),
      });
      if (claim.status === 'early') {
        // Not yet on the Redis clock (a retry's time, or an early promotion): wait here, or give it back.
        if (shouldGiveBackEarly(claim.waitMs, o.prefetchMs, this.clock)) return dl.backUntil(this.clock.now() + claim.waitMs - o.prefetchMs);
        await sleep(claim.waitMs + 1, this.stopping.signal);
      }
      else if (claim.status === 'held') {
        const gate = isGate(claim.holder);
        if (gate) gateWait ??= { gate: claim.holder, sinceMono: sentMono };
        const waitMs = Math.min(claim.waitMs + 5, o.lockMs);
        // A delivery waiting here holds one of the worker's slots. Deliveries held back by a group, a rate limit
        // or the concurrency policy could take all of them and stop every other schedule of the replica, so at
        // most a quarter of the slots wait here; the rest, and waits longer than a moment (a rate limit's), go
        // back to the delayed set and ask again later. Their place in line is kept in Redis (the gate's waiting
        // set, the active set), not by the slot.
        if (this.heldHere >= this.heldHereLimit || (gate && waitMs > HELD_HERE_MAX_MS)) {
          return dl.backUntil(this.clock.now() + Math.max(waitMs, HELD_GIVE_BACK_MIN_MS));
        }
        this.heldHere++;
        try {
          if (gate) await this.waitForGate(sched.groupLimits?.name, waitMs); // a run of the group ending here wakes it
          else await sleep(waitMs, this.stopping.signal);
        } finally {
          this.heldHere--;
        }
      }
      else if (claim.status === 'claimed') {
        for (const r of claim.replaced) {
          // Older runs that no attempt ran (waiting to retry, handed over, stalled) that this claim ended
          // (concurrencyPolicy Replace): their final failure.
          this.log.info({ occurrence: r.key, by: d.key }, 'older run not running (waiting to retry, handed over or stalled) replaced; recorded failed');
          this.emit({ schedule: d.schedule, key: r.key, dueMs: r.dueMs, fireMs: r.fireMs, replica: o.replica, state: 'failed', error: `replaced by ${d.key} (concurrencyPolicy Replace)` });
        }
        if (this.shortOfReplicas('claim', d.key, claim.acked)) {
          // Not durable yet: a failover now could lose the claim and let another replica claim the occurrence
          // again while this one ran. Give it back unrun (token-guarded, a hand-over, not a stall); retry shortly.
          await this.store.release(d.key, claim.token, 'claim not acknowledged by enough Redis replicas', o.lockMs).catch(() => false);
          return dl.backUntil(this.clock.now() + o.redisWaitTimeoutMs);
        }
        if (performance.now() - sentMono > o.lockMs / 2) {
          // The answer took so long (Redis or this process paused) that the lease may lapse before the first
          // renewal: starting the job now could let it run unfenced for a moment. Give the claim up unrun (the
          // release is token-guarded and is not counted as a stall) and claim again.
          this.log.warn({ occurrence: d.key, fencingToken: claim.token, waitedMs: Math.round(performance.now() - sentMono) }, 'claim answered too late to hold; claiming again');
          await this.store.release(d.key, claim.token, 'claim answered after half its lease', o.lockMs).catch(() => false);
          continue;
        }
        const waited = gateWait ? { gate: gateWait.gate, ms: Math.round(performance.now() - gateWait.sinceMono) } : undefined;
        return this.run(d, dl, sched, kind, claim, sentMono, waited);
      } else if (claim.status === 'failed') {
        this.log.warn({ occurrence: d.key, reason: claim.reason, error: claim.error }, 'run replaced before its retry; recorded failed');
        this.emit({ ...base, state: 'failed', error: claim.error });
        return;
      } else {
        const reason = claim.status === 'skipped' || claim.status === 'missed' ? claim.reason : undefined;
        // A run that stalled out is a final failure: logged at error, like a failed run (retries are warnings).
        this.log[claim.status === 'stalled-out' ? 'error' : 'info']({ occurrence: d.key, outcome: claim.status, reason }, 'delivery closed without a run');
        this.emit({ ...base, state: claim.status, ...(reason ? { error: reason } : {}) });
        return;
      }
    }
  }

  private async run(
    d: OccurrenceJobData,
    dl: Delivery,
    sched: CompiledSchedule,
    kind: NonNullable<ReturnType<typeof findJobKind>>,
    claim: { token: number; attempt: number; nowMs: number },
    sentMono: number,
    waited?: { gate: string; ms: number },
  ): Promise<unknown> {
    const o = this.opts;
    const log = this.log.child({ occurrence: d.key, attempt: claim.attempt, fencingToken: claim.token });
    const holder = new ClaimHolder(this.store, d.key, claim.token, o.lockMs, o.retentionMs, sentMono, log);
    const ctx: JobContext = {
      occurrence: {
        schedule: d.schedule,
        key: d.key,
        dueMs: d.dueMs,
        fireMs: d.fireMs,
        startMs: claim.nowMs,
        attempt: claim.attempt,
        fencingToken: claim.token,
        manual: (d.origin ?? 'schedule') !== 'schedule',
        origin: d.origin ?? 'schedule',
      },
      signal: holder.signal,
      lease: holder,
      log,
      replica: o.replica,
      coordination: new RedisJobCoordination(this.store.redis, this.keys, o.replica, log),
      schedule: { concurrencyPolicy: sched.concurrencyPolicy, timeoutMs: sched.timeoutMs },
      ...(sched.signing ? { signBody: signerOf(sched.signing.keys) } : {}),
      // Tracing (runner/tracing/): the attempt's span context for the job; undefined when tracing is off.
      trace: this.tracer.attemptStarted({
        schedule: d.schedule, key: d.key, dueMs: d.dueMs, fireMs: d.fireMs, origin: d.origin ?? 'schedule', attempt: claim.attempt,
        fencingToken: claim.token, claimSentMs: this.clock.now() - (performance.now() - sentMono), startMs: claim.nowMs,
      }),
    };
    const base = {
      schedule: d.schedule,
      key: d.key,
      dueMs: d.dueMs,
      fireMs: d.fireMs,
      replica: o.replica,
      origin: d.origin,
      attempt: claim.attempt,
      fencingToken: claim.token,
      startMs: claim.nowMs,
    };
    // Two info lines per run: their fields (three ISO times) cost more than the rest of the run's bookkeeping,
    // so they are built only when info is logged (the bench and busy flocks run at warn).
    const infoOn = log.isLevelEnabled('info');
    if (infoOn) {
      log.info(
        { dueAt: iso(d.dueMs), fireAt: iso(d.fireMs), startAt: iso(claim.nowMs), latenessMs: claim.nowMs - d.fireMs, ...(waited ? { waited: `${waited.gate} ${(waited.ms / 1000).toFixed(1)} s` } : {}) },
        'run started',
      );
    }
    this.emit({ ...base, state: 'started', ...(waited ? { waited } : {}) });
    const settled = Promise.resolve()
      .then(() => kind.run(ctx, sched.job))
      .then(
        (value: unknown) => ({ ok: true as const, value }),
        (err: unknown) => ({ ok: false as const, err }),
      );
    this.active.set(d.key, { holder });
    const timeout =
      sched.timeoutMs === null
        ? undefined
        : setTimeout(() => holder.abort(new ClaimLostError(`timed out after ${sched.timeoutMs} ms`, 'timeout')), sched.timeoutMs);
    const disarmBlackout = armBlackoutAbort(sched, () => this.clock.now(), (name) => holder.abort(new ClaimLostError(`blackout ${name}`, 'blackout')));
    try {
      let first = await Promise.race([settled, holder.lost.then((lost) => ({ lost }))]);
      // The job's end may arrive before the lease's timer runs (a stopped replica resumed: pending I/O first);
      // reading the signal compares with the local lease end, so a lapsed claim is treated as lost, not finished.
      const reason: unknown = holder.signal.aborted ? holder.signal.reason : undefined;
      if (!('lost' in first) && reason instanceof ClaimLostError && reason.kind === 'lost') first = { lost: reason };
      let outcome: { ok: true; value: unknown } | { ok: false; err: unknown; reason?: string };
      if ('lost' in first) {
        const lost = first.lost;
        if (lost.kind === 'lost' || lost.kind === 'handover') return await this.abandonClaim(d, dl, claim.token, lost, settled, log, base);
        // Timeout, replaced or a blackout: the claim is still ours; record the outcome now, whatever the job still does.
        const reason = lost.kind === 'timeout' ? 'timeout' : lost.kind === 'blackout' ? lost.message : 'replaced';
        outcome = { ok: false, err: lost, reason };
        log.warn({ reason: lost.message }, lost.kind === 'timeout' ? 'run timed out; aborted' : lost.kind === 'blackout' ? 'blackout window opened; run aborted' : 'run replaced; aborted');
      } else outcome = first;
      // When the run ended, on the Redis clock: the record's end even when its finish reaches Redis late (sent
      // again across an outage: finishReachable), so the recorded duration is the run's, not the outage's.
      const endMs = this.clock.now();
      holder.close();
      // Not retried: a replaced run, one stopped by a blackout (a retry would run into the same stop), and a job
      // that found it must not run (JobSkippedError: recorded skipped with its reason).
      const skipped = !outcome.ok && isJobSkipped(outcome.err) ? outcome.err.reason : undefined;
      const noRetry = !outcome.ok && (outcome.reason === 'replaced' || outcome.reason?.startsWith('blackout ') === true || skipped !== undefined);
      const result = await this.finishReachable(d.schedule, d.key, claim.token, outcome, noRetry ? 0 : sched.retries, sched, log, endMs);
      if (result.status === 'refused') {
        log.warn('completion refused: the claim lapsed or was taken over before the run finished');
        this.emit({ ...base, state: 'lost', recorded: false, endMs });
        return await dl.back();
      }
      const error = outcome.ok ? undefined : errorText(outcome.err);
      if (result.status === 'retrying') {
        log.warn({ error, retryAt: iso(result.retryAtMs) }, 'run failed; retrying');
        this.emit({ ...base, state: 'retrying', error, endMs });
        // Deliver the same job again at the retry time, on the Redis clock.
        return await dl.retryAt(result.retryAtMs);
      }
      if (skipped !== undefined) {
        log.info({ state: 'skipped', reason: skipped, endAt: iso(endMs) }, 'run skipped by its job');
        this.emit({ ...base, state: 'skipped', error: skipped, endMs, recorded: true });
        return undefined;
      }
      // A final failure is an error (a retry is a warning): a warn filter must not hide it.
      if (!outcome.ok || infoOn) log[outcome.ok ? 'info' : 'error']({ state: outcome.ok ? 'succeeded' : 'failed', error, endAt: iso(endMs) }, 'run finished');
      this.emit({ ...base, state: outcome.ok ? 'succeeded' : 'failed', error, endMs, recorded: true });
      return undefined;
    } finally {
      if (timeout) clearTimeout(timeout);
      disarmBlackout();
      holder.close();
      this.active.delete(d.key);
      if (sched.groupLimits) this.wakeGroup(sched.groupLimits.name); // its slot is free: the next waiter asks now
    }
  }

  /** Waits `ms`, or less when a run of `group` ends here, or the replica stops. */
  private waitForGate(group: string | undefined, ms: number): Promise<void> {
    if (group === undefined) return sleep(ms, this.stopping.signal);
    return new Promise((resolve) => {
      const waiters = this.groupWaiters.get(group) ?? new Set<() => void>();
      this.groupWaiters.set(group, waiters);
      const signal = this.stopping.signal;
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.groupWaiters.delete(group);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Wakes the deliveries here that wait for a slot of `group`. */
  private wakeGroup(group: string): void {
    for (const wake of [...(this.groupWaiters.get(group) ?? [])]) wake();
  }

  /**
   * The claim is no longer ours (lease lapsed or taken over), or is handed over on SIGTERM: give the lease up
   * (token-guarded, a no-op when someone else holds it), put the job back so another replica claims at once,
   * and let whatever the job still does run into the fence: its late completion is sent and refused.
   */
  private async abandonClaim(
    d: OccurrenceJobData,
    dl: Delivery,
    fencingToken: number,
    lost: ClaimLostError,
    settled: Promise<{ ok: true; value: unknown } | { ok: false; err: unknown }>,
    log: Logger,
    base: Omit<RunEvent, 'state'>,
  ): Promise<never> {
    const key = d.key;
    await this.store.release(key, fencingToken, lost.message, this.opts.lockMs).catch(() => false);
    log.warn({ reason: lost.message }, lost.kind === 'handover' ? 'run handed over' : 'claim lost; run aborted');
    void settled.then(async (r) => {
      const res = await this.finish(d.schedule, key, fencingToken, r, 0).catch(() => ({ status: 'refused' as const }));
      log.warn(
        { accepted: res.status !== 'refused' },
        res.status !== 'refused' ? 'late completion accepted' : 'late completion refused (stale fencing token)',
      );
    });
    this.emit({ ...base, state: lost.kind === 'handover' ? 'handover' : 'lost', error: lost.message });
    return dl.back();
  }

  /**
   * Whether a WAIT after a claim or final state (`--redis-wait-replicas`) fell short: then it is logged and
   * reported (metric `cronflock_redis_wait_shortfall_total`). `acked` undefined: no WAIT was asked.
   */
  private shortOfReplicas(after: 'claim' | 'final', key: string, acked: number | undefined): boolean {
    const w = this.store.wait;
    if (!w || acked === undefined || acked >= w.replicas) return false;
    const what =
      after === 'claim'
        ? 'the run is not started; the claim is given back and tried again'
        : 'the record may be lost if Redis fails over now';
    this.log.warn(
      { occurrence: key, redis: w.target, asked: w.replicas, acked, timeoutMs: w.timeoutMs },
      `Redis ${w.target}: ${acked} of ${w.replicas} replica(s) acknowledged the ${after === 'claim' ? 'claim' : 'final state'} within ${w.timeoutMs} ms; ${what}`,
    );
    this.events.report('waitShortfall', { after, key, asked: w.replicas, acked, timeoutMs: w.timeoutMs });
    return true;
  }

  /**
   * The schedule's `outboxOn` (notify/events.ts) for the claim and finish scripts, when this replica's definition
   * of it (as it holds it now) is the published one; undefined otherwise (the scripts read the published one).
   */
  private knownOutboxOn(schedule: string): string | undefined {
    const s = this.schedules.get(schedule);
    if (!s || !this.isPublishedAs(s)) return undefined;
    let on = OUTBOX_ON.get(s);
    if (on === undefined) OUTBOX_ON.set(s, (on = outboxOn(s)));
    return on;
  }

  /**
   * The finish of an outcome reached within the lease (promise 1: the only claimant reached it), sent again while
   * Redis cannot take it (unreachable, loading its data after a restart, a failover under way) rather than given
   * up: giving up let the delivery come back and run the job a second time, though it had ended. The finish script
   * records it after the lease's end while nobody has claimed the occurrence since (`reachedInLease`), with its end
   * as `endMs` (Redis-clock ms when the run ended here), not the time Redis took it. Throws what
   * {@link finish} throws when the error is not one of Redis being away, and when the replica stops meanwhile.
   */
  private async finishReachable(
    schedule: string,
    key: string,
    token: number,
    r: { ok: true; value: unknown } | { ok: false; err: unknown; reason?: string },
    retries: number,
    sched: Pick<CompiledSchedule, 'retryBackoffMs' | 'retryBackoffMaxMs'>,
    log: Logger,
    endMs: number,
  ): Promise<FinishResult> {
    const sending = (async (): Promise<FinishResult> => {
      for (let attempt = 1, waitMs = 50; ; attempt++, waitMs = Math.min(waitMs * 2, FINISH_RETRY_MAX_MS)) {
        try {
          return await this.finish(schedule, key, token, r, retries, sched, true, endMs);
        } catch (err) {
          if (this.stopping.signal.aborted || !isRedisAway(err)) throw err;
          const f = redisFailure(err);
          if (attempt === 1) log.warn({ ...f.fields }, `the run ended but its outcome is not recorded yet: ${f.text}; sending it again until Redis takes it`);
          await sleep(waitMs, this.stopping.signal);
        }
      }
    })();
    this.pendingFinishes.set(key, sending);
    try {
      return await sending;
    } finally {
      if (this.pendingFinishes.get(key) === sending) this.pendingFinishes.delete(key);
    }
  }

  private async finish(
    schedule: string,
    key: string,
    token: number,
    r: { ok: true; value: unknown } | { ok: false; err: unknown; reason?: string },
    retries: number,
    sched?: Pick<CompiledSchedule, 'retryBackoffMs' | 'retryBackoffMaxMs'>,
    reachedInLease = false,
    endMs?: number,
  ): Promise<FinishResult> {
    const result = r.ok && r.value !== undefined ? safeJson(r.value) : undefined;
    const skipped = !r.ok && isJobSkipped(r.err) ? r.err.reason : undefined;
    const res = await this.store.finish(key, token, {
      state: r.ok ? 'succeeded' : skipped !== undefined ? 'skipped' : 'failed',
      reason: r.ok ? '' : (skipped ?? r.reason ?? 'job failed'),
      error: r.ok || skipped !== undefined ? '' : errorText(r.err),
      result,
      retentionMs: this.opts.retentionMs,
      lockMs: this.opts.lockMs,
      retries,
      retryBackoffMs: sched?.retryBackoffMs,
      retryBackoffMaxMs: sched?.retryBackoffMaxMs,
      outboxOn: this.knownOutboxOn(schedule),
      reachedInLease,
      endMs,
    });
    // Nothing to undo: the record is written; a shortfall is said and counted.
    if (res.status !== 'refused') this.shortOfReplicas('final', key, res.acked);
    return res;
  }
}

/** The schedule's `signing:` keys as a job's `context.signBody`. */
function signerOf(keys: Parameters<typeof signatureHeaders>[0]): (body: string) => Record<string, string> {
  return (body) => signatureHeaders(keys, body);
}

/**
 * Whether `err` says Redis is away for now rather than refusing the call: a closed or refused connection, or a
 * reply that a restart or failover gives (LOADING, BUSY, READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN).
 */
function isRedisAway(err: unknown): boolean {
  if (isRedisUnavailable(err)) return true;
  const e = err as { name?: string; message?: string } | undefined;
  return e?.name === 'ReplyError' && /^(LOADING|BUSY|READONLY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN)\b/.test(e.message ?? '');
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function errorText(err: unknown): string {
  const e = err as { message?: unknown; name?: unknown };
  return String(e?.message ?? err).slice(0, 2000);
}

function safeJson(v: unknown): string | undefined {
  try {
    const s = JSON.stringify(v);
    return s && s.length <= RESULT_LIMIT ? s : undefined;
  } catch {
    return undefined;
  }
}
