/**
 * The library refuses what it does not take, before anything is sent (found by a user: a misspelled `ifVersion`
 * overwrote, `tenants.setLimit('acme', 'lots')` removed a limit, `ifVersion: '5'` failed with a Lua error, and
 * `connectFlock` waited for ever on a Redis that accepted the connection but never answered). Real redis-server.
 */
import { createServer, type Server } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { connectFlock, FlockClosedError, LibraryArgumentError, startReplica } from './index.js';

const pr = usePrivateRedis();
const def = { name: 'a1', cron: '0 8 * * *', job: { kind: 'http', url: 'http://127.0.0.1:9/x' } };

describe('library arguments', () => {
  it('refuses mistyped or misspelled options of the schedule and tenant calls, and writes nothing', async () => {
    const flock = await connectFlock({ redis: pr.server.url, namespace: 'lib' });
    try {
      await expect(flock.schedules.upsert(def, { ifVersion: '5' as unknown as number })).rejects.toThrow(/^upsert options\.ifVersion: must be a whole number from 0 to \d+ \(0: only if it does not exist; or 'exists': only if it exists, at any version\); got "5"$/);
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
      // a finite number past the latest time a Date holds is no time either (it was read as one)
      await expect(flock.schedules.runs('a1', { from: 1e20 })).rejects.toThrow(/^runs options\.from: must be a time in UTC ms from -8640000000000000 to 8640000000000000/);
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

describe('library arguments found by a user breaking it', () => {
  it('startReplica names the option of the wrong type (lockMs: "4s"), a handler that is not a function, and a schedulesDir that is not there', async () => {
    await expect(startReplica({ redis: pr.server.url, lockMs: '4s' as unknown as number })).rejects.toThrow(
      /^startReplica options\.lockMs: must be a number of ms, e\.g\. lockMs: 4000 \(durations are ms here, not strings such as "4s"\); got "4s"$/,
    );
    await expect(startReplica({ redis: pr.server.url, lockMs: '4s' as unknown as number })).rejects.toBeInstanceOf(LibraryArgumentError);
    await expect(startReplica({ redis: pr.server.url, jobs: { h1: 'notfn' as never } })).rejects.toThrow(/^startReplica options\.jobs\.h1: must be a function/);
    await expect(startReplica({ redis: pr.server.url, jobs: { h1: 'notfn' as never } })).rejects.toBeInstanceOf(LibraryArgumentError);
    const err = await startReplica({ redis: pr.server.url, schedulesDir: '/nonexistent/dir' }).then(
      async (r) => (await r.stop(0), undefined),
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(LibraryArgumentError);
    expect(err?.message).toMatch(/^startReplica options\.schedulesDir: "\/nonexistent\/dir" does not exist: pass a schedule file or a directory/);
  });

  it('startReplica takes admin as { host, port }, "host:port" or "off", and refuses anything else before starting (it listened on a random port of every interface)', async () => {
    await expect(startReplica({ redis: pr.server.url, admin: 9464 as never })).rejects.toThrow(/^startReplica options\.admin: must be \{ host, port \}, 'host:port' \(e\.g\. '127\.0\.0\.1:9464'\) or 'off'; got 9464$/);
    await expect(startReplica({ redis: pr.server.url, admin: 'localhost' })).rejects.toThrow(/^startReplica options\.admin: "localhost" must be host:port/);
    await expect(startReplica({ redis: pr.server.url, admin: { host: 'nonsense-host', port: -5 } })).rejects.toThrow(/^startReplica options\.admin\.port: must be a whole number from 0 to 65535/);
    await expect(startReplica({ redis: pr.server.url, admin: { host: '', port: 9464 } })).rejects.toThrow(/^startReplica options\.admin\.host: must be a host name or address/);
    await expect(startReplica({ redis: pr.server.url, admin: { host: '127.0.0.1', port: 1, extra: 1 } as never })).rejects.toThrow(LibraryArgumentError);
    // 'host:port' and 'off' as the command line takes them.
    const r = await startReplica({ redis: pr.server.url, namespace: 'admin-arg', admin: '127.0.0.1:0', logger: pino({ level: 'silent' }) });
    await r.stop(0);
    const off = await startReplica({ redis: pr.server.url, namespace: 'admin-arg', admin: 'off', logger: pino({ level: 'silent' }) });
    await off.stop(0);
  });

  it('the allowed options of startReplica name each option once', async () => {
    const err = await startReplica({ redis: pr.server.url, bogus: 1 } as never).then(() => undefined, (e: Error) => e);
    const allowed = /allowed: (.*)$/.exec(err!.message)![1]!.split(', ');
    expect(allowed.filter((a) => a === 'namespace')).toEqual(['namespace']);
    expect(new Set(allowed).size).toBe(allowed.length);
  });

  it('list refuses labels that are not an object and a cursor it did not hand out, naming the field and the shape; its own cursors page on', async () => {
    const flock = await connectFlock({ redis: pr.server.url, namespace: 'lib2' });
    try {
      for (const n of ['p1', 'p2', 'p3']) expect((await flock.schedules.upsert({ ...def, name: n, labels: { plan: 'gold' } })).ok).toBe(true);
      await expect(flock.schedules.list({ labels: 'plan=gold' as never })).rejects.toThrow(/^list options\.labels: must be an object of label → value, both strings, e\.g\. \{ plan: 'gold' \}; got "plan=gold"$/);
      await expect(flock.schedules.list({ labels: { plan: 1 } as never })).rejects.toThrow(/^list options\.labels\.plan: must be an object/);
      await expect(flock.schedules.list({ cursor: 'garbage' })).rejects.toThrow(/^list options\.cursor: must be the `cursor` of a page list\(\) gave back/);
      await expect(flock.schedules.list({ cursor: 'garbage' })).rejects.toBeInstanceOf(LibraryArgumentError);
      const p1 = await flock.schedules.list({ limit: 2, labels: { plan: 'gold' } });
      expect(p1.items.map((s) => s.name)).toEqual(['p1', 'p2']);
      const p2 = await flock.schedules.list({ limit: 2, labels: { plan: 'gold' }, cursor: p1.cursor! });
      expect(p2.items.map((s) => s.name)).toEqual(['p3']);
      expect(p2.cursor).toBeUndefined();
    } finally {
      await flock.close();
    }
  });

  it('says the flock is closed for any call after close() (not the client\'s "Stream isn\'t writeable")', async () => {
    const flock = await connectFlock({ redis: pr.server.url, namespace: 'lib3' });
    await flock.close();
    await expect(flock.schedules.get('a1')).rejects.toThrow(/^schedules\.get: this flock is closed \(flock\.close\(\) was called\); connect again with connectFlock/);
    await expect(flock.schedules.upsert(def)).rejects.toBeInstanceOf(FlockClosedError);
    await expect(flock.schedules.list()).rejects.toBeInstanceOf(FlockClosedError);
    await expect(flock.tenants.list()).rejects.toThrow(/^tenants\.list: this flock is closed/);
    await expect(flock.tenants.setLimit('acme', 1)).rejects.toBeInstanceOf(FlockClosedError);
    await flock.close(); // twice: nothing
  });

  it("connectFlock fails at once on a refused connection, naming the library's option, not the CLI's flags", async () => {
    const free: Server = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as { port: number }).port;
    await new Promise<void>((r) => free.close(() => r())); // nothing listens there now
    const t0 = performance.now();
    const err = await connectFlock({ redis: `redis://127.0.0.1:${port}`, redisTimeoutMs: 20_000 }).then(() => undefined, (e: Error) => e);
    expect(performance.now() - t0).toBeLessThan(5_000); // not the 20 s timeout
    expect(err?.message).toMatch(new RegExp(`^cannot reach the flock's Redis at redis://127\\.0\\.0\\.1:${port}: nothing accepts connections there \\(connection refused\\)`));
    expect(err?.message).toContain('the redis option');
    expect(err?.message).not.toMatch(/--redis|REDIS_URL/);
  });

  it('connectFlock names redisTimeoutMs, not --redis-timeout, when Redis does not answer', async () => {
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    try {
      const err = await connectFlock({ redis: `redis://127.0.0.1:${port}`, redisTimeoutMs: 500 }).then(() => undefined, (e: Error) => e);
      expect(err?.message).toContain('raise the redisTimeoutMs option');
      expect(err?.message).not.toMatch(/--redis-timeout|CRONFLOCK_REDIS_TIMEOUT/);
    } finally {
      silent.close();
    }
  });
});
