/**
 * Typed access to cronflock's Lua scripts and run records. One instance per Redis connection.
 */
import type { RedisClient } from './connect.js';
import type { Keyspace } from './keys.js';
import type { CompiledSchedule } from '../config/load.js';
import type { ConcurrencyPolicy } from '../config/schema.js';
import type { FinalState, Origin } from '../records/runs.js';
import { Coalescer } from './coalesce.js';
import { Scripts } from './script-loader.js';
import type { GroupLimits, RateLimit } from '../config/groups-schema.js';

/** The schedule fields the plan script decides on (its header states the rules). */
export type PlanPolicy = Pick<CompiledSchedule, 'suspend' | 'startingDeadlineMs' | 'catchUp' | 'maxCatchUpRuns'>;

/** What the planner offers to {@link Store.plan}. Times are UTC ms. */
export interface PlannedOccurrence {
  schedule: string;
  key: string;
  dueMs: number;
  fireMs: number;
  /**
   * Fire time of the occurrence the catch-up policy's keep count places later in the same offer of this schedule
   * (engine/dispositions.ts), or null when the offer has none.
   */
  keepFireMs: number | null;
  policy: PlanPolicy;
  /**
   * A final state the definition fixes whatever the time (a calendar excludes the due time, a blackout skips it:
   * runner/engine/windows.ts): the plan script records it as is, before its own rules. `keepFireMs` is then unused.
   */
  fixed?: PlannedFixedState;
  /** Set when a delay window moved `fireMs` later than the occurrence's jitter window (runner/engine/windows.ts). */
  delay?: PlannedDelay;
}

/** See {@link PlannedOccurrence.fixed}. */
export interface PlannedFixedState {
  state: 'missed' | 'skipped';
  /** Recorded as the reason, e.g. `calendar holidays`, `blackout freeze`. */
  reason: string;
}

/** See {@link PlannedOccurrence.delay}. */
export interface PlannedDelay {
  /** `delayed: blackout <name> until <ISO end>`: kept in the record (with a catch-up or deadline reason if any). */
  reason: string;
  /** The fire time in the jitter window, before the delay: the starting deadline counts from it (UTC ms). */
  originalFireMs: number;
}

/** An occurrence the plan script recorded in a final state, on the Redis clock. */
export interface PlannedFinal {
  key: string;
  state: Extract<FinalState, 'missed' | 'skipped'>;
  reason: string;
}

/** Result of {@link Store.claim}; see the claim script for the meaning of each status. */
export type ClaimResult =
  | {
      status: 'claimed';
      token: number;
      attempt: number;
      nowMs: number;
      firstStartMs: number;
      /**
       * Older occurrences that no attempt ran (waiting to retry, handed over, or stalled with a lapsed lease) that
       * this claim ended failed: replaced (concurrencyPolicy Replace).
       */
      replaced: { key: string; dueMs: number; fireMs: number }[];
      /** With {@link ReplicaWait}: Redis replicas that acknowledged the claim within its timeout. */
      acked?: number;
    }
  | { status: 'early'; waitMs: number }
  | { status: 'held'; waitMs: number; holder: string }
  | { status: 'final'; state: string }
  | { status: 'stale' }
  /** A scheduled occurrence past the catch-up grace whose record Redis lost: run nothing, the re-plan decides. */
  | { status: 'plan-lost' }
  | { status: 'missed'; reason: string }
  | { status: 'skipped'; reason: string }
  | { status: 'paused' }
  | { status: 'failed'; reason: string; error: string }
  | { status: 'stalled-out' };

/** Parameters of a claim. */
export interface ClaimRequest {
  replica: string;
  schedule: string;
  key: string;
  dueMs: number;
  fireMs: number;
  origin: Origin;
  lockMs: number;
  horizonMs: number;
  retentionMs: number;
  /** null: no starting deadline. */
  startingDeadlineMs: number | null;
  earlyToleranceMs: number;
  /**
   * A scheduled occurrence (origin `schedule`) without a record this long (ms) after its fire time was lost with
   * Redis's last writes: the claim answers `lost` and runs nothing, and the planner's re-plan decides it by the
   * catch-up policy (lua/includes/claim-one.lua). Absent: a missing record is created and claimed.
   */
  catchUpGraceMs?: number;
  maxStalls: number;
  concurrencyPolicy: ConcurrencyPolicy;
  /** null: no limit. */
  maxConcurrent: number | null;
  /** The schedule's concurrency group and rate limits (absent: none); see lua/includes/gates.lua. */
  gates?: ClaimGates;
  /**
   * The schedule's `outboxOn` (runner/notify/events.ts; '' when it has neither notify nor heartbeat) as this
   * replica's definition says: pass it only when that definition is the published one, which the claim script
   * would otherwise read per start (lua/includes/outbox.lua). Absent: the script reads the published definition.
   */
  outboxOn?: string;
}

/** What a claim must pass besides the concurrency policy: the schedule's group and rate limits. */
export interface ClaimGates {
  group?: GroupLimits;
  rateLimit?: RateLimit;
}

/** One gate of a claim, as includes/gates.lua reads it from the claim's packed `gates`. */
interface GateArg {
  /** "group <name>" | "rate limit of <schedule>": what a held claim says it waits for. */
  label: string;
  waiting: string;
  /** '' for a rate limit alone. */
  holders: string;
  /** -1: no concurrency limit. */
  maxConcurrent: number;
  /** '' for no rate limit. */
  rate: string;
  rateMax: number;
  perMs: number;
}

/** The claim script's `gates` (includes/gates.lua): the schedule's group, then its own rate limit. */
function gateArgs(k: Keyspace, schedule: string, g: ClaimGates | undefined): GateArg[] {
  const out: GateArg[] = [];
  const add = (label: string, keys: { waiting: string; holders: string; rate: string }, maxConcurrent: number | null, rate: RateLimit | null | undefined): void => {
    out.push({
      label,
      waiting: keys.waiting,
      holders: maxConcurrent === null ? '' : keys.holders,
      maxConcurrent: maxConcurrent ?? -1,
      rate: rate ? keys.rate : '',
      rateMax: rate?.max ?? 0,
      perMs: rate?.perMs ?? 0,
    });
  };
  if (g?.group) add(`group ${g.group.name}`, k.gate('group', g.group.name), g.group.maxConcurrent, g.group.rateLimit);
  if (g?.rateLimit) add(`rate limit of ${schedule}`, k.gate('schedule', schedule), null, g.rateLimit);
  return out;
}

/**
 * Result of {@link Store.finish}; `acked`, with {@link ReplicaWait}: Redis replicas that acknowledged the record
 * within the timeout.
 */
export type FinishResult = ({ status: 'recorded' } | { status: 'retrying'; retryAtMs: number } | { status: 'refused' }) & { acked?: number };

/**
 * Claims and final states made durable on Redis replicas before they count (`--redis-wait-replicas`): the claim
 * and finish scripts run on `redis`, each followed by `WAIT replicas timeoutMs` in the same pipeline. `redis`
 * is a connection of its own, since WAIT holds up everything queued behind it on its connection (renewals
 * must not wait for it).
 */
export interface ReplicaWait {
  redis: RedisClient;
  /** Redis replicas that must acknowledge (≥ 1). */
  replicas: number;
  /** How long WAIT waits for them (ms). */
  timeoutMs: number;
  /** The Redis, as log lines name it (a redacted URL). */
  target: string;
}

/** One row of a plan offer, as plan.lua reads it: dueMs, fireMs, key, keepFireMs, fixed state, note, deadlineFromMs. */
type PlanRow = [number, number, string, number, '' | PlannedFixedState['state'], string, number, string];

/** What finish.lua takes per attempt (one of its items). */
interface FinishItem {
  token: number;
  state: Exclude<FinalState, 'missed'>;
  reason: string;
  error: string;
  result: string;
  retentionMs: number;
  key: string;
  retries: number;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  jitter: number;
  lockMs: number;
  /** See {@link ClaimRequest.outboxOn}; absent: the script reads the published definition. */
  outboxOn?: string;
  /** 1: the outcome was reached within the lease (see `reachedInLease` of {@link Store.finish}). */
  inLease?: 1;
  /** When the run ended (Redis-clock ms as the replica estimates it; see `endMs` of {@link Store.finish}). */
  endMs?: number;
}

/** Most claims or finishes in one call (those that come together): bounds how long one call blocks Redis. */
const COALESCE_MAX = 100;

/** Backfill occurrences per enqueue or cancel script call: bounds how long one call blocks Redis. */
const BACKFILL_CHUNK = 500;
/** Schedules with backfill that one admission call looks at. */
const BACKFILL_ADMIT_SCAN = 1000;

/** The scripts, bound to one connection and one keyspace. */
export class Store {
  private readonly scripts: Scripts;
  private readonly durable: Scripts | undefined;

  /**
   * @param wait claims and final states wait for Redis replicas (see {@link ReplicaWait}); absent: they do not.
   * @param untilTurnMs ms until this replica's next Redis turn (engine/options.ts `redisTurnMs`): finishes wait for
   *   it, to reach Redis together with the turn's claims; absent: each finish call goes at once.
   */
  constructor(
    readonly redis: RedisClient,
    readonly keys: Keyspace,
    readonly wait?: ReplicaWait,
    untilTurnMs?: () => number,
  ) {
    this.scripts = Scripts.on(redis);
    this.durable = wait ? Scripts.on(wait.redis) : undefined;
    this.finishes = new Coalescer((items) => this.finishMany(items), COALESCE_MAX, untilTurnMs);
    this.claims = new Coalescer((items) => this.claimMany(items), COALESCE_MAX);
  }

  /** Finishes that come together, sent as one finish call (see {@link Coalescer}). */
  private readonly finishes: Coalescer<FinishItem, FinishResult>;

  /** One finish call for several attempts: each finished on its own (lua/finish.lua); a WAIT, if asked, covers all. */
  private async finishMany(items: FinishItem[]): Promise<FinishResult[]> {
    const { result, acked } = await this.runDurable('finish', [this.keys.pending, this.keys.lastSuccess], {
      occPrefix: this.keys.occurrencePrefix,
      items,
    });
    const a = acked !== undefined ? { acked } : {};
    return (result as [number, number][]).map(([code, retryAt]): FinishResult => {
      if (Number(code) === 2) return { status: 'retrying', retryAtMs: Number(retryAt), ...a };
      return Number(code) === 1 ? { status: 'recorded', ...a } : { status: 'refused', ...a };
    });
  }

  /** Runs a claim or finish script; with {@link ReplicaWait}, on its connection and followed by WAIT. */
  private async runDurable(
    name: 'claim' | 'finish',
    keys: readonly string[],
    args: Readonly<Record<string, unknown>>,
  ): Promise<{ result: unknown; acked?: number }> {
    if (!this.durable || !this.wait) return { result: await this.scripts.run(name, keys, args) };
    return this.durable.runThenWait(name, keys, args, this.wait.replicas, this.wait.timeoutMs);
  }

  /**
   * Records occurrences idempotently (first writer wins) and decides on the Redis clock which run and which are
   * recorded missed or skipped (see the plan script). With `mark`, the call also stores it as the replica's plan
   * mark (see {@link Store.planMark}). Items of one schedule must be consecutive and in due-time order.
   * @returns keys newly recorded scheduled (to enqueue), and the occurrences newly recorded missed or skipped.
   */
  async plan(
    items: readonly PlannedOccurrence[],
    o: {
      horizonMs: number;
      retentionMs: number;
      catchUpGraceMs: number;
      replica: string;
      mark?: string;
      /**
       * Occurrence key → the id of the live-lane batch job the caller will add it to if the script records it to run
       * on time (engine/enqueue.ts `assignBatchJobs`): written into the record (field `bj`) by the script, so the
       * enqueue needs no write of its own per occurrence.
       */
      batchJobs?: ReadonlyMap<string, string>;
    },
  ): Promise<{ toEnqueue: { key: string; reason: string }[]; finals: PlannedFinal[] }> {
    if (items.length === 0) return { toEnqueue: [], finals: [] };
    const k = this.keys;
    // One offer per run of items of one schedule (plan.lua's header): rows of [dueMs, fireMs, key, keepFireMs,
    // fixed state, note, deadlineFromMs, batch job id].
    const offers: (Omit<PlanPolicy, 'startingDeadlineMs'> & { schedule: string; startingDeadlineMs: number; rows: PlanRow[] })[] = [];
    for (let i = 0; i < items.length; ) {
      const { schedule, policy: p } = items[i]!;
      let j = i;
      while (j < items.length && items[j]!.schedule === schedule && items[j]!.policy === p) j++;
      const rows: PlanRow[] = [];
      for (; i < j; i++) {
        const it = items[i]!;
        const note = it.fixed?.reason ?? it.delay?.reason ?? '';
        rows.push([it.dueMs, it.fireMs, it.key, it.keepFireMs ?? -1, it.fixed?.state ?? '', note, it.delay?.originalFireMs ?? it.fireMs, o.batchJobs?.get(it.key) ?? '']);
      }
      offers.push({ schedule, suspend: p.suspend, startingDeadlineMs: p.startingDeadlineMs ?? -1, catchUp: p.catchUp, maxCatchUpRuns: p.maxCatchUpRuns, rows });
    }
    const out = (await this.scripts.run('plan', [k.pending, k.watermarks, k.schedules, k.planMarks], {
      occPrefix: k.occurrencePrefix,
      runsPrefix: k.runsPrefix,
      activePrefix: k.activePrefix,
      horizonMs: o.horizonMs,
      retentionMs: o.retentionMs,
      replica: o.replica,
      mark: o.mark ?? '',
      catchUpGraceMs: o.catchUpGraceMs,
      offers,
    })) as string[];
    const bar = out.indexOf('|');
    const finals: PlannedFinal[] = [];
    for (let i = bar + 1; i + 2 < out.length; i += 3) finals.push({ key: out[i]!, state: out[i + 1] as PlannedFinal['state'], reason: out[i + 2]! });
    const toEnqueue: { key: string; reason: string }[] = [];
    for (let i = 0; i + 1 < bar; i += 2) toEnqueue.push({ key: out[i]!, reason: out[i + 1]! });
    return { toEnqueue, finals };
  }

  /** Tries to claim an occurrence; see {@link ClaimResult}. */
  async claim(r: ClaimRequest): Promise<ClaimResult> {
    const k = this.keys;
    return this.claims.call({
      occKey: k.occurrence(r.key),
      runsKey: k.runs(r.schedule),
      activeKey: k.active(r.schedule),
      backfillKey: k.backfillQueue(r.schedule),
      replica: r.replica,
      lockMs: r.lockMs,
      horizonMs: r.horizonMs,
      retentionMs: r.retentionMs,
      schedule: r.schedule,
      dueMs: r.dueMs,
      fireMs: r.fireMs,
      key: r.key,
      startingDeadlineMs: r.startingDeadlineMs ?? -1,
      earlyToleranceMs: r.earlyToleranceMs,
      catchUpGraceMs: r.catchUpGraceMs ?? -1,
      maxStalls: r.maxStalls,
      origin: r.origin,
      concurrencyPolicy: r.concurrencyPolicy,
      maxConcurrent: r.maxConcurrent ?? -1,
      gates: gateArgs(k, r.schedule, r.gates),
      ...(r.outboxOn !== undefined ? { outboxOn: r.outboxOn } : {}),
    });
  }

  /** Claims that come together, sent as one claim call (see {@link Coalescer}). */
  private readonly claims: Coalescer<Record<string, unknown>, ClaimResult>;

  /** One claim call for several occurrences: each claimed on its own (lua/claim.lua); a WAIT, if asked, covers all. */
  private async claimMany(items: Record<string, unknown>[]): Promise<ClaimResult[]> {
    const k = this.keys;
    const { result, acked } = await this.runDurable('claim', [k.pending, k.schedules, k.suspended], { items });
    return (result as [string, ...(string | number)[]][]).map((out) => claimResult(out, acked));
  }

  /**
   * Extends a lease.
   * @returns the new lease end (Redis ms; 0 when the claim is lost) and, under concurrencyPolicy Replace, the
   * key of the newer occurrence that asked this one to stop ('' when none did).
   */
  async renew(key: string, token: number, lockMs: number, retentionMs: number): Promise<{ untilMs: number; cancelBy: string }> {
    const [untilMs, cancelBy] = (await this.scripts.run('renew', [this.keys.occurrence(key)], [token, lockMs, retentionMs, key])) as [
      number,
      string,
    ];
    return { untilMs: Number(untilMs), cancelBy: String(cancelBy ?? '') };
  }

  /**
   * Records an attempt's result if `token` is still current and its lease live; a failure with retries left
   * (`retries` > failures so far) becomes `retrying` with exponential backoff and jitter, keeping its place in
   * the schedule's active set until it is final (scored retryAt + lockMs).
   */
  async finish(
    key: string,
    token: number,
    r: {
      /** `skipped`: the job found it must not run (JobSkippedError); final like a success, never retried. */
      state: Exclude<FinalState, 'missed'>;
      reason?: string;
      error?: string;
      result?: string;
      retentionMs: number;
      /** The claim lease; a retrying run's active-set score is its retry time plus this (informational). */
      lockMs?: number;
      retries?: number;
      retryBackoffMs?: number;
      retryBackoffMaxMs?: number;
      /** The schedule's outboxOn, as {@link ClaimRequest.outboxOn} says. */
      outboxOn?: string;
      /**
       * The job's outcome was reached while the claim was certainly live (its signal had not fired): then the
       * finish is recorded even when it reaches Redis after the lease's end, as long as nobody claimed the
       * occurrence since (same fencing token; lua/includes/finish-one.lua). Promise 1 is kept: the outcome was
       * reached by the only claimant, and no other has claimed it.
       */
      reachedInLease?: boolean;
      /**
       * When the run ended, in Redis-clock ms as the replica estimates it (its RedisClock at the end): recorded
       * as the run's end, bounded to [the attempt's start, the Redis time of the finish], so a finish that
       * reaches Redis late (sent again across an outage) records the run's duration, not the outage's.
       * Absent: the Redis time of the finish.
       */
      endMs?: number;
    },
  ): Promise<FinishResult> {
    return this.finishes.call({
      token,
      state: r.state,
      reason: r.reason ?? '',
      error: r.error ?? '',
      result: r.result ?? '',
      retentionMs: r.retentionMs,
      key,
      retries: r.retries ?? 0,
      retryBackoffMs: r.retryBackoffMs ?? 1000,
      retryBackoffMaxMs: r.retryBackoffMaxMs ?? 300_000,
      jitter: Math.random(),
      lockMs: r.lockMs ?? 4_000,
      ...(r.outboxOn !== undefined ? { outboxOn: r.outboxOn } : {}),
      ...(r.reachedInLease ? { inLease: 1 as const } : {}),
      ...(r.endMs !== undefined ? { endMs: Math.round(r.endMs) } : {}),
    });
  }

  /**
   * Gives a claim up so another replica can claim at once; the occurrence keeps its place in the schedule's
   * active set until it is final (scored now + `lockMs`). @returns false when it was no longer ours.
   */
  async release(key: string, token: number, why: string, lockMs: number): Promise<boolean> {
    return Number(await this.scripts.run('release', [this.keys.occurrence(key)], [token, why, key, lockMs])) === 1;
  }

  /**
   * Records a trigger or resume occurrence (not bounded by the horizon) unless one with the same key exists.
   * @returns whether it was created, and its fire time (Redis now).
   */
  async enqueueManual(o: {
    schedule: string;
    key: string;
    dueMs: number;
    origin: 'manual' | 'resume';
    by: string;
    retentionMs: number;
  }): Promise<{ created: boolean; fireMs: number }> {
    const k = this.keys;
    const [created, fireMs] = (await this.scripts.run(
      'enqueue-manual',
      [k.occurrence(o.key), k.pending, k.runs(o.schedule), k.schedules],
      { schedule: o.schedule, key: o.key, dueMs: o.dueMs, origin: o.origin, by: o.by, retentionMs: o.retentionMs },
    )) as [number, number];
    return { created: Number(created) === 1, fireMs: Number(fireMs) };
  }

  /**
   * Closes an unclaimed occurrence with a final state, unless it is final or held by a live claim. One that has
   * started (waiting to retry, handed over) is recorded failed with the reason instead.
   * @param o.minAgeMs close it only when its fire time is more than this in the past on the Redis clock.
   * @returns `recorded` with the state recorded; `unchanged` when it was final, held or gone; `too-early` when
   *   younger than minAgeMs.
   */
  async abandon(
    key: string,
    state: Extract<FinalState, 'skipped' | 'missed'>,
    reason: string,
    retentionMs: number,
    o: { minAgeMs?: number } = {},
  ): Promise<{ outcome: 'recorded'; state: Exclude<FinalState, 'succeeded'> } | { outcome: 'unchanged' | 'too-early' }> {
    const k = this.keys;
    const [code, recorded] = (await this.scripts.run('abandon', [k.occurrence(key), k.pending], { state, reason, retentionMs, key, minAgeMs: o.minAgeMs ?? -1 })) as [
      number,
      string,
    ];
    if (Number(code) === 1) return { outcome: 'recorded', state: recorded as Exclude<FinalState, 'succeeded'> };
    return { outcome: Number(code) === 2 ? 'too-early' : 'unchanged' };
  }

  /**
   * Planned occurrences whose BullMQ job is missing, to enqueue again.
   * @param o.jobKeyPrefixes the job key prefix (`queue.toKey('')`) of each lane's queue: a job in any counts.
   * @returns each with its origin and, when it has one, its record's reason (together they decide its lane).
   */
  async sweep(o: {
    sweepAfterMs: number;
    limit: number;
    jobKeyPrefixes: readonly [string, string?];
    horizonMs: number;
    retentionMs: number;
  }): Promise<{ key: string; schedule: string; dueMs: number; fireMs: number; origin: Origin; reason?: string }[]> {
    const k = this.keys;
    const out = (await this.scripts.run('sweep', [k.pending], {
      sweepAfterMs: o.sweepAfterMs,
      limit: o.limit,
      occPrefix: k.occurrencePrefix,
      jobPrefix: o.jobKeyPrefixes[0],
      backlogJobPrefix: o.jobKeyPrefixes[1] ?? '',
      horizonMs: o.horizonMs,
      retentionMs: o.retentionMs,
    })) as string[];
    const res = [];
    for (let i = 0; i + 5 < out.length; i += 6) {
      const reason = out[i + 5];
      res.push({
        key: out[i]!,
        schedule: out[i + 1]!,
        dueMs: Number(out[i + 2]),
        fireMs: Number(out[i + 3]),
        origin: out[i + 4] as Origin,
        ...(reason ? { reason } : {}),
      });
    }
    return res;
  }

  /**
   * Records backfill occurrences as waiting for admission (see lua/backfill-enqueue.lua), skipping every one that
   * already has a record. Chunked: one script call per {@link BACKFILL_CHUNK} occurrences.
   * @param o.policy the schedule's concurrency policy: Allow lets several be admitted at once.
   * @returns the keys created, in the order given.
   */
  async enqueueBackfill(o: {
    schedule: string;
    items: readonly { key: string; dueMs: number }[];
    policy: ConcurrencyPolicy;
    by: string;
    retentionMs: number;
  }): Promise<string[]> {
    const k = this.keys;
    const created: string[] = [];
    for (let i = 0; i < o.items.length; i += BACKFILL_CHUNK) {
      const items = o.items.slice(i, i + BACKFILL_CHUNK).map((it) => [it.key, it.dueMs]);
      const out = (await this.scripts.run(
        'backfill-enqueue',
        [k.backfillSchedules, k.backfillQueue(o.schedule), k.runs(o.schedule), k.schedules],
        { occPrefix: k.occurrencePrefix, schedule: o.schedule, by: o.by, policy: o.policy, retentionMs: o.retentionMs, items },
      )) as string[];
      created.push(...out);
    }
    return created;
  }

  /**
   * Admits waiting backfill occurrences while fewer than `cap` are admitted across the flock (see
   * lua/backfill-admit.lua for the order). @returns the occurrences admitted, to enqueue on the backlog lane
   * (their fire time is the admission time, Redis ms).
   */
  async admitBackfill(o: { cap: number; retentionMs: number }): Promise<{ key: string; schedule: string; dueMs: number; fireMs: number }[]> {
    const k = this.keys;
    const out = (await this.scripts.run(
      'backfill-admit',
      [k.backfillSchedules, k.backfillAdmitted, k.pending, k.suspended],
      { occPrefix: k.occurrencePrefix, queuePrefix: k.backfillQueuePrefix, cap: o.cap, retentionMs: o.retentionMs, scan: BACKFILL_ADMIT_SCAN },
    )) as string[];
    const res = [];
    for (let i = 0; i + 3 < out.length; i += 4) {
      res.push({ key: out[i]!, schedule: out[i + 1]!, dueMs: Number(out[i + 2]), fireMs: Number(out[i + 3]) });
    }
    return res;
  }

  /**
   * Records every backfill occurrence of `schedule` that has not started `skipped` with `reason`.
   * @returns how many were cancelled, and how many had started (running, or waiting for a retry) and go on.
   */
  async cancelBackfill(schedule: string, reason: string, retentionMs: number): Promise<{ cancelled: number; started: number }> {
    const k = this.keys;
    let cancelled = 0;
    for (;;) {
      const [n, left, started] = (await this.scripts.run(
        'backfill-cancel',
        [k.backfillQueue(schedule), k.backfillAdmitted, k.pending],
        { occPrefix: k.occurrencePrefix, schedule, retentionMs, reason, limit: BACKFILL_CHUNK },
      )) as [number, number, number];
      cancelled += Number(n);
      if (Number(left) === 0) return { cancelled, started: Number(started) };
    }
  }

  /**
   * Ids of BullMQ delayed jobs (in the ZSET `delayedKey`) whose delay is over on the Redis clock, oldest first.
   * @param limit most ids returned.
   */
  async dueDelayed(delayedKey: string, limit: number): Promise<string[]> {
    return (await this.scripts.run('due-delayed', [delayedKey], [limit])) as string[];
  }

  /** The plan mark the replica's latest surviving plan call stored, or null when Redis has none. */
  async planMark(replica: string): Promise<string | null> {
    return this.redis.hget(this.keys.planMarks, replica);
  }

  /**
   * Membership heartbeat: (re)registers `replica` with its definitions `digest` until `ttlMs` from now on the
   * Redis clock (and notes when it was last seen), drops members whose registration expired, and returns the
   * live members (this one included).
   * @param capabilities what this replica can run that others may not, space-separated (`{ns}:replicas:can`,
   *   engine/handoffs.ts), written with the membership at every heartbeat ('' removes the entry); undefined
   *   leaves the entry as it is.
   */
  async heartbeat(replica: string, digest: string, ttlMs: number, capabilities?: string): Promise<{ members: { replica: string; digest: string }[]; handoffs: number }> {
    const k = this.keys;
    const args = capabilities === undefined ? [replica, digest, ttlMs] : [replica, digest, ttlMs, capabilities];
    const out = (await this.scripts.run('heartbeat', [k.replicas, k.replicaDigests, k.replicasSeen, k.handoffs(replica), k.replicaCapabilities], args)) as (string | number)[];
    const members = [];
    for (let i = 1; i + 1 < out.length; i += 2) members.push({ replica: String(out[i]), digest: String(out[i + 1]) });
    return { members, handoffs: Number(out[0]) };
  }

  /**
   * Hands an occurrence's delivery to replica `to` (the publisher of the definition this replica lacks), to be
   * taken at its next heartbeat ({@link takeHandoffs}); the entry set lives `ttlMs` after the latest hand-off.
   * Idempotent for an equal `delivery`.
   */
  async handOff(to: string, delivery: { fireMs: number }, ttlMs: number): Promise<void> {
    const key = this.keys.handoffs(to);
    await this.redis.multi().zadd(key, delivery.fireMs, JSON.stringify(delivery)).pexpire(key, ttlMs).exec();
  }

  /**
   * Takes (removes and returns, at most `limit`) the deliveries handed to `replica` that fire within `untilMs` of
   * now on the Redis clock (lua/handoff-take.lua), as stored: JSON text (engine/handoffs.ts parseHandoff reads it).
   */
  async takeHandoffs(replica: string, untilMs: number, limit: number): Promise<string[]> {
    return (await this.scripts.run('handoff-take', [this.keys.handoffs(replica)], [untilMs, limit])) as string[];
  }

  /** Leaves the membership at once (graceful stop), so the others take this replica's share at their next tick. */
  async leave(replica: string): Promise<void> {
    await this.redis.multi().zrem(this.keys.replicas, replica).hdel(this.keys.replicaDigests, replica).hdel(this.keys.replicaCapabilities, replica).exec();
  }

  /** Planning watermarks (latest planned due time, ms) for the given schedules; absent ones are undefined. */
  async watermarks(names: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (let i = 0; i < names.length; i += 1000) {
      const chunk = names.slice(i, i + 1000);
      const vals = await this.redis.hmget(this.keys.watermarks, ...chunk);
      chunk.forEach((n, j) => {
        const v = vals[j];
        if (v != null) out.set(n, Number(v));
      });
    }
    return out;
  }
}

/** One answer of the claim script as a {@link ClaimResult}; `acked`: replicas that acknowledged the call (WAIT). */
function claimResult(out: [string, ...(string | number)[]], acked: number | undefined): ClaimResult {
  switch (out[0]) {
    case 'claimed': {
      const replaced = [];
      for (let i = 5; i + 2 < out.length; i += 3) replaced.push({ key: String(out[i]), dueMs: Number(out[i + 1]), fireMs: Number(out[i + 2]) });
      return {
        status: 'claimed',
        token: Number(out[1]),
        attempt: Number(out[2]),
        nowMs: Number(out[3]),
        firstStartMs: Number(out[4]),
        replaced,
        ...(acked !== undefined ? { acked } : {}),
      };
    }
    case 'early':
      return { status: 'early', waitMs: Number(out[1]) };
    case 'held':
      return { status: 'held', waitMs: Number(out[1]), holder: String(out[2]) };
    case 'final':
      return { status: 'final', state: String(out[1]) };
    case 'skipped':
      return { status: 'skipped', reason: String(out[1]) };
    case 'failed':
      return { status: 'failed', reason: String(out[1]), error: String(out[2]) };
    case 'missed':
      // The starting deadline, with the group or rate limit it waited for (lua/claim.lua).
      return { status: 'missed', reason: String(out[1] ?? 'starting deadline exceeded') };
    case 'stale':
    case 'plan-lost':
    case 'paused':
    case 'stalled-out':
      return { status: out[0] };
    default:
      throw new Error(`claim script returned ${JSON.stringify(out)}`);
  }
}
