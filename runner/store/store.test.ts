/**
 * The schedule store (runner/store/store.ts) on a real redis-server: compare-and-set, versions that only grow,
 * validation by the schedule files' own code (refused whole, naming the fields), remove and re-create, listing,
 * the change stream and its trim detection, and the name owned by another source.
 */
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from '../redis/keys.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { parseScheduleText } from '../config/load.js';
import { MAX_DEFINITION_BYTES, ScheduleDefinitionError } from './definition.js';
import { readAudit } from '../history/audit.js';
import { IF_EXISTS, MAX_TENANT_LIMIT, NameOwnedError, ScheduleStore, TenantLimitArgumentError, TenantLimitError, VersionConflictError } from './store.js';

const pr = usePrivateRedis(); // the shared set-up (test/support): flushed before each test
let redis: Redis;
const keys = new Keyspace('st');
let store: ScheduleStore;

beforeAll(() => {
  redis = pr.redis;
  store = new ScheduleStore(redis, keys);
});

const def = (name: string, cron = '*/5 * * * *', extra: Record<string, unknown> = {}) => ({
  name,
  cron,
  job: { kind: 'http' as const, url: 'http://127.0.0.1:1/x' },
  ...extra,
});

describe('ScheduleStore', () => {
  it('upserts with versions from one flock counter, and a compare-and-set on them', async () => {
    const a = await store.upsert(def('a'));
    expect(a).toMatchObject({ ok: true, version: 1, changed: true });
    const b = await store.upsert(def('b'), { ifVersion: 0 });
    expect(b).toMatchObject({ ok: true, version: 2 });
    // ifVersion 0: only if it does not exist.
    const again = await store.upsert(def('a', '*/7 * * * *'), { ifVersion: 0 });
    expect(again.ok).toBe(false);
    expect(!again.ok && again.error).toBeInstanceOf(VersionConflictError);
    expect(!again.ok && (again.error as VersionConflictError).actual).toBe(1);
    // a stale version loses; the current one wins
    expect((await store.upsert(def('a', '*/7 * * * *'), { ifVersion: 3 })).ok).toBe(false);
    expect(await store.upsert(def('a', '*/7 * * * *'), { ifVersion: 1 })).toMatchObject({ ok: true, version: 3 });
    expect((await store.get('a'))?.definition).toMatchObject({ cron: '*/7 * * * *' });
    expect((await store.get('a'))?.version).toBe(3);
    // The same definition again writes nothing and keeps the version.
    expect(await store.upsert(def('a', '*/7 * * * *'))).toMatchObject({ ok: true, version: 3, changed: false });
  });

  it('resolves concurrent upserts of one name by version: exactly one of those that read the same version wins', async () => {
    await store.upsert(def('c'));
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => store.upsert(def('c', `${i} * * * *`), { ifVersion: 1 })));
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok).every((r) => !r.ok && r.error instanceof VersionConflictError)).toBe(true);
  });

  it('refuses a bad definition whole, with the schedule files\' codes and the fields named, and writes nothing', async () => {
    const r = await store.upsert({ name: 'bad', cron: '61 * * * *', jitter: 'soon', job: { kind: 'http', url: 'ftp://x' } } as never);
    expect(r.ok).toBe(false);
    const e = !r.ok ? (r.error as ScheduleDefinitionError) : undefined;
    expect(e).toBeInstanceOf(ScheduleDefinitionError);
    const fields = e!.problems.map((p) => p.field).sort();
    expect(fields).toEqual(expect.arrayContaining(['cron', 'jitter', 'job.url']));
    // the same reasons as the same entry in a file
    const file = await parseScheduleText(JSON.stringify({ schedules: [{ name: 'bad', cron: '61 * * * *', jitter: 'soon', job: { kind: 'http', url: 'ftp://x' } }] }), 'f.yaml');
    expect(e!.problems.map((p) => p.reason).sort()).toEqual(file.errors.map((x) => x.reason).sort());
    expect(await redis.keys('*')).toEqual([]);
    // unknown keys are refused as in a file
    const u = await store.upsert({ ...def('u'), cronn: 'x' } as never);
    expect(!u.ok && (u.error as ScheduleDefinitionError).problems[0]?.field).toBe('cronn');
    expect(await store.get('u')).toBeUndefined();
    // group: and calendar: belong to schedule files: said so, not the file's "define it in this file" (there is none)
    const g = await store.upsert({ ...def('g'), group: 'g1' } as never);
    expect(!g.ok && (g.error as ScheduleDefinitionError).problems).toEqual([
      expect.objectContaining({ code: 'GROUP_UNKNOWN', field: 'group', reason: expect.stringMatching(/^a stored schedule cannot use group:/), hint: expect.stringMatching(/^remove group:, or keep this schedule in the schedule file/) }),
    ]);
    // a very long name is not repeated whole in the message
    const long = await store.upsert(def('x'.repeat(5000)));
    expect(!long.ok && long.error.message.length).toBeLessThan(400);
  });

  it('removes (with an optional compare-and-set) and re-creates with a greater version', async () => {
    await store.upsert(def('r'));
    expect((await store.remove('r', { ifVersion: 7 })).ok).toBe(false);
    const rm = await store.remove('r');
    expect(rm).toMatchObject({ ok: true, version: 2 });
    expect(await store.get('r')).toBeUndefined();
    expect(await store.remove('r')).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } });
    expect(await store.upsert(def('r'), { ifVersion: 0 })).toMatchObject({ ok: true, version: 3 });
    const changes = await store.changesAfter('0-0', { blockMs: 0, count: 10 });
    expect(changes.changes.map((c) => [c.name, c.version, c.op])).toEqual([
      ['r', 1, 'upsert'],
      ['r', 2, 'remove'],
      ['r', 3, 'upsert'],
    ]);
    expect(changes.trimmed).toBe(false);
  });

  it('lists by prefix with a cursor, in name order', async () => {
    for (const n of ['cust-1-a', 'cust-1-b', 'cust-2-a', 'cust-1-c', 'other']) await store.upsert(def(n));
    const p1 = await store.list({ prefix: 'cust-1-', limit: 2 });
    expect(p1.items.map((s) => s.name)).toEqual(['cust-1-a', 'cust-1-b']);
    const p2 = await store.list({ prefix: 'cust-1-', limit: 2, cursor: p1.cursor! });
    expect(p2.items.map((s) => s.name)).toEqual(['cust-1-c']);
    expect(p2.cursor).toBeUndefined();
    expect((await store.all()).map((s) => s.name)).toEqual(['cust-1-a', 'cust-1-b', 'cust-1-c', 'cust-2-a', 'other']);
  });

  it('says when the change stream was trimmed past a reader', async () => {
    const small = new ScheduleStore(redis, keys, { maxLen: 1 });
    await small.upsert(def('t0'));
    const first = (await small.changesAfter('0-0', { blockMs: 0, count: 1 })).changes[0]!;
    for (let i = 1; i < 300; i++) await small.upsert(def(`t${i}`));
    expect(await small.trimmedAfter(first.id)).toBe(true);
    expect((await small.changesAfter(first.id, { blockMs: 0, count: 10 })).trimmed).toBe(true);
    expect((await small.changesAfter(await small.lastChangeId(), { blockMs: 0, count: 10 })).trimmed).toBe(false);
  });

  it('refuses a name a live replica runs from a schedule file, naming that file; a departed replica\'s does not count', async () => {
    const [s] = await redis.time();
    await redis.hset(keys.definitions, 'owned', JSON.stringify({ definitionHash: 'h', replica: 'r1', source: 'schedules/a.yaml:3' }));
    await redis.zadd(keys.replicas, Number(s) * 1000 + 60_000, 'r1');
    const r = await store.upsert(def('owned'));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toBeInstanceOf(NameOwnedError);
    expect(!r.ok && r.error.message).toContain('schedules/a.yaml:3');
    expect(await store.get('owned')).toBeUndefined();
    await redis.zadd(keys.replicas, Number(s) * 1000 - 1, 'r1');
    expect((await store.upsert(def('owned'))).ok).toBe(true);
  });

  it('records every change in the audit log, in the same script: who, via, the version; an unchanged upsert records nothing', async () => {
    const a = await store.upsert(def('aud'), { by: 'alice', via: 'api', reason: 'new customer' });
    await store.upsert(def('aud'), { by: 'alice', via: 'api' });
    const b = await store.upsert(def('aud', '*/7 * * * *'), { by: 'bob@host', via: 'cli' });
    const rm = await store.remove('aud', { by: 'carol', via: 'library' });
    const page = await readAudit(redis, keys, { limit: 10 });
    expect(page.items.map((e) => [e.action, e.via, e.who, e.version, e.schedule])).toEqual([
      ['delete', 'library', 'carol', rm.ok && rm.version, 'aud'],
      ['upsert', 'cli', 'bob@host', b.ok && b.version, 'aud'],
      ['upsert', 'api', 'alice', a.ok && a.version, 'aud'],
    ]);
    expect(page.items[2]!.reason).toBe('new customer');
    expect(page.items[2]!.outcome).toContain('created stored schedule aud');
    expect(a.ok && a.auditId).toBe(page.items[2]!.id);
  });

  it('keeps a count per tenant, lists by tenant and labels, and moves a schedule between tenants', async () => {
    await store.upsert(def('a1', undefined, { tenant: 'acme', labels: { plan: 'gold', region: 'eu' } }));
    await store.upsert(def('a2', undefined, { tenant: 'acme', labels: { plan: 'free' } }));
    await store.upsert(def('a3', undefined, { tenant: 'acme', labels: { plan: 'gold' } }));
    await store.upsert(def('b1', undefined, { tenant: 'bolt', labels: { plan: 'gold' } }));
    await store.upsert(def('n1'));
    expect((await store.list({ tenant: 'acme' })).items.map((s) => s.name)).toEqual(['a1', 'a2', 'a3']);
    expect((await store.list({ tenant: 'acme', labels: { plan: 'gold' } })).items.map((s) => s.name)).toEqual(['a1', 'a3']);
    expect((await store.list({ labels: { plan: 'gold' } })).items.map((s) => s.name)).toEqual(['a1', 'a3', 'b1']);
    expect((await store.list({ tenant: 'acme', prefix: 'a2' })).items.map((s) => s.name)).toEqual(['a2']);
    const p1 = await store.list({ tenant: 'acme', limit: 2 });
    expect(p1.items.map((s) => s.name)).toEqual(['a1', 'a2']);
    expect((await store.list({ tenant: 'acme', limit: 2, cursor: p1.cursor! })).items.map((s) => s.name)).toEqual(['a3']);
    expect((await store.get('a1'))?.tenant).toBe('acme');
    await store.upsert(def('a2', undefined, { tenant: 'bolt' }));
    await store.remove('a3');
    const t = await store.tenants();
    expect(t.tenants.map((x) => [x.tenant, x.count])).toEqual([
      ['acme', 1],
      ['bolt', 2],
    ]);
    expect((await store.list({ tenant: 'bolt' })).items.map((s) => s.name)).toEqual(['a2', 'b1']);
  });

  it('refuses a tenant past its limit with its limit, count and how to raise it; the default "*" applies to tenants without their own', async () => {
    await store.setTenantLimit('acme', 2);
    await store.setTenantLimit('*', 1);
    expect((await store.upsert(def('x1', undefined, { tenant: 'acme' }))).ok).toBe(true);
    expect((await store.upsert(def('x2', undefined, { tenant: 'acme' }))).ok).toBe(true);
    // a change of a schedule already counted is not a new one
    expect((await store.upsert(def('x2', '*/9 * * * *', { tenant: 'acme' }))).ok).toBe(true);
    const r = await store.upsert(def('x3', undefined, { tenant: 'acme' }));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toBeInstanceOf(TenantLimitError);
    expect(!r.ok && r.error).toMatchObject({ tenant: 'acme', limit: 2, count: 2 });
    expect(!r.ok && r.error.message).toContain('cronflock tenants set-limit acme');
    expect(await store.get('x3')).toBeUndefined();
    expect((await store.upsert(def('y1', undefined, { tenant: 'other' }))).ok).toBe(true);
    expect(await store.upsert(def('y2', undefined, { tenant: 'other' }))).toMatchObject({ ok: false, error: { limit: 1, count: 1 } });
    expect((await store.upsert(def('z1'))).ok).toBe(true); // no tenant: no limit
    await store.setTenantLimit('acme', 'default'); // acme falls to the default (1): still over it
    expect((await store.upsert(def('x3', undefined, { tenant: 'acme' }))).ok).toBe(false);
    await store.setTenantLimit('other', null); // its own "no limit" overrides the default
    expect((await store.upsert(def('y2', undefined, { tenant: 'other' }))).ok).toBe(true);
    await store.setTenantLimit('*', null);
    expect((await store.upsert(def('x3', undefined, { tenant: 'acme' }))).ok).toBe(true);
    expect((await store.tenants()).defaultLimit).toBeNull();
  });

  it('holds a tenant limit atomically: 20 upserts at once from 20 connections against a limit of 10 store exactly 10', async () => {
    await store.setTenantLimit('race', 10);
    const clients = Array.from({ length: 20 }, () => new Redis(pr.server.url));
    try {
      const results = await Promise.all(clients.map((c, i) => new ScheduleStore(c, keys).upsert(def(`race-${i}`, undefined, { tenant: 'race' }))));
      expect(results.filter((r) => r.ok)).toHaveLength(10);
      expect(results.filter((r) => !r.ok && r.error instanceof TenantLimitError)).toHaveLength(10);
      expect((await store.list({ tenant: 'race' })).items).toHaveLength(10);
      expect(await redis.zcard(keys.storeIndex)).toBe(10);
      expect((await store.tenants()).tenants).toEqual([{ tenant: 'race', count: 10, limit: 10, defaultLimit: false }]);
    } finally {
      for (const c of clients) c.disconnect();
    }
  });

  it('refuses a definition larger than 64 KiB as JSON, naming the limit, before any write; one just under it is stored', async () => {
    const big = def('big', '*/5 * * * *', { job: { kind: 'handler', handler: 'h', params: { blob: 'x'.repeat(MAX_DEFINITION_BYTES) } } });
    const r = await store.upsert(big as never);
    expect(r.ok).toBe(false);
    const e = !r.ok ? (r.error as ScheduleDefinitionError) : undefined;
    expect(e).toBeInstanceOf(ScheduleDefinitionError);
    expect(e!.problems).toEqual([expect.objectContaining({ code: 'TOO_LARGE', reason: expect.stringContaining('65,536 bytes (64 KiB)'), hint: expect.stringContaining('job.params') })]);
    expect(await redis.keys('*')).toEqual([]);
    // write() (what cronflock apply calls after checking) holds the same limit
    const w = await store.write('big', JSON.stringify(big), '');
    expect(!w.ok && (w.error as ScheduleDefinitionError).problems[0]?.code).toBe('TOO_LARGE');
    expect(await redis.keys('*')).toEqual([]);
    const fits = def('fits', '*/5 * * * *', { job: { kind: 'handler', handler: 'h', params: { blob: 'x'.repeat(MAX_DEFINITION_BYTES - 200) } } });
    expect((await store.upsert(fits as never)).ok).toBe(true);
  });

  it('refuses params JSON cannot carry (function, undefined, symbol, BigInt, NaN, Date, Map, class, cycle), naming each path and the fix; writes nothing', async () => {
    class Money {
      cents = 5;
    }
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const params = {
      customer: { when: () => 'now', id: undefined, tag: Symbol('t'), big: 12n, ratio: Number.NaN, since: new Date('2026-01-02T03:04:05Z'), seen: new Map(), price: new Money() },
      list: [1, undefined],
      cyclic,
    };
    const r = await store.upsert(def('nj', '*/5 * * * *', { job: { kind: 'handler', handler: 'h', params } }) as never);
    expect(r.ok).toBe(false);
    const e = !r.ok ? (r.error as ScheduleDefinitionError) : undefined;
    expect(e!.problems.map((p) => [p.code, p.field])).toEqual([
      ['NOT_JSON', 'job.params.customer.when'],
      ['NOT_JSON', 'job.params.customer.id'],
      ['NOT_JSON', 'job.params.customer.tag'],
      ['NOT_JSON', 'job.params.customer.big'],
      ['NOT_JSON', 'job.params.customer.ratio'],
      ['NOT_JSON', 'job.params.customer.since'],
      ['NOT_JSON', 'job.params.customer.seen'],
      ['NOT_JSON', 'job.params.customer.price'],
      ['NOT_JSON', 'job.params.list[1]'],
      ['NOT_JSON', 'job.params.cyclic.self'],
    ]);
    expect(e!.message).toContain('job.params.customer.when: is a function, which JSON cannot store');
    expect(e!.problems[3]).toMatchObject({ reason: 'is a BigInt (12n), which JSON cannot store', hint: expect.stringContaining('as a string ("12")') });
    expect(e!.problems[5]!.hint).toContain('"2026-01-02T03:04:05.000Z"');
    expect(await redis.keys('*')).toEqual([]);
    // outside params, a key whose value is undefined is absent (TypeScript's optional fields)
    expect((await store.upsert({ ...def('opt'), timeZone: undefined } as never)).ok).toBe(true);
  });

  it('checks a tenant limit in the store (the one check the library and the CLI use): bad tenant or limit refused, nothing written', async () => {
    for (const [tenant, limit, argument] of [
      ['Bad Tenant', 3, 'tenant'],
      ['', 3, 'tenant'],
      ['acme', -1, 'limit'],
      ['acme', 1.5, 'limit'],
      ['acme', Number.NaN, 'limit'],
      ['acme', 'lots', 'limit'],
      ['acme', MAX_TENANT_LIMIT + 1, 'limit'],
      ['acme', undefined, 'limit'],
    ] as const) {
      const err = await store.setTenantLimit(tenant, limit as never).then(() => null, (x: unknown) => x);
      expect(err, `${tenant} ${String(limit)}`).toBeInstanceOf(TenantLimitArgumentError);
      expect((err as TenantLimitArgumentError).argument).toBe(argument);
    }
    expect(await redis.keys('*')).toEqual([]);
    await store.setTenantLimit('acme', 0);
    await store.setTenantLimit('*', MAX_TENANT_LIMIT);
    expect((await store.tenants()).defaultLimit).toBe(MAX_TENANT_LIMIT);
  });

  it('a remove of a name a schedule file or Schedule resource owns names that source and how to remove it there', async () => {
    await redis.hset(keys.definitions, 'from-file', JSON.stringify({ definitionHash: 'h', replica: 'r1', source: 'schedules/a.yaml:3' }));
    await redis.hset(keys.definitions, 'from-k8s', JSON.stringify({ definitionHash: 'h', replica: 'r1', source: 'Schedule prod/nightly' }));
    const f = await store.remove('from-file');
    expect(!f.ok && f.error).toMatchObject({ code: 'NOT_FOUND', source: 'schedules/a.yaml:3' });
    expect(!f.ok && f.error.message).toBe('schedule "from-file" is not stored: it is defined by schedules/a.yaml:3, which owns the name; remove it from schedules/a.yaml (line 3); the replicas reload the file');
    const k = await store.remove('from-k8s');
    expect(!k.ok && k.error.message).toContain('kubectl delete schedules.cronflock.io nightly -n prod');
    const n = await store.remove('nowhere');
    expect(!n.ok && n.error).toEqual({ code: 'NOT_FOUND', message: 'schedule "nowhere" is not stored' });
  });

  it('ifVersion IF_EXISTS (If-Match: *) changes only a schedule that exists, whatever its version', async () => {
    const absent = await store.upsert(def('ie'), { ifVersion: IF_EXISTS });
    expect(!absent.ok && absent.error).toBeInstanceOf(VersionConflictError);
    expect(!absent.ok && absent.error.message).toContain('does not exist');
    expect(await store.get('ie')).toBeUndefined();
    await store.upsert(def('ie'));
    expect(await store.upsert(def('ie', '*/9 * * * *'), { ifVersion: IF_EXISTS })).toMatchObject({ ok: true, changed: true });
    expect((await store.remove('ie', { ifVersion: IF_EXISTS })).ok).toBe(true);
  });
});
