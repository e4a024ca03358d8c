/**
 * A live claim: the fencing token, the lease renewal, and the AbortSignal a job sees.
 *
 * The lease lives in the run record on the Redis clock; this side renews it every lockMs/3. The claim is
 * declared lost — and the signal fires — as soon as this process can know it:
 * - a renewal is refused (another replica re-claimed, or the lease lapsed on the Redis clock);
 * - locally, when lockMs has passed on the monotonic clock since the last renewal was *sent* without a newer
 *   success: the lease may have lapsed, so we stop before anyone could re-claim. This is what fires first after
 *   a SIGSTOP/SIGCONT or a long GC pause, without waiting for a Redis round trip;
 * A stale claimant may still finish its work (it cannot be stopped from outside), but its result is refused by
 * the finish script because the token is no longer current.
 */
import type { Logger } from '../log.js';
import type { Store } from '../redis/store.js';
import { redisFailure } from '../redis/outage.js';

/** The reason a claim ended without the job finishing. */
export class ClaimLostError extends Error {
  readonly code = 'CLAIM_LOST';
  constructor(
    message: string,
    /**
     * `lost`: lease lapsed or taken over (the claim is no longer ours); `handover`: given up on SIGTERM;
     * `cancel`: a newer occurrence replaces this one (concurrencyPolicy Replace); `timeout`: the run took longer
     * than the schedule's timeout; `blackout`: an abort blackout window of the schedule opened (windows.ts). With
     * `cancel`, `timeout` and `blackout` the claim is still ours, to record the outcome.
     */
    readonly kind: 'lost' | 'handover' | 'cancel' | 'timeout' | 'blackout' = 'lost',
  ) {
    super(message);
    this.name = 'ClaimLostError';
  }
}

/** Holds one claim until {@link ClaimHolder.close}. */
export class ClaimHolder {
  private readonly ac = new AbortController();
  private renewTimer: NodeJS.Timeout | undefined;
  private guardTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Monotonic time (performance.now) until which the lease is certainly ours. */
  private validUntilMono: number;
  /** Resolves with the loss when the claim is lost. */
  readonly lost: Promise<ClaimLostError>;
  private resolveLost!: (e: ClaimLostError) => void;

  constructor(
    private readonly store: Store,
    readonly key: string,
    readonly token: number,
    private readonly lockMs: number,
    private readonly retentionMs: number,
    claimedAtMono: number,
    private readonly log: Logger,
  ) {
    this.lost = new Promise((r) => (this.resolveLost = r));
    this.validUntilMono = claimedAtMono + lockMs;
    this.armGuard();
    this.scheduleRenew();
  }

  /** Fires when the claim is lost or handed over; `signal.reason` is a {@link ClaimLostError}. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** Ends the claim now with `err` (idempotent). */
  abort(err: ClaimLostError): void {
    if (this.ac.signal.aborted) return;
    this.stopTimers();
    this.ac.abort(err);
    this.resolveLost(err);
  }

  /** Stops renewing (the run finished or the claim ended). */
  close(): void {
    this.closed = true;
    this.stopTimers();
  }

  /** True while the lease is certainly ours (monotonic clock since the last successful renewal). */
  get live(): boolean {
    return !this.closed && performance.now() < this.validUntilMono;
  }

  private stopTimers(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    if (this.guardTimer) clearTimeout(this.guardTimer);
  }

  private armGuard(): void {
    if (this.guardTimer) clearTimeout(this.guardTimer);
    const ms = Math.max(0, this.validUntilMono - performance.now());
    this.guardTimer = setTimeout(() => this.checkGuard(), ms);
  }

  private checkGuard(): void {
    if (this.closed || this.ac.signal.aborted) return;
    if (performance.now() >= this.validUntilMono) {
      this.abort(new ClaimLostError(`lease of ${this.key} lapsed: not renewed within ${this.lockMs} ms`));
    } else this.armGuard();
  }

  /** Next renewal: every lockMs/3, or soon after a failed attempt (Redis briefly away) while the lease lasts. */
  private scheduleRenew(afterFailure = false): void {
    const period = Math.max(50, Math.floor(this.lockMs / 3));
    this.renewTimer = setTimeout(() => void this.renew(), afterFailure ? Math.min(250, period) : period);
  }

  private async renew(): Promise<void> {
    if (this.closed || this.ac.signal.aborted) return;
    // A timer that fires late (process stopped, event loop blocked) must not renew a lease that may have lapsed.
    this.checkGuard();
    if (this.ac.signal.aborted) return;
    const sentMono = performance.now();
    try {
      const { untilMs, cancelBy } = await this.store.renew(this.key, this.token, this.lockMs, this.retentionMs);
      if (this.closed || this.ac.signal.aborted) return;
      if (untilMs === 0) {
        this.abort(new ClaimLostError(`claim of ${this.key} (fencing token ${this.token}) was taken over or lapsed`));
        return;
      }
      this.validUntilMono = sentMono + this.lockMs;
      this.armGuard();
      if (cancelBy) this.abort(new ClaimLostError(`replaced by ${cancelBy} (concurrencyPolicy Replace)`, 'cancel'));
    } catch (err) {
      const f = redisFailure(err);
      this.log.warn(f.fields, `lease renewal failed: ${f.text}; retrying until the lease lapses`);
      if (!this.closed && !this.ac.signal.aborted) this.scheduleRenew(true);
      return;
    }
    if (!this.closed && !this.ac.signal.aborted) this.scheduleRenew();
  }
}
