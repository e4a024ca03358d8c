/**
 * The planner: turns schedules and the clock into occurrences in Redis, on every replica, without a leader.
 *
 * Why this holds (promises 1, 2, 4 of the design notes):
 * - Occurrences are derived, not stored pointers: each replica iterates each schedule's due times and offers
 *   every occurrence due before `now + lookahead` to the `plan` script, which records it only if no record
 *   exists (first writer wins). Three replicas offering the same occurrence create one record and one job.
 * - Planning resumes from a per-schedule watermark (the latest planned due time) that only ever grows; it is a
 *   cache — if it is lost, planning restarts from now and the records still de-duplicate.
 * - Recording comes before enqueueing. If a replica dies between the two, the occurrence sits in `pending`
 *   without a BullMQ job; the sweeper (any replica) finds it after `sweepAfterMs` and enqueues it. BullMQ's
 *   job id (`<schedule>@<due ms>`) de-duplicates concurrent enqueues while the job exists. Finished jobs are
 *   removed at once: BullMQ would let the same id be added again after that, but only a newly created record
 *   is ever enqueued, and the claim script refuses to run an occurrence whose record is final, so the run
 *   record — kept for the retention — is what de-duplicates, not the job.
 * - A replica that lags far behind (paused longer than the record retention) offers only occurrences within
 *   the horizon, which is shorter than the retention, so it can never revive one whose record has expired.
 * - Jobs are enqueued delayed until `fire − prefetch`. BullMQ promotes delayed jobs with each host's clock and
 *   Redis `hz` granularity; the prefetch absorbs both, and the worker then waits for the fire time on a local
 *   timer corrected to the Redis clock, and the claim script refuses any claim before the fire time.
 *
 * - Planning is divided, not duplicated: each tick the replica renews its membership (heartbeat script) and
 *   offers only the schedules it owns by rendezvous hashing over the live replicas that run the same
 *   definitions (ownership.ts). A dead or stopped owner drops out after `membershipTtlMs`, which is shorter
 *   than what it had already planned ahead (`lookaheadMs − prefetchMs − tickMs`). A replica moves its cursor of
 *   a schedule it does not plan without offering it (the schedule is `passive` here); when it plans it again,
 *   however it gained it, it first offers the due times from the schedule's watermark up to its cursor again:
 *   nothing falls between two owners. Views that disagree for a tick cost duplicate offers, which the plan
 *   script absorbs.
 *
 * Cost: schedules sit in a min-heap by next due time, so a tick touches only schedules with due occurrences,
 * not every registered schedule; with R replicas each offers about 1/R of them.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../log.js';
import type { RedisClock } from '../redis/clock.js';
import type { Keyspace } from '../redis/keys.js';
import type { PlannedOccurrence, Store } from '../redis/store.js';
import { redisFailure } from '../redis/outage.js';
import { fireTimeMs, occurrenceKey } from '../schedule/occurrence.js';
import { isCatchUpRun, keepFireTimes, type Candidate } from './dispositions.js';
import { applyWindows } from './windows.js';
import { MinHeap } from './heap.js';
import type { EngineEvents } from './events.js';
import { definitionsDigest, DefinitionsDigest, OwnershipView, type LiveReplicas } from './ownership.js';
import { assignBatchJobs, enqueueOccurrences, type EnqueueItem, type Lanes } from './enqueue.js';
import { promoteDueJobs } from './queue-clock.js';
import type { RunnerOptions } from './options.js';
import type { CompiledSchedule } from '../config/load.js';

/** Most candidates one schedule contributes to one tick (a catch-up after a long pause is spread over ticks). */
const MAX_PER_SCHEDULE_PER_TICK = 5_000;
/** Occurrences per plan script call. */
const PLAN_CHUNK = 500;
/**
 * Most occurrences one tick takes off the heap to offer; the rest stay in the heap for the next tick. With the
 * plan budget it keeps a tick that fell far behind (a long pause) from computing offers it cannot record now.
 */
const MAX_OFFERED_PER_TICK = 20 * PLAN_CHUNK;
/**
 * How long (ms) a membership lasts while its replica loads a large set of schedules ({@link Planner.whileLoading}):
 * long enough for a load of 100,000 schedules on a busy host, whose event loop may not come round to a tick
 * within the planning TTL (2 s).
 */
export const LOADING_TTL_MS = 30_000;
/**
 * The digest a loading replica heartbeats with: it agrees with nobody's, so while it is a member no replica
 * divides planning (each offers everything it runs, as in a rollout) and none leaves a share to the loading one.
 */
export const LOADING_DIGEST_PREFIX = 'loading:';
/** From how many schedules to load (added, changed or removed) a replica holds its membership while loading. */
export const LOADING_THRESHOLD = 10_000;

/** What the planner needs from the rest of the replica, given at construction. */
export interface PlannerRequirements {
  /** Where what the planner records is reported (`plannedFinal`, `plannedLate`, `planned`). */
  events: EngineEvents;
  /** The membership view the planner keeps up to date at every heartbeat, for the others to read. */
  live: LiveReplicas;
  /** Whether this replica may plan a schedule (its definition is the published winner); default: yes. */
  mayPlan?: (s: CompiledSchedule) => boolean;
  /**
   * Runs at the start of every tick (the replica refreshes the published definitions there, waiting for them at
   * most `waitMs`: the plan budget); resolves true when what `mayPlan` answers may have changed for any schedule,
   * the names when only for those.
   */
  beforeTick?: (waitMs: number) => Promise<boolean | readonly string[] | void>;
  /** Called after every heartbeat with how many occurrences are handed to this replica (runner/engine/handoffs.ts). */
  afterHeartbeat?: (handoffs: number) => void;
  /**
   * What this replica can run that others may not (engine/handoffs.ts `CapabilityDirectory.mine`), published with
   * every heartbeat, so that it is there whenever the membership is (a lapsed membership removed it); default:
   * the published entry is left as it is.
   */
  capabilities?: () => string;
  /** How long (ms) a loading replica's membership lasts ({@link LOADING_TTL_MS}; tests shorten it). */
  loadingTtlMs?: number;
}

/** Plans occurrences of a set of schedules; one per replica. */
export class Planner {
  private readonly heap = new MinHeap<CompiledSchedule>();
  private readonly cursors = new Map<string, number>();
  /** The schedules planned now; heap entries of other (replaced, removed) objects are dropped when popped. */
  private current = new Map<string, CompiledSchedule>();
  /**
   * Schedules whose cursor this replica moved past due times it did not offer (another replica owned them, or this
   * replica's definition was not the one to plan). The one rule of a take-over: when this replica plans such a
   * schedule again, however it came to (an owner left or its membership lapsed, the definitions changed, a reload
   * or a stored change in the same tick), it first offers the due times from the schedule's watermark up to its
   * cursor again ({@link takeOverOffer}). Kept per schedule, not derived from a comparison of what was planned at
   * two checks: a reload (`update`) or a stored change (`applyChanges`) between the two spoiled that comparison,
   * and the gained due times between the last owner's offer and this cursor had no record at all.
   */
  private readonly passive = new Set<string>();
  /**
   * When (Redis ms) the definition of a schedule added or changed here by {@link update} or {@link applyChanges}
   * started: a take-over of it never offers due times at or before this (they are its former definition's, or
   * nobody's: an added schedule does not catch up on its past).
   */
  private readonly startedAt = new Map<string, number>();
  /** Whether the next tick looks at every {@link passive} schedule (a tick whose take-over failed). */
  private recheck = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private lastSweepMs = 0;
  /** What this replica planned recently, offered again if Redis lost it (see {@link Planner.replanRecent}). */
  private recent: { atMs: number; seq: number; items: PlannedOccurrence[] }[] = [];
  /** Plan marks are `<incarnation>:<seq>`: a mark left by an earlier process with this replica id is not ours. */
  private readonly incarnation = randomBytes(6).toString('hex');
  private seq = 0;
  /** Digest of the definitions this replica plans; planning is divided only among replicas that agree on it. */
  private digest = '';
  /** {@link digest} kept up to date schedule by schedule as {@link applyChanges} changes {@link current}. */
  private digests = new DefinitionsDigest();
  /** This replica's membership view of the latest tick (undefined before the first heartbeat). */
  private view: OwnershipView | undefined;
  /** Occurrences this replica newly enqueued / recorded final, for logs and tests. */
  readonly counters = { enqueued: 0, finals: 0, swept: 0, errors: 0, ticks: 0 };
  /** Monotonic time (performance.now(), ms) of the last tick that completed; readiness checks it. */
  lastTickOkAt = 0;
  /** When this replica last said its planning is behind (monotonic ms); said at most every 5 s. */
  private behindWarnedAt = -Infinity;
  /** Where the last tick's time went (ms), for the warning that planning is behind. */
  private phases = { view: 0, plan: 0, enqueue: 0, promote: 0, sweep: 0 };
  /** How late (ms) the event loop ran the last tick's timer: a replica short of CPU shows here. */
  private timerLateMs = 0;
  /** Schedules the last tick left for the next one (its plan budget ran out): the next tick starts at once. */
  private deferred = 0;
  /** When the planner last said it deferred schedules (monotonic ms); said at most every 5 s. */
  private deferredSaidAt = -Infinity;
  private readonly mayPlan: (s: CompiledSchedule) => boolean;

  constructor(
    private readonly store: Store,
    private readonly lanes: Lanes,
    private readonly keys: Keyspace,
    private readonly clock: RedisClock,
    private readonly opts: RunnerOptions,
    private readonly log: Logger,
    private readonly needs: PlannerRequirements,
  ) {
    this.mayPlan = needs.mayPlan ?? (() => true);
  }

  /**
   * Joins the planning membership before the replica publishes its definitions, so that the others see a live
   * publisher (definitions.ts) and do not take its new definitions for a departed replica's.
   */
  async join(schedules: readonly CompiledSchedule[]): Promise<void> {
    this.digest = definitionsDigest(schedules);
    // A large start is a load: the membership is held until the first tick (start() then ends the hold).
    this.joinHeld = schedules.length >= LOADING_THRESHOLD;
    if (this.joinHeld) this.loadingStarted();
    await this.heartbeatNow();
  }

  /**
   * Runs `load` (a reload or a change of many schedules) with this replica's membership held: heartbeats at once,
   * and at every tick until `load` ends, with {@link LOADING_TTL_MS} and a digest that agrees with nobody's
   * ({@link LOADING_DIGEST_PREFIX}). Why: loading 100,000 schedules keeps the event loop busy in slices of up to a
   * second or more on a loaded host; a replica that missed its 2 s TTL dropped out of the membership and came back,
   * and every such change made the others recompute what they own and (before the publish script checked the
   * publisher's liveness) re-publish every definition it had published — a storm of Redis work while loading.
   * Held this way, the replica stays a live member (its publications count), and since its digest agrees with no
   * one's, no replica divides planning meanwhile: nobody leaves its share to a replica that may not tick, and one
   * that dies while loading costs duplicate offers for at most the TTL, never a due time without an offer. The
   * first heartbeat after `load` restores the digest and the TTL.
   */
  async whileLoading<T>(load: () => Promise<T>): Promise<T> {
    this.loadingStarted();
    try {
      await this.heartbeatNow();
      return await load();
    } finally {
      this.loadingEnded();
    }
  }

  /** Loads in progress ({@link whileLoading}, or a large {@link join} until the first tick). */
  private loading = 0;
  /** Renews the hold while {@link loading}: see {@link loadingStarted}. */
  private holdTimer: NodeJS.Timeout | undefined;
  /** A renewal in flight (a stop waits for it, so that it cannot land after the replica left). */
  private holdBeat: Promise<void> | undefined;

  /**
   * Counts a load in, and renews the hold every third of its TTL until the last load ends. Why a timer of its own,
   * not only the ticks: between a large join and the first tick there are none (the replica publishes its
   * definitions and reads the watermarks of every schedule first: at 1,000,000 stored schedules that took longer
   * than the hold's 30 s on a busy host), and a replica whose hold lapsed there was taken for gone: the other
   * replicas named themselves the publishers of every definition it had published (a million more changes for
   * every replica to read, while it was still starting).
   */
  private loadingStarted(): void {
    if (this.loading++ > 0) return;
    const everyMs = Math.max(100, Math.floor(this.loadingTtlMs / 3));
    this.holdTimer = setInterval(() => {
      if (this.holdBeat || this.stopped) return;
      this.holdBeat = this.heartbeatNow()
        .then(() => undefined)
        .catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'renewing the membership hold failed; the next tick or renewal tries again'))
        .finally(() => (this.holdBeat = undefined));
    }, everyMs);
    this.holdTimer.unref?.();
  }

  /** Counts a load out; the last one stops the renewals (the next tick heartbeats with the planning TTL). */
  private loadingEnded(): void {
    if (--this.loading > 0) return;
    clearInterval(this.holdTimer);
    this.holdTimer = undefined;
  }

  private get loadingTtlMs(): number {
    return this.needs.loadingTtlMs ?? LOADING_TTL_MS;
  }
  /** Whether {@link join} holds the membership until {@link start}. */
  private joinHeld = false;

  /** The heartbeat this replica sends now: its digest and TTL, or the loading ones while it loads. */
  private async heartbeatNow(): Promise<{ replica: string; digest: string }[]> {
    const loading = this.loading > 0;
    const beat = await this.store.heartbeat(
      this.opts.replica,
      loading ? `${LOADING_DIGEST_PREFIX}${this.digest}` : this.digest,
      loading ? Math.max(this.loadingTtlMs, this.membershipTtlMs) : this.membershipTtlMs,
      this.needs.capabilities?.(),
    );
    this.needs.afterHeartbeat?.(beat.handoffs);
    return beat.members;
  }

  /**
   * Loads watermarks and starts ticking. A schedule with a watermark resumes after it (bounded by the horizon);
   * a schedule never planned starts at the current time, so a new schedule does not catch up on its past.
   * @param o.ticking false: no timer ticks; the caller calls {@link tick} (tests that order ticks by hand).
   */
  async start(schedules: readonly CompiledSchedule[], o: { ticking?: boolean } = {}): Promise<void> {
    const now = this.clock.now();
    const wms = await this.store.watermarks(schedules.map((s) => s.name));
    this.current = new Map(schedules.map((s) => [s.name, s]));
    this.digests = DefinitionsDigest.of([...this.current.values()]);
    this.digest = this.digests.value();
    this.view = undefined;
    for (const s of schedules) {
      const wm = wms.get(s.name);
      // Resume after the watermark, but never later than now: occurrences between now and a watermark in the
      // future are offered again (a no-op for those that exist), so a definition that changed while this
      // replica was away (a rollout, a new cron) gets its own due times planned without a gap.
      const from = wm === undefined ? now : Math.min(now, Math.max(wm, now - this.opts.horizonMs));
      this.cursors.set(s.name, from);
      const next = s.due.next(from);
      if (next !== null) this.heap.push(next, s);
    }
    // The hold of a large join ends here: the first tick heartbeats with the digest and the planning TTL.
    if (this.joinHeld) {
      this.joinHeld = false;
      this.loadingEnded();
    }
    this.stopped = false;
    if (o.ticking !== false) this.schedule(0);
  }

  /**
   * Applies a reloaded set of schedules. Unchanged ones (same definition hash) keep their place; a changed one
   * applies from its next due time after now; an added one starts at now; a removed one is no longer planned.
   * @returns the names added, changed and removed.
   */
  update(schedules: readonly CompiledSchedule[]): { added: string[]; changed: string[]; removed: string[] } {
    const now = this.clock.now();
    const prev = this.current;
    const next = new Map<string, CompiledSchedule>();
    const diff = { added: [] as string[], changed: [] as string[], removed: [] as string[] };
    for (const s of schedules) {
      const old = prev.get(s.name);
      if (old && old.definitionHash === s.definitionHash) {
        next.set(s.name, old);
        continue;
      }
      (old ? diff.changed : diff.added).push(s.name);
      next.set(s.name, s);
      this.startAt(s, now);
    }
    for (const name of prev.keys()) {
      if (!next.has(name)) {
        diff.removed.push(name);
        this.forget(name);
      }
    }
    this.current = next;
    this.digests = DefinitionsDigest.of([...next.values()]);
    this.digest = this.digests.value();
    return diff;
  }

  /**
   * Applies changes to some schedules only (stored schedules: runner/sources/stored.ts), by the rule of
   * {@link update}: an unchanged definition keeps its place, a changed one applies from its next due time after
   * now, an added one starts at now, a removed one is no longer planned. The others are not looked at (the
   * digest is updated for the changed ones only).
   * @returns the names added, changed and removed.
   */
  applyChanges(upserted: readonly CompiledSchedule[], removed: readonly string[]): { added: string[]; changed: string[]; removed: string[] } {
    const now = this.clock.now();
    const diff = { added: [] as string[], changed: [] as string[], removed: [] as string[] };
    for (const name of removed) {
      const gone = this.current.get(name);
      if (!gone) continue;
      this.current.delete(name);
      this.digests.toggle(name, gone.definitionHash);
      this.forget(name);
      diff.removed.push(name);
    }
    for (const s of upserted) {
      const old = this.current.get(s.name);
      if (old && old.definitionHash === s.definitionHash) continue;
      (old ? diff.changed : diff.added).push(s.name);
      if (old) this.digests.toggle(old.name, old.definitionHash);
      this.digests.toggle(s.name, s.definitionHash);
      this.current.set(s.name, s);
      this.startAt(s, now);
    }
    if (diff.added.length + diff.changed.length + diff.removed.length > 0) this.digest = this.digests.value();
    return diff;
  }

  /**
   * A definition added or changed at `now` starts there: planned from its next due time after now by whoever
   * owns it; on this replica not {@link passive} (nothing before now is its to offer), and a later take-over of it
   * looks back no further than now.
   */
  private startAt(s: CompiledSchedule, now: number): void {
    this.cursors.set(s.name, now);
    this.passive.delete(s.name);
    this.startedAt.set(s.name, now);
    const due = s.due.next(now);
    if (due !== null) this.heap.push(due, s);
  }

  /**
   * When the definition of `name` this replica runs took effect here (Redis ms: added or changed), or undefined
   * for a schedule it does not run.
   */
  definitionSinceMs(name: string): number | undefined {
    return this.startedAt.get(name);
  }

  /** A removed schedule: nothing of it is kept. */
  private forget(name: string): void {
    this.cursors.delete(name);
    this.passive.delete(name);
    this.startedAt.delete(name);
  }

  /** Stops ticking, waits for a tick in flight, and leaves the membership so others take this share at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    clearInterval(this.holdTimer);
    await this.running;
    await this.holdBeat;
    await this.store.leave(this.opts.replica).catch(() => undefined);
  }

  /**
   * How long one tick may spend recording before it leaves the rest for the next tick, ms (`--plan-budget`;
   * default a quarter of the membership TTL). Without a bound a tick that fell behind (CPU starved, a pause)
   * had more to offer the longer it took, so ticks of 20–30 s snowballed, the replica's membership (renewed once
   * per tick) lapsed, and every replica then planned every schedule: more work exactly when there was least
   * capacity (issue 16's overload collapse). Bounded, a tick renews the membership at least every budget + one
   * plan chunk, so planning stays divided.
   */
  private get planBudgetMs(): number {
    return this.opts.planBudgetMs ?? Math.floor(this.membershipTtlMs / 4);
  }

  /** How long a membership lasts without a heartbeat: less than what an owner has planned ahead. */
  private get membershipTtlMs(): number {
    const o = this.opts;
    return Math.max(2 * o.tickMs, o.lookaheadMs - o.prefetchMs - o.tickMs);
  }

  /**
   * Renews this replica's membership and returns the schedules it gained: those it plans now (its definition is
   * the one to plan and it owns them) whose cursor it moved without offering them ({@link passive}). What a
   * schedule plans can change only when the membership or the definitions change, so only then are they looked
   * at: every passive schedule when the membership (or every definition) changed, the named ones when only those
   * definitions changed. A popped schedule that is gained and was not seen here is caught by the tick itself.
   */
  private async refreshView(definitionsChanged: boolean | readonly string[]): Promise<{ view: OwnershipView; gained: CompiledSchedule[] }> {
    const members = await this.heartbeatNow();
    const before = this.view;
    const view = new OwnershipView(members, this.opts.replica, this.digest);
    this.view = view;
    const membershipChanged = before !== undefined && !before.sameAs(view);
    const liveChanged = this.needs.live.update(members.map((m) => m.replica));
    const gained: CompiledSchedule[] = [];
    const look = (names: Iterable<string>): void => {
      for (const name of names) {
        const s = this.passive.has(name) ? this.current.get(name) : undefined;
        if (s && this.mayPlan(s) && view.owns(name)) gained.push(s);
      }
    };
    if (this.recheck || membershipChanged || liveChanged || definitionsChanged === true) {
      this.recheck = false;
      look(this.passive);
    } else if (Array.isArray(definitionsChanged)) {
      // Only these names' published definitions changed: only they are looked at again (not every schedule).
      look(definitionsChanged as readonly string[]);
    }
    if (membershipChanged) {
      this.log.info({ replicas: view.sharing.length || members.length, divided: view.divided, gained: gained.length }, 'planning membership changed');
    }
    return { view, gained };
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    const expectedAt = performance.now() + delayMs;
    this.timer = setTimeout(() => {
      this.timerLateMs = performance.now() - expectedAt; // how late the event loop ran the tick
      this.running = this.tick()
        .catch((err: unknown) => {
          // Stopping closes the connections under a pass still running (a long one outlives the shutdown step):
          // its failure is the shutdown's doing, not an outage, and nothing is retried.
          if (this.stopped) {
            this.log.info({ err: (err as Error)?.message }, 'planning pass cut short: the replica is stopping; what it did not plan, the other replicas plan');
            return;
          }
          this.counters.errors++;
          const f = redisFailure(err);
          this.log.warn(f.fields, `planning failed: ${f.text}; retrying`);
        })
        .finally(() => {
          this.running = undefined;
          // What the plan budget left over is offered at once, not a tick period later.
          this.schedule(this.deferred > 0 ? 0 : this.opts.tickMs);
        });
    }, delayMs);
    this.timer.unref?.();
  }

  /** One planning pass: pop due schedules, record their occurrences, enqueue the new ones, sweep. */
  async tick(): Promise<void> {
    this.counters.ticks++;
    const t0 = performance.now();
    this.phases = { view: 0, plan: 0, enqueue: 0, promote: 0, sweep: 0 };
    // Waits for the definitions at most a plan budget: the membership is renewed after it (definitions.ts refreshForTick).
    const before = await this.needs.beforeTick?.(this.planBudgetMs);
    const definitionsChanged = before === true || Array.isArray(before) ? (before as true | readonly string[]) : false;
    const { view, gained } = await this.refreshView(definitionsChanged);
    this.phases.view = performance.now() - t0;
    const now = this.clock.now();
    const until = now + this.opts.lookaheadMs;
    // The due schedules, popped first (their offers are made below, after the take-overs): each one with its
    // candidates and whether this replica plans it. A cursor far behind (replica paused) jumps to the horizon:
    // older occurrences are not ours to plan.
    const pops: { s: CompiledSchedule; next: number; cands: Candidate[]; plans: boolean }[] = [];
    let popCount = 0;
    while ((this.heap.peekKey() ?? Infinity) <= until && popCount < MAX_OFFERED_PER_TICK) {
      const { key: first, value: s } = this.heap.pop()!;
      if (this.current.get(s.name) !== s) continue; // replaced or removed by a reload
      const cands: Candidate[] = [];
      let due: number | null = first < now - this.opts.horizonMs ? s.due.next(now - this.opts.horizonMs - 1) : first;
      while (due !== null && due <= until && cands.length < MAX_PER_SCHEDULE_PER_TICK) {
        cands.push({ dueMs: due, fireMs: fireTimeMs(s.name, due, s.jitterMs) });
        due = s.due.next(due);
      }
      // A run-time suspension (`cronflock suspend`) is decided by the claim script at the fire time, not here:
      // occurrences planned ahead must still run if the schedule is resumed before they fire.
      // With a newer definition published elsewhere, the replicas that have it plan; this one only moves on.
      // Schedules another replica owns only move on here: their owner offers them (and they become passive).
      // Whether each one runs or is recorded missed or skipped is decided by the plan script on the Redis clock.
      const plans = this.mayPlan(s) && view.owns(s.name);
      if (plans) popCount += cands.length;
      pops.push({ s, next: first, cands, plans });
    }
    // Each popped schedule with the range of `items` it offered ([from, to)), so that what the plan budget leaves
    // over is offered again next tick, not skipped.
    const popped: { s: CompiledSchedule; next: number; from: number; to: number; plans: boolean }[] = [];
    const items: PlannedOccurrence[] = [];
    const advanced = new Map<string, number>();
    // Take-over: a gained schedule (this replica plans it now, and moved its cursor without offering it) first gets
    // the due times its previous owner may not have offered (it died, left, or this replica saw the change before
    // it did) offered again, up to this replica's cursor ({@link takeOverCandidates}). Those that exist already cost
    // one EXISTS each. A due schedule that is gained and that the view did not show (no change was seen: a tick
    // whose take-over failed) is taken over here too, so every way of gaining a schedule follows the one rule.
    const seen = new Set(gained.map((g) => g.name));
    const takenOver = [...gained, ...pops.filter((p) => p.plans && this.passive.has(p.s.name) && !seen.has(p.s.name)).map((p) => p.s)];
    const sweepDue = now - this.lastSweepMs >= this.opts.sweepAfterMs / 2;
    let markBefore: string | undefined;
    const seqBefore = this.seq;
    let seq = this.seq;
    let offered: number;
    // Take-over offers come first in `items`: due times the previous owner probably offered (most exist already).
    let takeOvers = 0;
    try {
      const wms = takenOver.length > 0 ? await this.store.watermarks(takenOver.map((g) => g.name)) : new Map<string, number>();
      for (const s of takenOver) offer(items, s, this.takeOverCandidates(s, now, wms.get(s.name)));
      // Take-over offers are made once, not kept in the heap: the budget never defers them.
      takeOvers = items.length;
      for (const { s, next, cands, plans } of pops) {
        const from = items.length;
        if (plans) offer(items, s, cands);
        popped.push({ s, next, from, to: items.length, plans });
        if (cands.length > 0) advanced.set(s.name, cands[cands.length - 1]!.dueMs);
      }
      // The plan mark as it was before this tick's plan calls overwrite it: read after them, it would only ever
      // show this tick's call, and what Redis lost before (a crash, a failover) would never be re-offered.
      if (sweepDue && this.recent.length > 0) markBefore = (await this.store.planMark(this.opts.replica)) ?? undefined;
      ({ offered } = await this.record(items, { budgetEndMono: performance.now() + this.planBudgetMs, atLeast: takeOvers }));
      seq = this.seq;
    } catch (err) {
      // Nothing advances: the same occurrences are offered again next tick (plan is idempotent), and the gained
      // schedules stay passive, looked at again next tick.
      for (const { s, next } of pops) this.heap.push(next, s);
      if (takenOver.length > 0) this.recheck = true;
      throw err;
    }
    for (const s of takenOver) this.passive.delete(s.name);
    if (offered > 0) this.recent.push({ atMs: now, seq, items: offered < items.length ? items.slice(0, offered) : items });
    this.deferred = 0;
    for (const { s, next, from, to, plans } of popped) {
      // Changed or removed while this tick recorded: the change set its own cursor and heap entry.
      if (this.current.get(s.name) !== s) continue;
      if (to > from && to > offered) {
        // Not (fully) offered within the budget: offered again from the same due time next tick (the plan script
        // skips those already recorded).
        this.heap.push(next, s);
        this.deferred++;
        continue;
      }
      const last = advanced.get(s.name) ?? this.cursors.get(s.name)!;
      // Moved on without an offer here: when this replica plans it again, it takes it over (looks back).
      if (!plans && last !== this.cursors.get(s.name)) this.passive.add(s.name);
      else if (plans) this.passive.delete(s.name);
      this.cursors.set(s.name, last);
      const following = s.due.next(last);
      if (following !== null) this.heap.push(following, s);
    }
    if (this.deferred > 0 && performance.now() - this.deferredSaidAt >= 5_000) {
      this.deferredSaidAt = performance.now();
      this.log.info(
        { deferred: this.deferred, offered, of: items.length, planBudgetMs: this.planBudgetMs },
        'plan budget spent: the rest of the due schedules goes to the next tick, which starts at once',
      );
    }
    const tPromote = performance.now();
    await this.promoteDue();
    this.phases.promote = performance.now() - tPromote;
    if (sweepDue) {
      this.lastSweepMs = now;
      const tSweep = performance.now();
      await this.replanRecent(now, markBefore, seqBefore);
      await this.sweep();
      this.phases.sweep = performance.now() - tSweep;
    }
    this.lastTickOkAt = performance.now();
    // Only this replica's own offers say whether its planning is behind: a take-over looks back on purpose (every
    // stored change or reload divides planning anew, and the warning after each misled operators).
    this.sayIfBehind(takeOvers > 0 ? items.slice(takeOvers) : items, now, this.lastTickOkAt - t0);
  }

  /**
   * The due times a take-over of `s` offers again: after the schedule's watermark `wmMs` (the latest due time
   * anyone planned), up to this replica's cursor (from there on, the heap offers it). Not after a guess from the
   * membership TTL alone: when this replica notices late (its own event loop or host stalled longer than the
   * TTL), a guess skipped the due times between the last owner's lookahead and the guess, which then had no
   * record at all. Never before the horizon (older ones are not ours to plan), nor at or before the start of a
   * definition added or changed here ({@link startedAt}); a schedule never planned starts at the guess
   * (now − membership TTL − 2 ticks).
   */
  private takeOverCandidates(s: CompiledSchedule, now: number, wmMs: number | undefined): Candidate[] {
    const guess = now - this.membershipTtlMs - 2 * this.opts.tickMs;
    const cursor = this.cursors.get(s.name) ?? now;
    const since = Math.max(now - this.opts.horizonMs, this.startedAt.get(s.name) ?? -Infinity, wmMs === undefined ? guess : Math.min(guess, wmMs));
    const cands: Candidate[] = [];
    for (let due = s.due.next(since); due !== null && due <= cursor && cands.length < MAX_PER_SCHEDULE_PER_TICK; due = s.due.next(due)) {
      cands.push({ dueMs: due, fireMs: fireTimeMs(s.name, due, s.jitterMs) });
    }
    return cands;
  }

  /**
   * Warns (at most every 5 s) when this tick offered occurrences whose fire time had already passed by more than
   * the catch-up grace: the plan script then records them missed or as catch-up runs (backlog lane) instead of
   * running them on time. Says where the tick's time went, so that a replica starved of CPU or of Redis shows.
   */
  private sayIfBehind(items: readonly PlannedOccurrence[], now: number, tickMs: number): void {
    let overdue = 0;
    let oldestFireMs = Infinity;
    for (const it of items) {
      if (it.fireMs + this.opts.catchUpGraceMs < now) overdue++;
      if (it.fireMs < oldestFireMs) oldestFireMs = it.fireMs;
    }
    if (overdue === 0 || performance.now() - this.behindWarnedAt < 5_000) return;
    this.behindWarnedAt = performance.now();
    const r = (x: number): number => Math.round(x);
    this.log.warn(
      {
        offered: items.length,
        overdue,
        behindMs: r(now - oldestFireMs),
        tickMs: r(tickMs),
        timerLateMs: r(this.timerLateMs),
        phasesMs: { view: r(this.phases.view), plan: r(this.phases.plan), enqueue: r(this.phases.enqueue), promote: r(this.phases.promote), sweep: r(this.phases.sweep) },
      },
      'planning is behind: occurrences offered after their fire time are recorded missed or run late (catch-up)',
    );
  }

  /**
   * Offers again what this replica planned in the last `2 × sweepAfterMs` and Redis no longer has. It matters
   * when Redis acknowledged a plan and then lost it (a Sentinel failover or a crash with `appendfsync everysec`
   * drops the last writes): the planner has moved past those due times, so without this they would vanish with
   * no record. Redis loses writes only as a suffix, so the plan mark tells which calls survived: usually all of
   * them, for one HGET. Re-created ones run late or follow their starting deadline and catch-up policy, and are
   * logged.
   * @param markBefore the plan mark read before this tick's plan calls (undefined: none was stored).
   * @param seqBefore this replica's plan sequence before this tick: its own calls are not checked.
   */
  private async replanRecent(now: number, markBefore: string | undefined, seqBefore: number): Promise<void> {
    this.recent = this.recent.filter((b) => b.atMs >= now - 2 * this.opts.sweepAfterMs);
    if (this.recent.length === 0) return;
    const [incarnation, seq] = (markBefore ?? '').split(':');
    const survived = incarnation === this.incarnation ? Number(seq) : -1;
    const lost = this.recent.filter((b) => b.seq > survived && b.seq <= seqBefore);
    if (lost.length === 0) return;
    const { created } = await this.record(this.reoffer(lost.flatMap((b) => b.items)));
    if (created > 0) this.log.warn({ count: created }, 're-planned occurrences whose records Redis had lost');
  }

  /**
   * The offer that re-plans `lost` occurrences: per schedule, every due time from its earliest lost one up to
   * where this replica has planned it (its cursor), in ONE offer, so that the catch-up policy sees them together.
   * Offered again batch by batch as they were first planned (each due time of an every-2-s schedule in its own
   * tick), each lost occurrence was the newest of its own offer, and after a Redis crash all of them ran late
   * instead of the newest alone. Due times whose records survived are offered too: the plan script skips them,
   * but they still count as the later occurrence that supersedes an overdue lost one.
   */
  private reoffer(lost: readonly PlannedOccurrence[]): PlannedOccurrence[] {
    const firstDue = new Map<string, PlannedOccurrence>();
    for (const it of lost) if ((firstDue.get(it.schedule)?.dueMs ?? Infinity) > it.dueMs) firstDue.set(it.schedule, it);
    const out: PlannedOccurrence[] = [];
    for (const [name, first] of firstDue) {
      const s = this.current.get(name);
      if (!s) {
        // Removed since: offered as it was planned (the plan script decides each row on its own).
        for (const it of lost) if (it.schedule === name) out.push(it);
        continue;
      }
      const last = Math.max(this.cursors.get(name) ?? first.dueMs, ...lost.filter((it) => it.schedule === name).map((it) => it.dueMs));
      const cands: Candidate[] = [];
      for (let due: number | null = first.dueMs; due !== null && due <= last && cands.length < MAX_PER_SCHEDULE_PER_TICK; due = s.due.next(due)) {
        cands.push({ dueMs: due, fireMs: fireTimeMs(s.name, due, s.jitterMs) });
      }
      offer(out, s, cands);
    }
    return out;
  }

  /**
   * Offers occurrences to the plan script in chunks, enqueues those it newly recorded as scheduled, and reports
   * those it newly recorded missed or skipped. With a `budget`, stops after the chunk during which the monotonic
   * clock passed `budgetEndMono`, once the first `atLeast` items are offered.
   * @returns how many of `items` were offered (all of them without a budget), and how many records were created.
   */
  private async record(items: readonly PlannedOccurrence[], budget?: { budgetEndMono: number; atLeast: number }): Promise<{ offered: number; created: number }> {
    let created = 0;
    for (let i = 0; i < items.length; i += PLAN_CHUNK) {
      if (budget && i > 0 && i >= budget.atLeast && performance.now() >= budget.budgetEndMono) return { offered: i, created };
      const chunk = items.slice(i, i + PLAN_CHUNK);
      // with batches, their jobs are chosen now and the plan script names them in the records it creates
      const batchJobs = this.opts.batchSize > 1 ? assignBatchJobs(this.keys, chunk, this.opts.batchSize) : undefined;
      const planStartMs = this.clock.now();
      const tPlan = performance.now();
      const { toEnqueue, finals } = await this.store.plan(chunk, {
        horizonMs: this.opts.horizonMs,
        retentionMs: this.opts.retentionMs,
        catchUpGraceMs: this.opts.catchUpGraceMs,
        replica: this.opts.replica,
        mark: `${this.incarnation}:${++this.seq}`,
        ...(batchJobs ? { batchJobs } : {}),
      });
      this.phases.plan += performance.now() - tPlan;
      if (toEnqueue.length + finals.length === 0) continue;
      created += toEnqueue.length + finals.length;
      const byKey = new Map(chunk.map((c) => [c.key, c]));
      this.counters.finals += finals.length;
      for (const f of finals) {
        const o = byKey.get(f.key)!;
        this.needs.events.report('plannedFinal', { ...f, schedule: o.schedule, dueMs: o.dueMs });
      }
      for (const e of toEnqueue) if (e.reason !== '') this.needs.events.report('plannedLate', { ...e, schedule: byKey.get(e.key)!.schedule });
      // Tracing (runner/tracing/): the plan span of each occurrence recorded here.
      if (this.needs.events.listenerCount('planned') > 0) {
        this.needs.events.report('planned', {
          items: [...toEnqueue.map((e) => ({ ...e, state: 'scheduled' as const })), ...finals].map(({ key, state, reason }) => ({ ...byKey.get(key)!, key, state, reason })),
          startMs: planStartMs,
          endMs: this.clock.now(),
        });
      }
      if (toEnqueue.length > 0) {
        const tEnqueue = performance.now();
        await this.enqueue(
          toEnqueue.map(({ key, reason }) => {
            // the plan script named a batch job in the record of each one that runs in the live lane (laneOf)
            const batchJob = isCatchUpRun(reason) ? undefined : batchJobs?.get(key);
            return { ...byKey.get(key)!, origin: 'schedule' as const, ...(reason ? { reason } : {}), ...(batchJob ? { batchJob } : {}) };
          }),
          true,
        );
        this.phases.enqueue += performance.now() - tEnqueue;
      }
    }
    return { offered: items.length, created };
  }

  /**
   * Delivers queue jobs whose delay is over on the Redis clock. BullMQ promotes a delayed job when the *host*
   * clock of some worker passes its score; job scores are on the Redis clock (enqueue.ts), so a flock whose
   * hosts are all behind Redis (one replica alone, its clock stepped back) would otherwise deliver late, by as
   * much as the host is behind. Every tick, each replica promotes what is due by `TIME` and nobody promoted.
   */
  private async promoteDue(): Promise<void> {
    let promoted = 0;
    for (const q of [this.lanes.live, this.lanes.backlog]) promoted += await promoteDueJobs(q, this.store);
    if (promoted > 0) this.log.debug({ count: promoted }, 'promoted delayed queue jobs due on the Redis clock');
  }

  /** Re-enqueues planned occurrences whose job went missing (crash between plan and enqueue). */
  private async sweep(): Promise<void> {
    const lost = await this.store.sweep({
      sweepAfterMs: this.opts.sweepAfterMs,
      limit: 200,
      jobKeyPrefixes: [this.lanes.live.toKey(''), this.lanes.backlog.toKey('')],
      horizonMs: this.opts.horizonMs,
      retentionMs: this.opts.retentionMs,
    });
    if (lost.length === 0) return;
    this.counters.swept += lost.length;
    this.log.warn({ count: lost.length }, 'sweeper re-enqueued planned occurrences whose job was missing');
    await this.enqueue(lost);
  }

  /**
   * Catch-up runs (their recorded reason says so) go to the backlog lane, the others to the live lane; newly
   * planned live ones in batches of `--batch-size` (`batched`), what the sweep re-enqueues one job each.
   */
  private async enqueue(items: EnqueueItem[], batched = false): Promise<void> {
    const batch = batched && this.opts.batchSize > 1 ? { batchSize: this.opts.batchSize, redis: this.store.redis } : undefined;
    await enqueueOccurrences(this.lanes, this.keys, this.clock, this.opts.prefetchMs, items, batch);
    this.counters.enqueued += items.length;
  }
}

/** Adds the offer of one schedule's candidates (due-time order) to `items`, for the plan script to decide. */
function offer(items: PlannedOccurrence[], s: CompiledSchedule, cands: readonly Candidate[]): void {
  for (const it of offerOf(s, cands)) items.push(it);
}

/**
 * The offer of one schedule's candidates (due-time order), as the plan script takes it: the calendar and
 * blackouts first (windows.ts: a fixed final state, or a later fire time with its reason), then, among those they
 * let run only (a skipped due time takes no catch-up place), the fire time `keep` places later (dispositions.ts).
 */
export function offerOf(s: CompiledSchedule, cands: readonly Candidate[]): PlannedOccurrence[] {
  const windowed = applyWindows(cands, s);
  const open = windowed.filter((c) => c.fixed === undefined);
  const keep = new Map(keepFireTimes(open, s).map((k, j) => [open[j]!, k]));
  return windowed.map((c) => ({ schedule: s.name, key: occurrenceKey(s.name, c.dueMs), ...c, keepFireMs: keep.get(c) ?? null, policy: s }));
}
