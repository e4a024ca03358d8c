/**
 * The flock's one clock: the Redis server's `TIME` (promise 5 of the design notes).
 *
 * Decisions that make a record final or must agree across replicas (deadlines, missed/catch-up, leases, claims)
 * are taken inside Lua scripts on `TIME` itself. This class only estimates Redis time on this host, to place
 * local timers (when to wake up, how far ahead to plan) and to measure the host's skew.
 *
 * The estimate rests on the **monotonic** clock, not the host's wall clock: from `TIME` round trips (Cristian's
 * algorithm: the server read its clock somewhere inside the round trip, so the midpoint is the estimate and half
 * the round trip bounds the error) it keeps the sample with the shortest round trip among recent ones, and reads
 * Redis time as that sample's Redis time plus the `performance.now()` elapsed since it. A host wall clock that
 * is stepped (NTP, an operator, a VM restored from a snapshot) therefore does not move the estimate at all; the
 * step shows in the measured skew ({@link RedisClock.offsetMs}) at once, and {@link RedisClock.detectStep}
 * notices it within one check by comparing wall-clock and monotonic progress. A new sample that disagrees with
 * the estimate by more than the samples' error bounds (Redis' own clock stepped, or this host was suspended and
 * its monotonic clock stood still) replaces the older samples instead of averaging with them.
 */
import type { RedisClient } from './connect.js';
import type { Keyspace } from './keys.js';
import { Scripts } from './script-loader.js';

/**
 * A host wall clock further than this from the Redis clock (either way) is out of bounds: the replica reports
 * it (log line, `cronflock_clock_skew_seconds`, readiness false) and treats deliveries its BullMQ worker
 * promoted early accordingly. Host clocks a few seconds off are tolerated and tested (±3 s).
 */
export const MAX_HOST_SKEW_MS = 5_000;

/** Wall-clock progress that differs from monotonic progress by at least this between two checks is a step. */
export const STEP_THRESHOLD_MS = 500;

/**
 * Slack (ms per ms of sample age) for the monotonic clock drifting against Redis' clock between samples:
 * 1000 ppm, twice the largest rate at which NTP slews a clock.
 */
const DRIFT_PER_MS = 1e-3;

/** One measurement of the host/Redis clock difference. */
export interface ClockSample {
  /** Redis time at the midpoint of the round trip (UTC ms). */
  redisMs: number;
  /** Monotonic time (performance.now(), ms) at the midpoint of the round trip. */
  monoMs: number;
  /** redisTime − hostTime when taken, ms. Positive: this host's wall clock is behind Redis. */
  offsetMs: number;
  /** Round trip of the TIME call, ms; the estimate's error is at most half of it. */
  rttMs: number;
  /** Host wall-clock time (Date.now()) when taken. */
  atMs: number;
  /**
   * When this sample disagreed with the estimate of the previous ones beyond their error bounds (Redis' clock
   * stepped, or this host's monotonic clock stood still in a suspend): by how much (ms), and the older samples
   * were dropped. Absent otherwise.
   */
  jumpMs?: number;
}

/**
 * The Redis server's time now, in whole ms (UTC), read on the node that owns the flock's hash slot (`keys.ns`),
 * through the `time` script: the clock every script decides on. For one-off reads (the status, the dashboard);
 * a replica keeps a {@link RedisClock}. @throws what ioredis throws when Redis is unreachable.
 */
export async function redisTimeMs(redis: RedisClient, keys: Pick<Keyspace, 'ns'>): Promise<number> {
  const [sec, usec] = (await Scripts.on(redis).run('time', [keys.ns])) as [string | number, string | number];
  return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
}

/** Estimates Redis time on this host. Call {@link RedisClock.sync} periodically (the replica does every 5 s). */
export class RedisClock {
  private samples: ClockSample[] = [];
  private best: ClockSample | undefined;
  private lastCheck: { wallMs: number; monoMs: number } | undefined;

  /**
   * @param slotKey a key of the flock's hash slot (e.g. `keys.ns`): `TIME` is read on the node that owns it,
   *   the node whose clock our Lua scripts use. Only a Redis Cluster has more than one node to choose from.
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keep = 5,
    private readonly slotKey = '{cronflock}',
  ) {}

  /** Takes one TIME sample and updates the estimate. Throws what ioredis throws when Redis is unreachable. */
  async sync(): Promise<ClockSample> {
    const p0 = performance.now();
    // A script keyed by slotKey runs where the scripts do; a bare TIME would go to any node of a Cluster.
    const [sec, usec] = (await Scripts.on(this.redis).run('time', [this.slotKey])) as [string | number, string | number];
    const p1 = performance.now();
    const wall = Date.now();
    const rttMs = p1 - p0;
    const redisMs = Number(sec) * 1000 + Number(usec) / 1000;
    const monoMs = p0 + rttMs / 2;
    const sample: ClockSample = { redisMs, monoMs, offsetMs: redisMs - (wall - rttMs / 2), rttMs, atMs: wall };
    if (this.best) {
      const predicted = this.best.redisMs + (monoMs - this.best.monoMs);
      const bound = rttMs / 2 + this.best.rttMs / 2 + 5 + DRIFT_PER_MS * (monoMs - this.best.monoMs);
      if (Math.abs(redisMs - predicted) > bound) {
        sample.jumpMs = Math.round(redisMs - predicted);
        this.samples = [];
      }
    }
    this.samples.push(sample);
    if (this.samples.length > this.keep) this.samples.shift();
    this.best = this.samples.reduce((a, b) => (b.rttMs < a.rttMs ? b : a));
    return sample;
  }

  /** True once at least one sample was taken. */
  get synced(): boolean {
    return this.best !== undefined;
  }

  /**
   * Estimated redisTime − hostTime in ms, now (0 before the first sync): this host's skew. It follows a step of
   * the host's wall clock at once, since the estimate of Redis time does not move with it.
   */
  get offsetMs(): number {
    return this.best ? this.now() - Date.now() : 0;
  }

  /** True when the host's wall clock is within {@link MAX_HOST_SKEW_MS} of the Redis clock (or not yet measured). */
  get hostClockInBounds(): boolean {
    return Math.abs(this.offsetMs) <= MAX_HOST_SKEW_MS;
  }

  /**
   * Estimated current Redis time, UTC ms, a whole number (times become keys and job inputs: no fractions).
   * Before the first sync: the host's wall clock.
   */
  now(): number {
    const b = this.best;
    return Math.round(b ? b.redisMs + (performance.now() - b.monoMs) : Date.now());
  }

  /** Host-timer delay (ms, ≥ 0) until the Redis clock reads `redisMs`. */
  delayUntil(redisMs: number): number {
    return Math.max(0, redisMs - this.now());
  }

  /**
   * Compares the host wall clock's progress with the monotonic clock's since the previous call: a difference
   * of {@link STEP_THRESHOLD_MS} or more is a step of the wall clock (or a suspend, during which the monotonic
   * clock stands still). Call it often (the replica does every 250 ms) and sync at once when it reports one.
   * @returns the step in ms (positive: the wall clock jumped forward), or null.
   */
  detectStep(): number | null {
    const now = { wallMs: Date.now(), monoMs: performance.now() };
    const prev = this.lastCheck;
    this.lastCheck = now;
    if (!prev) return null;
    const stepMs = now.wallMs - prev.wallMs - (now.monoMs - prev.monoMs);
    return Math.abs(stepMs) >= STEP_THRESHOLD_MS ? Math.round(stepMs) : null;
  }
}
