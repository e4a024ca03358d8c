/**
 * A live claim: the fencing token, the lease renewal, and the AbortSignal a job sees.
 *
 * The lease lives in the run record on the Redis clock; {@link HeldLease} renews it every lockMs/3 and fires the
 * signal as soon as this process can know the claim is lost (a refused renewal, or lockMs passed on the
 * monotonic clock since the last renewal was sent), or when a newer occurrence asks it to stop (Replace).
 * The claim is its job's {@link JobLease}: a module job's sandbox process learns the deadline with every renewal
 * and ends itself there, even while this replica is stopped (jobs/module-sandbox.ts). In-process code that ignores
 * the signal may still finish its work, but its result is refused by the finish script because the token is no
 * longer current.
 */
import type { JobLease } from '../../jobs/types.js';
import type { Logger } from '../log.js';
import { HeldLease } from '../redis/lease.js';
import type { Store } from '../redis/store.js';

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

/** Holds one claim until {@link ClaimHolder.close}: its lease (redis/lease.ts) renewed by the renew script. */
export class ClaimHolder implements JobLease {
  private readonly lease: HeldLease<ClaimLostError>;

  constructor(
    store: Store,
    readonly key: string,
    readonly token: number,
    lockMs: number,
    retentionMs: number,
    claimedAtMono: number,
    log: Logger,
  ) {
    this.lease = new HeldLease<ClaimLostError>({
      ttlMs: lockMs,
      sentMono: claimedAtMono,
      log,
      renew: async () => {
        const { untilMs, cancelBy } = await store.renew(key, token, lockMs, retentionMs);
        if (untilMs === 0) return false;
        return cancelBy ? new ClaimLostError(`replaced by ${cancelBy} (concurrencyPolicy Replace)`, 'cancel') : true;
      },
      lostError: (why) =>
        new ClaimLostError(
          why === 'lapsed'
            ? `lease of ${key} lapsed: not renewed within ${lockMs} ms`
            : `claim of ${key} (fencing token ${token}) was taken over or lapsed`,
        ),
    });
  }

  /** Fires when the claim is lost or handed over; `signal.reason` is a {@link ClaimLostError}. */
  get signal(): AbortSignal {
    return this.lease.signal;
  }

  /** Resolves with the loss when the claim is lost. */
  get lost(): Promise<ClaimLostError> {
    return this.lease.lost;
  }

  /** The lease's length, ms (the replica's lockMs). */
  get ttlMs(): number {
    return this.lease.ttlMs;
  }

  /**
   * `performance.now()` until which the claim is certainly live: the last successful renewal's send time (or the
   * claim's) plus lockMs. The signal fires there at the latest (a timer, and every read of `signal.aborted`).
   */
  get untilMono(): number {
    return this.lease.untilMono;
  }

  /** Calls `f(untilMono)` after every successful renewal; returns the unsubscribe. */
  onRenewed(f: (untilMono: number) => void): () => void {
    return this.lease.onRenewed(f);
  }

  /** Ends the claim now with `err` (idempotent). */
  abort(err: ClaimLostError): void {
    this.lease.abort(err);
  }

  /** Stops renewing (the run finished or the claim ended). */
  close(): void {
    this.lease.close();
  }
}
