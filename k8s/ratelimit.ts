/**
 * Client-side request rate limit: a token bucket, as client-go's `flowcontrol.NewTokenBucketRateLimiter(qps,
 * burst)` (golang.org/x/time/rate underneath): the bucket holds at most `burst` tokens, refills at `qps` tokens
 * per second, and each request takes one token, waiting for it when the bucket is empty. Waiters are served in
 * arrival order (each one reserves the next token, as `rate.Limiter.Reserve` does).
 */
import { sleep } from '../runner/time/wait.js';
import { K8sError } from './errors.js';

/** Options of a {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Sustained requests per second; > 0. */
  qps: number;
  /** Requests that may go at once after a quiet period; integer >= 1. */
  burst: number;
  /** Clock in milliseconds; default `performance.now()` (monotonic). */
  now?: () => number;
}

/** A token bucket; see the module docs. */
export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;

  /** Throws `RangeError` when `qps` <= 0 or `burst` < 1. */
  constructor(options: TokenBucketOptions) {
    if (!(options.qps > 0)) throw new RangeError(`qps must be > 0, got ${options.qps}`);
    if (!(options.burst >= 1) || !Number.isInteger(options.burst)) {
      throw new RangeError(`burst must be an integer >= 1, got ${options.burst}`);
    }
    this.qps = options.qps;
    this.burst = options.burst;
    this.now = options.now ?? (() => performance.now());
    this.tokens = options.burst;
    this.last = this.now();
  }

  /**
   * Reserves one token and returns the milliseconds the caller must wait before using it (0 when one was
   * available). The token count may go negative: later callers queue behind earlier ones.
   */
  reserve(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Gives back a reserved token that was not used (its waiter was aborted). */
  cancel(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  /**
   * Waits until a token is available and takes it. Rejects with a {@link K8sError} `ABORTED` (and gives the
   * token back) when `signal` fires first.
   */
  async take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw abortError(signal);
    const waitMs = this.reserve();
    if (waitMs <= 0) return;
    await sleep(waitMs, signal);
    if (signal?.aborted) {
      this.cancel();
      throw abortError(signal);
    }
  }
}

function abortError(signal: AbortSignal | undefined): K8sError {
  return new K8sError({ code: 'ABORTED', message: 'aborted while waiting for the client-side rate limit', cause: signal?.reason });
}
