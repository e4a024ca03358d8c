/**
 * The flock's one clock: the Redis server's `TIME` (promise 5 of the design notes).
 *
 * Each replica estimates `offset = redisTime − hostTime` from `TIME` round trips (Cristian's algorithm: the
 * server read the clock somewhere inside the round trip, so the midpoint is the estimate and half the round trip
 * bounds the error), keeping the sample with the shortest round trip among recent ones. Decisions that must
 * agree across replicas (deadlines, missed/late, leases) are taken inside Lua scripts with `TIME` itself; this
 * estimate only places local timers (when to wake up) and is exported as the host's measured skew.
 */
import type { RedisClient } from './connect.js';

const TIME_LUA = "return redis.call('TIME')";

/** One measurement of the host/Redis clock difference. */
export interface ClockSample {
  /** redisTime − hostTime, ms. Positive: this host is behind Redis. */
  offsetMs: number;
  /** Round trip of the TIME call, ms; the offset's error is at most half of it. */
  rttMs: number;
  /** Host time (Date.now()) when taken. */
  atMs: number;
}

/** Estimates Redis time on this host. Call {@link RedisClock.sync} periodically (the replica does every 5 s). */
export class RedisClock {
  private samples: ClockSample[] = [];
  private best: ClockSample | undefined;

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
    const t0 = Date.now();
    const p0 = performance.now();
    // A script keyed by slotKey runs where the scripts do; a bare TIME would go to any node of a Cluster.
    const [sec, usec] = (await this.redis.eval(TIME_LUA, 1, this.slotKey)) as [string | number, string | number];
    const rttMs = performance.now() - p0;
    const redisMs = Number(sec) * 1000 + Number(usec) / 1000;
    const sample: ClockSample = { offsetMs: redisMs - (t0 + rttMs / 2), rttMs, atMs: t0 };
    this.samples.push(sample);
    if (this.samples.length > this.keep) this.samples.shift();
    this.best = this.samples.reduce((a, b) => (b.rttMs < a.rttMs ? b : a));
    return sample;
  }

  /** True once at least one sample was taken. */
  get synced(): boolean {
    return this.best !== undefined;
  }

  /** Estimated redisTime − hostTime in ms (0 before the first sync). */
  get offsetMs(): number {
    return this.best?.offsetMs ?? 0;
  }

  /** Estimated current Redis time, UTC ms, a whole number (times become keys and job inputs: no fractions). */
  now(): number {
    return Math.round(Date.now() + this.offsetMs);
  }

  /** Host-timer delay (ms, ≥ 0) until the Redis clock reads `redisMs`. */
  delayUntil(redisMs: number): number {
    return Math.max(0, redisMs - this.now());
  }
}
