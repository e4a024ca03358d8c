/**
 * Runner options: what a user sets (flags, environment) compiled into what the engine uses, with units in the
 * names and the relations between them checked once, up front (the Temporal options-pipeline pattern).
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

/** Options of one replica. All durations in ms. Every replica of a flock should use the same values. */
export interface RunnerOptions {
  /** Redis key namespace (hash tag) of the flock. */
  namespace: string;
  /** This replica's name in run records and logs; unique per process. */
  replica: string;
  /** Lease of a claim and BullMQ lock duration. A SIGKILLed claimant's run moves on within about lockMs + stalledIntervalMs. */
  lockMs: number;
  /** How often (flock-wide) BullMQ looks for jobs whose lock expired. */
  stalledIntervalMs: number;
  /** Re-claims after a stall before the occurrence fails with reason "stalled". */
  maxStalls: number;
  /** How far ahead occurrences are planned and enqueued. */
  lookaheadMs: number;
  /** Planner period. */
  tickMs: number;
  /**
   * How long one planner tick may spend recording occurrences before it leaves the rest to a tick that starts at
   * once (planner.ts); undefined: a quarter of the membership TTL (500 ms with the defaults). 0: one plan chunk
   * (500 occurrences) per tick.
   */
  planBudgetMs?: number;
  /** A job is handed to a worker this long before its fire time; the worker then waits on a precise local timer. */
  prefetchMs: number;
  /** Occurrences later than this after their fire time when first planned follow the catch-up policy. */
  catchUpGraceMs: number;
  /** How far back occurrences are accounted for; older ones are never created or run. Must be < retentionMs. */
  horizonMs: number;
  /** How long run records (and finished BullMQ jobs) are kept. */
  retentionMs: number;
  /**
   * Live-lane slots: on-time occurrences (including prefetched ones waiting for their fire time) one replica
   * holds at once. Nothing else uses them (enqueue.ts).
   */
  concurrency: number;
  /**
   * Most occurrences of one fire-time slot per live-lane BullMQ job (enqueue.ts batches); default 50 (what BullMQ
   * costs per job is paid once per batch). 1: one job per occurrence. A batch's runs take live slots of
   * `concurrency` each; its occurrences are claimed one by one.
   */
  batchSize: number;
  /**
   * Backlog-lane slots: runs of work asked for after the fact (trigger, resume, catch-up, admitted backfill)
   * one replica holds at once, beside and never instead of the live slots.
   */
  backlogConcurrency: number;
  /** Backfill occurrences admitted at once across the whole flock (runner/redis/lua/backfill-admit.lua): the backfill's pace. */
  backfillConcurrency: number;
  /** On SIGTERM, how long running runs may finish before they are aborted and handed over. */
  shutdownGraceMs: number;
  /** A planned occurrence not claimed this long after its fire time is checked for a lost enqueue. */
  sweepAfterMs: number;
  /**
   * Redis replicas that must acknowledge a claim before its run starts, and a final state (Redis `WAIT` after
   * the claim and finish scripts; runner/redis/store.ts ReplicaWait). 0: no WAIT.
   */
  redisWaitReplicas: number;
  /** How long each WAIT waits for them; shorter than lockMs / 2 (a claim answered later is given up). */
  redisWaitTimeoutMs: number;
  /**
   * Redis turns: this replica sends its on-time claims and its finishes at multiples of this on the Redis clock
   * (the same instants on every replica), so the calls of a turn share Redis's wake-ups (`npm run bench -- wakeup`:
   * a call that wakes an idle Redis costs it ~40 µs more than one that arrives with others). A run starts up to
   * this much later after its fire time; a finish is recorded up to this much later. 0: each call at once.
   * At most {@link MAX_REDIS_TURN_MS}.
   */
  redisTurnMs: number;
}

/** Defaults: failover within ~6 s of a SIGKILL (lock 4 s + stall check 2 s), under the 10 s promised. */
export const DEFAULT_OPTIONS: Omit<RunnerOptions, 'replica'> = {
  namespace: 'cronflock',
  lockMs: 4_000,
  stalledIntervalMs: 2_000,
  maxStalls: 3,
  lookaheadMs: 3_000,
  tickMs: 500,
  prefetchMs: 500,
  catchUpGraceMs: 1_000,
  horizonMs: 3_600_000,
  retentionMs: 86_400_000,
  concurrency: 200,
  batchSize: 50,
  backlogConcurrency: 10,
  backfillConcurrency: 2,
  shutdownGraceMs: 10_000,
  sweepAfterMs: 5_000,
  redisWaitReplicas: 0,
  redisWaitTimeoutMs: 1_000,
  redisTurnMs: 0,
};

/**
 * The longest Redis turn: it adds to every run's start lateness (promise 3: a start bounded by the claim
 * mechanism, not by a polling period), so it stays a few milliseconds.
 */
export const MAX_REDIS_TURN_MS = 50;

/**
 * The longest lookahead: every occurrence due within it is planned (a Redis key and a queued job each) on every
 * tick, so a long one multiplies the keys without making a run more punctual (a 2 h lookahead planned 27,000 keys
 * for 60 schedules and stretched each tick to seconds). A few seconds covers the enqueue; 5 minutes is ample.
 */
export const MAX_LOOKAHEAD_MS = 300_000;

/** The shortest lock this engine supports: below it, renewals (every lockMs/3) compete with real work. */
export const MIN_LOCK_MS = 500;

/** Invalid runner options; the message names the option and how to fix it. */
export class OptionsError extends Error {
  readonly code = 'OPTIONS_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'OptionsError';
  }
}

/** A default replica name: host, pid and a random suffix (pids repeat across containers). */
export function defaultReplicaName(): string {
  return `${hostname()}-${process.pid}-${randomBytes(2).toString('hex')}`;
}

/**
 * Fills defaults and checks the relations between options.
 * @throws OptionsError naming the first option that is out of range.
 */
export function compileOptions(user: Partial<RunnerOptions> = {}): RunnerOptions {
  const o: RunnerOptions = { ...DEFAULT_OPTIONS, replica: defaultReplicaName(), ...user };
  if (user.stalledIntervalMs === undefined && user.lockMs !== undefined) o.stalledIntervalMs = Math.max(100, Math.floor(o.lockMs / 2));
  const need = (ok: boolean, msg: string): void => {
    if (!ok) throw new OptionsError(msg);
  };
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'number') need(Number.isFinite(v) && v >= 0, `${k} must be a non-negative number (got ${v})`);
    if (typeof v === 'number' && k.endsWith('Ms') && k !== 'retentionMs' && k !== 'horizonMs') {
      need(v <= 2 ** 31 - 1, `${k} must be at most 24 days (${2 ** 31 - 1} ms): longer timers cannot be set`);
    }
  }
  need(o.lockMs <= 3_600_000, `lockMs must be at most 1 hour (got ${o.lockMs} ms): a longer lease only slows failover`);
  need(o.lockMs >= MIN_LOCK_MS, `lockMs must be at least ${MIN_LOCK_MS} ms (got ${o.lockMs})`);
  need(o.stalledIntervalMs >= 100 && o.stalledIntervalMs <= o.lockMs, `stalledIntervalMs must be between 100 ms and lockMs (${o.lockMs} ms)`);
  need(
    o.lookaheadMs <= MAX_LOOKAHEAD_MS,
    `lookaheadMs must be at most ${MAX_LOOKAHEAD_MS / 60_000} minutes (got ${o.lookaheadMs} ms): every occurrence due within it is planned and kept in Redis at once; a few seconds is enough (default ${DEFAULT_OPTIONS.lookaheadMs} ms)`,
  );
  need(o.tickMs >= 50 && o.tickMs * 2 <= o.lookaheadMs, `tickMs must be ≥ 50 ms and at most half of lookaheadMs (${o.lookaheadMs} ms)`);
  need(o.prefetchMs < o.lookaheadMs, `prefetchMs must be shorter than lookaheadMs (${o.lookaheadMs} ms)`);
  need(
    o.retentionMs > o.horizonMs + o.lookaheadMs,
    `retentionMs (${o.retentionMs} ms) must exceed horizonMs + lookaheadMs (${o.horizonMs + o.lookaheadMs} ms): run records must outlive every occurrence that may still be planned (up to horizonMs back and lookaheadMs ahead), or a planner that fell behind would plan one again after its record expired`,
  );
  for (const k of ['concurrency', 'batchSize', 'backlogConcurrency', 'backfillConcurrency'] as const) {
    need(o[k] >= 1 && Number.isInteger(o[k]), `${k} must be a whole number ≥ 1`);
  }
  need(o.batchSize <= 1000, `batchSize must be at most 1000 (got ${o.batchSize}): a bigger batch is not split among workers`);
  need(Number.isInteger(o.maxStalls) && o.maxStalls >= 0, 'maxStalls must be a whole number ≥ 0');
  need(Number.isInteger(o.redisWaitReplicas), 'redisWaitReplicas must be a whole number ≥ 0');
  if (o.redisWaitReplicas > 0) {
    // WAIT with timeout 0 waits for ever; a claim answered after half its lease is given up (executor.ts).
    need(
      o.redisWaitTimeoutMs >= 1 && o.redisWaitTimeoutMs < o.lockMs / 2,
      `redisWaitTimeoutMs must be at least 1 ms and shorter than half of lockMs (${o.lockMs / 2} ms), got ${o.redisWaitTimeoutMs} ms`,
    );
  }
  need(
    o.redisTurnMs <= MAX_REDIS_TURN_MS,
    `redisTurnMs must be at most ${MAX_REDIS_TURN_MS} ms (got ${o.redisTurnMs} ms): it delays every run's start by up to that much; 5–10 ms shares Redis's wake-ups already`,
  );
  need(o.replica.length > 0 && !/\s/.test(o.replica), 'replica must be a non-empty name without spaces');
  return o;
}
