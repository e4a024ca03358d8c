/**
 * Job locks and fenced checkpoints on a real redis-server: one holder at a time, growing fencing tokens, a
 * waiting second caller, a lapsed lease that fires the holder's signal and refuses its checkpoint writes, and
 * checkpoints a later holder reads.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { JobLockHeldError, RedisJobCoordination } from './job-locks.js';
import { Keyspace } from './keys.js';
import { RedisServerProcess } from './server-process.js';

let server: RedisServerProcess;
let redis: Redis;
let coord: RedisJobCoordination;

beforeAll(async () => {
  server = await RedisServerProcess.start();
  redis = new Redis(server.url);
  coord = new RedisJobCoordination(redis, new Keyspace('t'), 'replica-a');
});
afterAll(async () => {
  redis.disconnect();
  await server.cleanup();
});
beforeEach(async () => {
  await redis.flushall();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('job locks', () => {
  it('one holder at a time; the second caller is refused with the holder named, tokens grow', async () => {
    const a = await coord.lock('restore:c1', { ttlMs: 2000, owner: 'a' });
    expect(a.fencingToken).toBe(1);
    const err = await coord.lock('restore:c1', { ttlMs: 2000, owner: 'b' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobLockHeldError);
    expect((err as JobLockHeldError).holder).toBe('a');
    expect((err as JobLockHeldError).message).toMatch(/held by a \(fencing token 1/);
    // another name is independent
    const other = await coord.lock('restore:c2', { ttlMs: 2000 });
    expect(other.fencingToken).toBe(1);
    await a.release();
    expect(a.signal.aborted).toBe(true);
    const b = await coord.lock('restore:c1', { ttlMs: 2000, owner: 'b' });
    expect(b.fencingToken).toBe(2);
    await b.release();
    await other.release();
  });

  it('a waiting caller gets the lock when the holder releases it; the lease is renewed meanwhile', async () => {
    const a = await coord.lock('x', { ttlMs: 600 });
    setTimeout(() => void a.release(), 1500); // longer than the ttl: renewals keep it
    const t0 = Date.now();
    const b = await coord.lock('x', { ttlMs: 600, waitMs: 5000 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
    expect(b.fencingToken).toBe(2);
    await b.release();
  });

  it('a lapsed holder (renewals stopped) loses: its signal fires, its checkpoint writes are refused, the next holder resumes', async () => {
    const a = await coord.lock('y', { ttlMs: 500 });
    const ca = a.checkpoints('job1');
    await ca.set({ 'o:1': 'created', 'o:2': 'updated' });
    // Simulate a paused holder: another client takes the lock after the lease lapses on the Redis clock.
    await redis.hset(coord.lockKey('y'), 'until', 0);
    const b = await coord.lock('y', { ttlMs: 2000, owner: 'b' });
    expect(b.fencingToken).toBe(2);
    await expect(ca.set({ 'o:3': 'created' })).rejects.toMatchObject({ code: 'LOCK_LOST' });
    expect(a.signal.aborted).toBe(true);
    const cb = b.checkpoints('job1');
    expect(Object.fromEntries(await cb.getAll())).toEqual({ 'o:1': 'created', 'o:2': 'updated' });
    await cb.set({ 'o:3': 'created' });
    expect((await cb.getAll()).size).toBe(3);
    await cb.clear();
    expect((await cb.getAll()).size).toBe(0);
    await b.release();
  });

  it("the holder's own guard fires when renewals cannot reach Redis within the ttl", async () => {
    const r2 = new Redis(server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    await new Promise((r) => r2.once('ready', r));
    const c2 = new RedisJobCoordination(r2, new Keyspace('t'), 'r2');
    const a = await c2.lock('z', { ttlMs: 600 });
    r2.disconnect(); // renewals fail from now on
    await sleep(900);
    expect(a.signal.aborted).toBe(true);
    expect((a.signal.reason as Error).message).toMatch(/lapsed|taken over/);
    await a.release();
  });
});
