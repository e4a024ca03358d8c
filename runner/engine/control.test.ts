/**
 * Which schedules a control operation (suspend, trigger, the API's actions) accepts, on a real redis-server: one a
 * live replica publishes; one whose publisher just died is accepted once a live replica re-publishes it (for a
 * moment after a SIGKILL the flock still runs it while its entry names the dead replica); none when no replica is
 * live.
 */
import { describe, expect, it } from 'vitest';
import { Keyspace } from '../redis/keys.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { ControlError, definitionOf, REPUBLISH_WAIT_MS } from './control.js';

const pr = usePrivateRedis();
const keys = new Keyspace('ctl');
const def = (replica: string, source?: string) => JSON.stringify({ cron: '* * * * *', timeZone: 'UTC', jitterMs: 0, definitionHash: 'h', replica, loadedAtMs: 1, ...(source ? { source } : {}) });
const member = async (replica: string, inMs: number): Promise<void> => {
  const [s] = await pr.redis.time();
  await pr.redis.zadd(keys.replicas, Number(s) * 1000 + inMs, replica);
};

describe('definitionOf', () => {
  it('waits for a live replica to re-publish a schedule whose publisher is gone, and refuses at once when none is live', async () => {
    const c = { redis: pr.redis, keys };
    await pr.redis.hset(keys.definitions, 'a', def('dead'));
    await member('dead', -1_000); // expired
    await member('alive', 60_000);
    const asked = performance.now();
    const pending = definitionOf(c, 'a');
    setTimeout(() => void pr.redis.hset(keys.definitions, 'a', def('alive')), 600);
    expect((await pending).replica).toBe('alive');
    expect(performance.now() - asked).toBeGreaterThanOrEqual(500);

    // Nobody re-publishes within the wait: refused, naming the gone publisher.
    await pr.redis.hset(keys.definitions, 'b', def('dead'));
    await expect(definitionOf(c, 'b')).rejects.toThrow(/published by replica dead, which is no longer running/);
    // No live replica at all: refused without waiting.
    await pr.redis.zrem(keys.replicas, 'alive');
    const t0 = performance.now();
    await expect(definitionOf(c, 'b')).rejects.toBeInstanceOf(ControlError);
    expect(performance.now() - t0).toBeLessThan(REPUBLISH_WAIT_MS / 2);
  }, 20_000);

  it('accepts a stored schedule whose publisher is gone at once while another replica is live (every replica runs the store)', async () => {
    const c = { redis: pr.redis, keys };
    await pr.redis.hset(keys.definitions, 'st', def('gone', 'store'), 'file', def('gone', 'a.yaml:3'));
    await member('gone', -1_000);
    await member('other', 60_000);
    const t0 = performance.now();
    expect((await definitionOf(c, 'st')).replica).toBe('gone');
    expect(performance.now() - t0).toBeLessThan(REPUBLISH_WAIT_MS / 2);
    // A schedule file's is not: only the replicas with that file run it.
    await expect(definitionOf(c, 'file')).rejects.toThrow(/published by replica gone, which is no longer running/);
    // Nobody live: refused, stored or not.
    await pr.redis.zrem(keys.replicas, 'other');
    await expect(definitionOf(c, 'st')).rejects.toBeInstanceOf(ControlError);
  }, 20_000);
});
