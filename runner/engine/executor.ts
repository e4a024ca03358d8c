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
 */
import { DelayedError, WaitingError, Worker, type Job } from 'bullmq';
import { setMaxListeners } from 'node:events';
import type { RedisClient } from '../redis/connect.js';
import { findJobKind } from '../../jobs/registry.js';
import type { JobContext } from '../../jobs/types.js';
import type { Logger } from '../log.js';
import type { Keyspace } from '../redis/keys.js';
import { RedisJobCoordination } from '../redis/job-locks.js';
import type { RedisClock } from '../redis/clock.js';
import type { FinishResult, Store } from '../redis/store.js';
import { ClaimHolder, ClaimLostError } from './claim.js';
import type { RunnerOptions } from './options.js';
import type { OccurrenceJobData } from './enqueue.js';
import type { EngineSchedule } from './schedule.js';
import { armBlackoutAbort, startingDeadlineForClaimMs } from './windows.js';

/** One finished or abandoned delivery, as reported to listeners (the demo prints these). */
export interface RunEvent {
  schedule: string;
  key: string;
  state:
    | 'started'
    | 'succeeded'
    | 'failed'
    | 'retrying'
    | 'lost'
    | 'handover'
    | 'skipped'
    | 'missed'
    | 'final'
    | 'stale'
    | 'stalled-out';
  replica: string;
  attempt?: number;
  fencingToken?: number;
  dueMs: number;
  fireMs: number;
  startMs?: number;
  endMs?: number;
  error?: string;
  /** For a lost claim: whether its late completion was refused. */
  recorded?: boolean;
}

interface ActiveRun {
  holder: ClaimHolder;
}

/** Added to the local wait for a fire time, so that the claim reaches Redis at or just after it. */
const FIRE_MARGIN_MS = 2;

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** Runs claimed occurrences on this replica. */
export class Executor {
  private worker: Worker<OccurrenceJobData> | undefined;
  private readonly stopping = new AbortController();
  private readonly active = new Map<string, ActiveRun>();
  private schedules = new Map<string, EngineSchedule>();
  /** Listeners of finished runs (tests, demo). */
  onRun: ((e: RunEvent) => void) | undefined;
  /** Whether this replica's definition of a schedule is the published one (see definitions.ts). */
  isCurrent: (s: EngineSchedule) => boolean = () => true;
  /** Whether some replica publishes a definition of this schedule name. */
  isPublished: (name: string) => boolean = () => false;

  constructor(
    private readonly store: Store,
    private readonly keys: Keyspace,
    private readonly connection: RedisClient,
    private readonly clock: RedisClock,
    private readonly opts: RunnerOptions,
    private readonly log: Logger,
  ) {
    // Every job waiting for its fire time listens on this signal: thousands at high rates, by design.
    setMaxListeners(0, this.stopping.signal);
  }

  /** Sets the schedules this replica knows; deliveries of other schedules are recorded skipped. */
  setSchedules(schedules: readonly EngineSchedule[]): void {
    this.schedules = new Map(schedules.map((s) => [s.name, s]));
  }

  /** Starts taking deliveries. */
  start(): void {
    this.worker = new Worker<OccurrenceJobData>(this.keys.queueName, (job, token) => this.processSafely(job, token), {
      connection: this.connection,
      prefix: this.keys.ns,
      concurrency: this.opts.concurrency,
      lockDuration: this.opts.lockMs,
      stalledInterval: this.opts.stalledIntervalMs,
      // Stalls are counted by the claim script, which records the failure; BullMQ must not fail jobs silently.
      maxStalledCount: 1_000_000,
      autorun: true,
    });
    this.worker.on('error', (err) => this.log.debug({ err: err.message }, 'queue worker error'));
    // Losing BullMQ's lock only means the job may be delivered again; the claim (our lease) decides who runs,
    // and a second delivery waits ('held') until this claim ends. So the run goes on.
    this.worker.on('lockRenewalFailed', (ids: string[]) =>
      this.log.warn({ jobs: ids }, 'queue lock lost; the claim lease still decides who runs'),
    );
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
    if (!this.worker) return;
    const closing = this.worker.close(); // stops fetching; resolves when processors returned
    this.stopping.abort(); // jobs still waiting for their fire time go back at once
    const deadline = Date.now() + graceMs;
    while (this.active.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const run of this.active.values()) run.holder.abort(new ClaimLostError('replica shutting down: handed over', 'handover'));
    // Wait for the hand-overs (release + job back in wait), not for job code that ignores its signal: that
    // code is fenced, and the process must be able to exit.
    const handoverDeadline = Date.now() + 5_000;
    while (this.active.size > 0 && Date.now() < handoverDeadline) await new Promise((r) => setTimeout(r, 20));
    await closing;
  }

  private emit(e: RunEvent): void {
    try {
      this.onRun?.(e);
    } catch {
      /* a listener's bug must not affect runs */
    }
  }

  private async giveBack(job: Job<OccurrenceJobData>, token: string | undefined): Promise<never> {
    await job.moveToWait(token).catch(() => undefined); // fails harmlessly when our queue lock is gone
    throw new WaitingError();
  }

  /**
   * A delivery that fails for an unexpected reason (Redis unreachable mid-way, a bug) goes back to the queue
   * a second later rather than into BullMQ's failed set, where nothing would deliver it again. If even that
   * fails (Redis away), the job keeps its place in `active` and BullMQ's stall check delivers it again.
   */
  private async processSafely(job: Job<OccurrenceJobData>, token?: string): Promise<unknown> {
    try {
      return await this.process(job, token);
    } catch (err) {
      if (err instanceof WaitingError || err instanceof DelayedError) throw err;
      this.log.warn({ occurrence: job.data.key, err: (err as Error).message }, 'delivery failed; retrying in 1 s');
      await job.moveToDelayed(Date.now() + 1000, token).catch(() => undefined);
      throw new DelayedError();
    }
  }

  private async process(job: Job<OccurrenceJobData>, token?: string): Promise<unknown> {
    const d = job.data;
    const o = this.opts;
    const base = { schedule: d.schedule, key: d.key, dueMs: d.dueMs, fireMs: d.fireMs, replica: o.replica };
    const sched = this.schedules.get(d.schedule);
    if (!sched && this.isPublished(d.schedule) && this.clock.now() <= d.fireMs + o.horizonMs) {
      // Another replica runs this schedule (a rollout with different files): leave the delivery to it.
      await job.moveToDelayed(Date.now() + 1000, token).catch(() => undefined);
      throw new DelayedError();
    }
    if (!sched) {
      const reason = `schedule "${d.schedule}" is not defined on replica ${o.replica}`;
      await this.store.abandon(d.key, 'skipped', reason, o.retentionMs);
      this.log.warn({ occurrence: d.key }, reason);
      this.emit({ ...base, state: 'skipped', error: reason });
      return;
    }
    const kind = findJobKind(sched.job.kind);
    if (!kind) throw new Error(`unknown job kind ${sched.job.kind}`); // refused at load; unreachable
    if (!this.isCurrent(sched)) {
      if (this.clock.now() > d.fireMs + o.horizonMs) {
        const reason = 'no replica ran the current definition within the horizon';
        await this.store.abandon(d.key, 'missed', reason, o.retentionMs);
        this.emit({ ...base, state: 'missed', error: reason });
        return;
      }
      // A newer definition of this schedule is published: leave the run to a replica that has it.
      this.log.debug({ occurrence: d.key }, 'a newer definition is published; giving the delivery back');
      await job.moveToDelayed(Date.now() + 1000, token).catch(() => undefined);
      throw new DelayedError();
    }
    const origin = d.origin ?? 'schedule';
    if (origin === 'schedule' && sched.due.next(d.dueMs - 1) !== d.dueMs) {
      // Planned under an earlier definition whose cron is gone: the current one (ours, checked above) does not
      // have this due time.
      const reason = 'schedule changed: not a due time of the current definition';
      await this.store.abandon(d.key, 'skipped', reason, o.retentionMs);
      this.emit({ ...base, state: 'skipped', error: reason });
      return;
    }

    // Wait for the fire time on a local timer set from the Redis clock; a shutdown hands the job back. The
    // margin covers the timer's and the clock estimate's millisecond rounding: without it most first claims
    // arrived 0–2 ms early and were refused ('early'), a second claim round trip for ~75 % of occurrences.
    await sleep(this.clock.delayUntil(d.fireMs) + FIRE_MARGIN_MS, this.stopping.signal);
    let claim;
    for (;;) {
      if (this.stopping.signal.aborted) return this.giveBack(job, token);
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
        maxStalls: o.maxStalls,
        origin: d.origin ?? 'schedule',
        concurrencyPolicy: sched.concurrencyPolicy,
        maxConcurrent: sched.maxConcurrent,
      });
      if (claim.status === 'early') await sleep(claim.waitMs + 1, this.stopping.signal);
      else if (claim.status === 'held') await sleep(Math.min(claim.waitMs + 5, o.lockMs), this.stopping.signal);
      else if (claim.status === 'claimed') {
        if (performance.now() - sentMono > o.lockMs / 2) {
          // The answer took so long (Redis or this process paused) that the lease may lapse before the first
          // renewal: starting the job now could let it run unfenced for a moment. Give the claim up unrun (the
          // release is token-guarded and is not counted as a stall) and claim again.
          this.log.warn({ occurrence: d.key, fencingToken: claim.token, waitedMs: Math.round(performance.now() - sentMono) }, 'claim answered too late to hold; claiming again');
          await this.store.release(d.key, claim.token, 'claim answered after half its lease').catch(() => false);
          continue;
        }
        return this.run(job, token, sched, kind, claim, sentMono);
      }
      else {
        const reason = claim.status === 'skipped' ? claim.reason : undefined;
        this.log.info({ occurrence: d.key, outcome: claim.status, reason }, 'delivery closed without a run');
        this.emit({ ...base, state: claim.status, ...(reason ? { error: reason } : {}) });
        return;
      }
    }
  }

  private async run(
    job: Job<OccurrenceJobData>,
    token: string | undefined,
    sched: EngineSchedule,
    kind: NonNullable<ReturnType<typeof findJobKind>>,
    claim: { token: number; attempt: number; nowMs: number },
    sentMono: number,
  ): Promise<unknown> {
    const d = job.data;
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
      },
      signal: holder.signal,
      log,
      replica: o.replica,
      coordination: new RedisJobCoordination(this.store.redis, this.keys, o.replica),
    };
    const base = {
      schedule: d.schedule,
      key: d.key,
      dueMs: d.dueMs,
      fireMs: d.fireMs,
      replica: o.replica,
      attempt: claim.attempt,
      fencingToken: claim.token,
      startMs: claim.nowMs,
    };
    log.info(
      { dueAt: iso(d.dueMs), fireAt: iso(d.fireMs), startAt: iso(claim.nowMs), latenessMs: claim.nowMs - d.fireMs },
      'run started',
    );
    this.emit({ ...base, state: 'started' });
    const settled = Promise.resolve()
      .then(() => kind.run(ctx, sched.job))
      .then(
        (value: unknown) => ({ ok: true as const, value }),
        (err: unknown) => ({ ok: false as const, err }),
      );
    this.active.set(job.id!, { holder });
    const timeout =
      sched.timeoutMs === null
        ? undefined
        : setTimeout(() => holder.abort(new ClaimLostError(`timed out after ${sched.timeoutMs} ms`, 'timeout')), sched.timeoutMs);
    const disarmBlackout = armBlackoutAbort(sched, () => this.clock.now(), (name) => holder.abort(new ClaimLostError(`blackout ${name}`, 'blackout')));
    try {
      const first = await Promise.race([settled, holder.lost.then((lost) => ({ lost }))]);
      let outcome: { ok: true; value: unknown } | { ok: false; err: unknown; reason?: string };
      if ('lost' in first) {
        const lost = first.lost;
        if (lost.kind === 'lost' || lost.kind === 'handover') return await this.abandonClaim(job, token, claim.token, lost, settled, log, base);
        // Timeout, replaced or a blackout: the claim is still ours; record the outcome now, whatever the job still does.
        const reason = lost.kind === 'timeout' ? 'timeout' : lost.kind === 'blackout' ? lost.message : 'replaced';
        outcome = { ok: false, err: lost, reason };
        log.warn({ reason: lost.message }, lost.kind === 'timeout' ? 'run timed out; aborted' : lost.kind === 'blackout' ? 'blackout window opened; run aborted' : 'run replaced; aborted');
      } else outcome = first;
      holder.close();
      // Neither a replaced run nor one stopped by a blackout is retried (a retry would run into the same stop).
      const noRetry = !outcome.ok && (outcome.reason === 'replaced' || outcome.reason?.startsWith('blackout '));
      const result = await this.finish(d.key, claim.token, outcome, noRetry ? 0 : sched.retries, sched);
      const endMs = this.clock.now();
      if (result.status === 'refused') {
        log.warn('completion refused: the claim lapsed or was taken over before the run finished');
        this.emit({ ...base, state: 'lost', recorded: false, endMs });
        return await this.giveBack(job, token);
      }
      const error = outcome.ok ? undefined : errorText(outcome.err);
      if (result.status === 'retrying') {
        log.warn({ error, retryAt: iso(result.retryAtMs) }, 'run failed; retrying');
        this.emit({ ...base, state: 'retrying', error, endMs });
        // Deliver the same job again at the retry time (BullMQ delays run on this host's clock).
        await job.moveToDelayed(result.retryAtMs - this.clock.offsetMs, token);
        throw new DelayedError();
      }
      log.info({ state: outcome.ok ? 'succeeded' : 'failed', error, endAt: iso(endMs) }, 'run finished');
      this.emit({ ...base, state: outcome.ok ? 'succeeded' : 'failed', error, endMs, recorded: true });
      return undefined;
    } finally {
      if (timeout) clearTimeout(timeout);
      disarmBlackout();
      holder.close();
      this.active.delete(job.id!);
    }
  }

  /**
   * The claim is no longer ours (lease lapsed or taken over), or is handed over on SIGTERM: give the lease up
   * (token-guarded, a no-op when someone else holds it), put the job back so another replica claims at once,
   * and let whatever the job still does run into the fence: its late completion is sent and refused.
   */
  private async abandonClaim(
    job: Job<OccurrenceJobData>,
    token: string | undefined,
    fencingToken: number,
    lost: ClaimLostError,
    settled: Promise<{ ok: true; value: unknown } | { ok: false; err: unknown }>,
    log: Logger,
    base: Omit<RunEvent, 'state'>,
  ): Promise<never> {
    const key = job.data.key;
    await this.store.release(key, fencingToken, lost.message).catch(() => false);
    log.warn({ reason: lost.message }, lost.kind === 'handover' ? 'run handed over' : 'claim lost; run aborted');
    void settled.then(async (r) => {
      const res = await this.finish(key, fencingToken, r, 0).catch(() => ({ status: 'refused' as const }));
      log.warn(
        { accepted: res.status !== 'refused' },
        res.status !== 'refused' ? 'late completion accepted' : 'late completion refused (stale fencing token)',
      );
    });
    this.emit({ ...base, state: lost.kind === 'handover' ? 'handover' : 'lost', error: lost.message });
    return this.giveBack(job, token);
  }

  private finish(
    key: string,
    token: number,
    r: { ok: true; value: unknown } | { ok: false; err: unknown; reason?: string },
    retries: number,
    sched?: Pick<EngineSchedule, 'retryBackoffMs' | 'retryBackoffMaxMs'>,
  ): Promise<FinishResult> {
    const result = r.ok && r.value !== undefined ? safeJson(r.value) : undefined;
    return this.store.finish(key, token, {
      state: r.ok ? 'succeeded' : 'failed',
      reason: r.ok ? '' : (r.reason ?? 'job failed'),
      error: r.ok ? '' : errorText(r.err),
      result,
      retentionMs: this.opts.retentionMs,
      retries,
      retryBackoffMs: sched?.retryBackoffMs,
      retryBackoffMaxMs: sched?.retryBackoffMaxMs,
    });
  }
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
    return s && s.length <= 4096 ? s : undefined;
  } catch {
    return undefined;
  }
}
