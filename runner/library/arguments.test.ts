/**
 * The library refuses what it does not take, before anything is sent (found by a user: a misspelled `ifVersion`
 * overwrote, `tenants.setLimit('acme', 'lots')` removed a limit, `ifVersion: '5'` failed with a Lua error, and
 * `connectFlock` waited for ever on a Redis that accepted the connection but never answered). Real redis-server.
 */
import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { connectFlock, LibraryArgumentError, startReplica } from './index.js';

const pr = usePrivateRedis();
const def = { name: 'a1', cron: '0 8 * * *', job: { kind: 'http', url: 'http://127.0.0.1:9/x' } };

describe('library arguments', () => {
  it('refuses mistyped or misspelled options of the schedule and tenant calls, and writes nothing', async () => {
    const flock = await connectFlock({ redis: pr.server.url, namespace: 'lib' });
    try {
      await expect(flock.schedules.upsert(def, { ifVersion: '5' as unknown as number })).rejects.toThrow(/^upsert options\.ifVersion: must be a whole number from 0 to \d+ \(0: only if it does not exist\); got "5"$/);
      await expect(flock.schedules.upsert(def, { ifversion: 1 } as never)).rejects.toThrow(/^upsert options\.ifversion: unknown option; did you mean "ifVersion"\?/);
      await expect(flock.schedules.upsert(def, { ifVersion: -1 })).rejects.toThrow(LibraryArgumentError);
      expect(await flock.schedules.get('a1')).toBeUndefined();
      await expect(flock.tenants.setLimit('acme', 'lots' as unknown as number)).rejects.toThrow(/^tenants\.setLimit limit: must be a whole number/);
      await expect(flock.tenants.setLimit('Bad Tenant', 5)).rejects.toThrow(/^tenants\.setLimit tenant: must be a DNS-1123 label/);
      await expect(flock.tenants.setLimit('acme', -3)).rejects.toThrow(LibraryArgumentError);
      await expect(flock.tenants.setLimit('acme', 1.5)).rejects.toThrow(LibraryArgumentError);
      expect((await flock.tenants.list()).tenants).toEqual([]);
      await flock.tenants.setLimit('acme', 2);
      expect((await flock.tenants.list()).tenants).toEqual([expect.objectContaining({ tenant: 'acme', limit: 2 })]);
      await expect(flock.schedules.list({ limit: 0 })).rejects.toThrow(/^list options\.limit: must be a whole number from 1 to 1000; got 0$/);
      await expect(flock.schedules.runs('a1', { from: 'yesterday' as unknown as number })).rejects.toThrow(/^runs options\.from: must be a time in UTC ms/);
      await expect(flock.schedules.next('a1', -1)).rejects.toThrow(/^next n: must be a whole number from 1 to 10000/);
      expect((await flock.schedules.upsert(def, { ifVersion: 0 })).ok).toBe(true);
    } finally {
      await flock.close();
    }
  });

  it('refuses unknown options of connectFlock and startReplica, naming the nearest', async () => {
    await expect(connectFlock({ redis: pr.server.url, bogus: 1 } as never)).rejects.toThrow(/^connectFlock options\.bogus: unknown option/);
    await expect(connectFlock({ redis: 42 } as never)).rejects.toThrow(/^connectFlock options\.redis: must be a Redis URL/);
    await expect(startReplica({ redis: pr.server.url, lockMS: 1000 } as never)).rejects.toThrow(/^startReplica options\.lockMS: unknown option; did you mean "lockMs"\?/);
  });

  it('gives up on a Redis that accepts the connection but never answers, saying so, within redisTimeoutMs', async () => {
    const silent: Server = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    try {
      const t0 = performance.now();
      const err = await connectFlock({ redis: `redis://127.0.0.1:${port}`, redisTimeoutMs: 800 }).then(() => undefined, (e: Error) => e);
      expect(err?.message).toMatch(new RegExp(`^cannot reach the flock's Redis at redis://127\\.0\\.0\\.1:${port}: .*did not answer`));
      expect(performance.now() - t0).toBeLessThan(15_000); // generous: the point is that it ends
    } finally {
      silent.close();
    }
  });
});
