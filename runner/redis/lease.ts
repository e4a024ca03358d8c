/**
 * A lease on the Redis clock, seen from its holder: the one acquire/renew/lose/abort mechanism behind a claim
 * (`engine/claim.ts`) and a job lock (`redis/job-locks.ts`). (Model: BullMQ's lock manager.)
 *
 * Redis decides when the lease ends (its scripts compare with `TIME`, and never revive a lapsed lease); this side
 * renews it every ttl/3 and declares it lost — its `signal` fires — as soon as it can know:
 * - a renewal is refused (another holder took over, or the lease lapsed on the Redis clock);
 * - locally, when ttl has passed on the monotonic clock since the last renewal that succeeded was *sent*: the
 *   lease may have lapsed, so the holder stops before anyone could take over. This is what fires first after a
 *   SIGSTOP/SIGCONT or a long GC pause, without waiting for a Redis round trip.
 * `signal.aborted` (and `signal.throwIfAborted()`) of this signal also compare with that deadline when read, so code
 * that checks them right after an await sees the loss even when, after a SIGCONT, the event loop delivers pending
 * I/O completions before the deadline's timer runs.
 * A renewal that fails (Redis briefly away) is logged and tried again soon (within 250 ms) while the lease lasts.
 * Timers are unref'd: a held lease alone never keeps a process alive.
 */
import { redisFailure } from './outage.js';

/** AbortSignal's own `aborted` getter. */
const abortedOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;

/** What a lease logs: a failed renewal, at warn (a pino logger, or a job's logger, satisfies it). */
export interface LeaseLogger {
  warn(obj: object, msg: string): void;
}

/** Options of {@link HeldLease}. */
export interface HeldLeaseOptions<E extends Error> {
  /** The lease's length, ms; renewals every ttlMs/3 (at least 50 ms apart). */
  ttlMs: number;
  /** `performance.now()` when the acquiring call was sent: the lease is certainly ours until then + ttlMs. */
  sentMono: number;
  /**
   * Sends one renewal: resolves true when renewed, false when Redis refused it (the lease is gone), or an error
   * when renewed but the lease must end all the same (e.g. a newer occurrence asked it to stop); throws when
   * Redis could not be asked (then it is tried again while the lease lasts).
   */
  renew: () => Promise<boolean | E>;
  /** The error the signal fires with when the lease is lost: its ttl passed unrenewed (`lapsed`) or a renewal was `refused`. */
  lostError: (why: 'lapsed' | 'refused') => E;
  /** Where a failed renewal is logged; none: not logged. */
  log?: LeaseLogger | undefined;
}

/** One held lease until {@link HeldLease.close} or {@link HeldLease.abort}. */
export class HeldLease<E extends Error = Error> {
  private readonly ac = new AbortController();
  private renewTimer: NodeJS.Timeout | undefined;
  private guardTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Monotonic time (performance.now) until which the lease is certainly ours. */
  private validUntilMono: number;
  private resolveLost!: (e: E) => void;
  /** Resolves with the error when the lease is lost or aborted (never when it is only closed). */
  readonly lost: Promise<E>;

  private readonly renewedListeners = new Set<(untilMono: number) => void>();

  constructor(private readonly o: HeldLeaseOptions<E>) {
    this.lost = new Promise((r) => (this.resolveLost = r));
    this.validUntilMono = o.sentMono + o.ttlMs;
    // Reading the signal's state checks the local deadline first: the timer alone can run late (see above).
    const signal = this.ac.signal;
    Object.defineProperty(signal, 'aborted', {
      configurable: true,
      get: () => {
        if (!abortedOf.call(signal)) this.checkDeadline();
        return abortedOf.call(signal) as boolean;
      },
    });
    Object.defineProperty(signal, 'throwIfAborted', {
      configurable: true,
      value: () => {
        if (!abortedOf.call(signal)) this.checkDeadline();
        AbortSignal.prototype.throwIfAborted.call(signal);
      },
    });
    this.armGuard();
    this.scheduleRenew(false);
  }

  /** Fires when the lease is lost or aborted; `signal.reason` is the error. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** The lease's length, ms. */
  get ttlMs(): number {
    return this.o.ttlMs;
  }

  /**
   * `performance.now()` until which the lease is certainly ours: the send time of the last renewal that succeeded
   * (or of the acquiring call) plus ttlMs — never the reply time, which may come arbitrarily late.
   */
  get untilMono(): number {
    return this.validUntilMono;
  }

  /** Calls `f(untilMono)` after every renewal that succeeded; returns the unsubscribe. */
  onRenewed(f: (untilMono: number) => void): () => void {
    this.renewedListeners.add(f);
    return () => this.renewedListeners.delete(f);
  }

  /** Ends the lease now with `err`: stops renewing, fires the signal, resolves {@link HeldLease.lost} (idempotent). */
  abort(err: E): void {
    if (this.aborted) return;
    this.stopTimers();
    this.ac.abort(err);
    this.resolveLost(err);
  }

  /** Stops renewing without firing the signal (the work under the lease is over). */
  close(): void {
    this.closed = true;
    this.stopTimers();
  }

  private get ended(): boolean {
    return this.closed || this.aborted;
  }

  /** The signal's own state (its `aborted` property checks the deadline first, see the constructor). */
  private get aborted(): boolean {
    return abortedOf.call(this.ac.signal) as boolean;
  }

  private stopTimers(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    if (this.guardTimer) clearTimeout(this.guardTimer);
  }

  private armGuard(): void {
    if (this.guardTimer) clearTimeout(this.guardTimer);
    this.guardTimer = setTimeout(() => this.checkGuard(), Math.max(0, this.validUntilMono - performance.now()));
    this.guardTimer.unref();
  }

  private checkGuard(): void {
    if (this.ended) return;
    if (!this.checkDeadline()) this.armGuard();
  }

  /** Fires the signal (`lapsed`) when the local deadline has passed; true when the lease has ended. */
  private checkDeadline(): boolean {
    if (this.ended) return true;
    if (performance.now() < this.validUntilMono) return false;
    this.abort(this.o.lostError('lapsed'));
    return true;
  }

  /** Next renewal: every ttl/3, or soon after a failed attempt (Redis briefly away) while the lease lasts. */
  private scheduleRenew(afterFailure: boolean): void {
    const period = Math.max(50, Math.floor(this.o.ttlMs / 3));
    this.renewTimer = setTimeout(() => void this.renew(), afterFailure ? Math.min(250, period) : period);
    this.renewTimer.unref();
  }

  private async renew(): Promise<void> {
    if (this.ended) return;
    // A timer that fires late (process stopped, event loop blocked) must not renew a lease that may have lapsed.
    this.checkGuard();
    if (this.ended) return;
    const sentMono = performance.now();
    try {
      const renewed = await this.o.renew();
      if (this.ended) return;
      if (renewed === false) {
        this.abort(this.o.lostError('refused'));
        return;
      }
      // Redis renewed a live lease (it never revives a lapsed one), so it lasts at least ttl from the send time.
      // The reply may come late (this process was stopped while it waited): past even that, it ends here.
      this.validUntilMono = sentMono + this.o.ttlMs;
      if (this.checkDeadline()) return;
      this.armGuard();
      if (renewed !== true) {
        this.abort(renewed);
        return;
      }
      for (const f of this.renewedListeners) f(this.validUntilMono);
    } catch (err) {
      const f = redisFailure(err);
      this.o.log?.warn(f.fields, `lease renewal failed: ${f.text}; retrying until the lease lapses`);
      if (!this.ended) this.scheduleRenew(true);
      return;
    }
    this.scheduleRenew(false);
  }
}
