/**
 * The published definitions as a replica reads them (definitions.ts), on a real redis-server: read in HSCAN pages,
 * so the view must hold every schedule of a flock larger than one page, with the rule's answers for each.
 */
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';
import { Keyspace } from '../redis/keys.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { Definitions } from './definitions.js';
import { STORE_SOURCE_FILE } from '../store/definition.js';

// One server for the file, not flushed between tests (each test uses its own names); shared set-up: test/support.
const pr = usePrivateRedis({ flushBetweenTests: false });
let redis: Redis;
const keys = new Keyspace();

beforeAll(() => {
  redis = pr.redis;
});

const file = (n: number, minute: number): string =>
  `schedules:\n${Array.from({ length: n }, (_, i) => `  - {name: s-${i}, cron: "${minute} * * * *", job: {kind: http, url: "http://127.0.0.1:1/"}}\n`).join('')}`;

describe('published definitions read in pages', () => {
  it('knows every one of 2,500 schedules (three pages): which are current, since when, who publishes', async () => {
    const live = new Set(['r1', 'r2']);
    const mine = (await parseScheduleText(file(2_500, 5), 'a.yaml')).schedules;
    const newer = (await parseScheduleText(file(2_500, 7), 'a.yaml')).schedules;
    const r1 = new Definitions(redis, keys, 'r1', live);
    const r2 = new Definitions(redis, keys, 'r2', live);
    await r1.publish(mine);
    expect(mine.every((s) => r1.isCurrent(s) && r1.has(s.name) && r1.loadedAtMs(s.name) !== undefined)).toBe(true);
    // r2 publishes a newer definition of the last 1,200 only: r1 sees them once it refreshes, the rest stay its own.
    await r2.publish(newer.slice(1_300));
    await r1.refresh();
    const current = mine.filter((s) => r1.isCurrent(s)).map((s) => s.name);
    expect(current).toEqual(mine.slice(0, 1_300).map((s) => s.name));
    expect(newer.slice(1_300).every((s) => r1.isCurrent(s))).toBe(true);
    // r2 goes away: r1's definitions are current again and re-published (the view is read again).
    live.delete('r2');
    expect(await r1.refresh()).toBe(true);
    expect(mine.every((s) => r1.isCurrent(s))).toBe(true);
  });
});

/**
 * The re-publication storm (100k stored schedules, 3 replicas): every replica that started with the definitions
 * the flock already ran renamed itself the publisher of each (100,000 writes, version bumps and change-log entries,
 * which made every replica read every definition again), and a replica whose busy event loop missed its membership
 * TTL for a moment made the others re-publish everything it had published.
 */
describe('publications that do not re-send what the flock runs', () => {
  /** Makes `replica` a live member in Redis for a minute (the heartbeat script's ZSET). */
  const member = async (replica: string): Promise<void> => {
    const [s] = await redis.time();
    await redis.zadd(keys.replicas, Number(s) * 1000 + 60_000, replica);
  };
  const version = async (): Promise<number> => Number((await redis.get(keys.definitionsVersion)) ?? 0);
  const evalCalls = async (): Promise<number> => Number(/cmdstat_evalsha:calls=(\d+)/.exec(String(await redis.info('commandstats')))?.[1] ?? 0);

  it('writes nothing when a replica publishes the definitions a live member published (no script call per schedule)', async () => {
    const defs = (await parseScheduleText(file(2_500, 9).replaceAll('s-', 'same-'), 'a.yaml')).schedules;
    await member('p1');
    await member('p2');
    const live = { has: () => true };
    const p1 = new Definitions(redis, keys, 'p1', live);
    await p1.publish(defs);
    const v = await version();
    const calls = await evalCalls();
    const p2 = new Definitions(redis, keys, 'p2', live);
    await p2.publish(defs);
    expect(await version()).toBe(v);
    expect(defs.every((s) => p2.isCurrent(s) && p2.has(s.name))).toBe(true);
    expect(JSON.parse((await redis.hget(keys.definitions, 'same-7'))!).replica).toBe('p1');
    // One liveness look per publisher, not a publish call per 1,000 schedules.
    expect((await evalCalls()) - calls).toBeLessThanOrEqual(1);
  });

  it('the publish script keeps a live publisher of the same definition, and replaces a gone one', async () => {
    const defs = (await parseScheduleText(file(3, 11).replaceAll('s-', 'script-'), 'a.yaml')).schedules;
    await member('q1');
    const q1 = new Definitions(redis, keys, 'q1', { has: () => true });
    await q1.publish(defs);
    const v = await version();
    // Sent to the script (a view that believes q1 gone): q1 is a live member in Redis, so nothing changes.
    const q2 = new Definitions(redis, keys, 'q2', { has: (r) => r !== 'q1' }, undefined, 0);
    await q2.publishChanges(defs, []);
    expect(await version()).toBe(v);
    expect(JSON.parse((await redis.hget(keys.definitions, 'script-0'))!).replica).toBe('q1');
    // q1 gone from the membership: the same publication names q2.
    await redis.zrem(keys.replicas, 'q1');
    await q2.publishChanges(defs, []);
    expect(await version()).toBe(v + 3);
    expect(JSON.parse((await redis.hget(keys.definitions, 'script-0'))!).replica).toBe('q2');
  });

  it('does not re-publish a same definition whose publisher missed the membership for less than the grace', async () => {
    const defs = (await parseScheduleText(file(50, 13).replaceAll('s-', 'grace-'), 'a.yaml')).schedules;
    await member('g1');
    const alive = new Set(['g1', 'g2', 'g3']);
    const live = { has: (r: string) => alive.has(r) };
    await new Definitions(redis, keys, 'g1', live).publish(defs);
    const g2 = new Definitions(redis, keys, 'g2', live, undefined, 60_000);
    await g2.publish(defs);
    const v = await version();
    // g1's event loop is busy loading: its membership lapses for a moment.
    alive.delete('g1');
    await redis.zrem(keys.replicas, 'g1');
    await g2.refresh();
    await g2.refresh();
    expect(await version()).toBe(v);
    expect(defs.every((s) => g2.isCurrent(s))).toBe(true);
    // Gone past the grace (0 here): re-published under the name of a live replica.
    const g3 = new Definitions(redis, keys, 'g3', live, undefined, 0);
    await g3.publish(defs);
    await g3.refresh();
    expect(await version()).toBe(v + 50);
    expect(JSON.parse((await redis.hget(keys.definitions, 'grace-1'))!).replica).toBe('g3');
  });
});

/**
 * The 1M change-apply fault (3 replicas, 1M stored schedules): a CPU-starved replica lapsed, the others renamed
 * themselves the publishers of its million definitions at once (a change-log entry each), every reader fell past
 * the change log into a full read of 1M, starved, and lapsed in turn; and a stored change waited behind a read of
 * the view. Now same-definition orphans are renamed a bounded number per refresh, and a stored change's
 * publication does not read the view.
 */
describe('re-publications and stored changes that cost a bounded amount', () => {
  const member = async (replica: string, inMs = 60_000): Promise<void> => {
    const [s] = await redis.time();
    await redis.zadd(keys.replicas, Number(s) * 1000 + inMs, replica);
  };
  const version = async (): Promise<number> => Number((await redis.get(keys.definitionsVersion)) ?? 0);
  const publisher = async (name: string): Promise<string> => JSON.parse((await redis.hget(keys.definitions, name))!).replica as string;

  it("renames a gone publisher's same definitions a bounded number per refresh, current all along", async () => {
    const defs = (await parseScheduleText(file(45, 17).replaceAll('s-', 'bound-'), 'a.yaml')).schedules;
    await member('b1');
    await member('b2');
    const alive = new Set(['b1', 'b2']);
    const live = { has: (r: string) => alive.has(r) };
    await new Definitions(redis, keys, 'b1', live).publish(defs);
    const b2 = new Definitions(redis, keys, 'b2', live, undefined, 0, 20);
    await b2.publish(defs);
    const v = await version();
    alive.delete('b1');
    await member('b1', -1_000);
    for (const [after, renamed] of [
      [20, 20],
      [40, 40],
      [45, 45],
    ] as const) {
      expect(await b2.refresh()).toBe(true);
      expect(await version()).toBe(v + after);
      const names = await Promise.all(defs.map((s) => publisher(s.name)));
      expect(names.filter((r) => r === 'b2').length).toBe(renamed);
      expect(defs.every((s) => b2.isCurrent(s))).toBe(true);
    }
    await b2.refresh();
    expect(await version()).toBe(v + 45);
    expect(defs.every((s) => b2.publisherOf(s.name) === 'b2')).toBe(true);
  });

  it("leaves a stored schedule's lapsed publisher for the stored grace (nothing waits on it), renames a file's at once", async () => {
    const stored = (await parseScheduleText(file(30, 18).replaceAll('s-', 'lapse-st-'), STORE_SOURCE_FILE)).schedules;
    const filed = (await parseScheduleText(file(20, 18).replaceAll('s-', 'lapse-fl-'), 'a.yaml')).schedules;
    expect(stored.every((s) => s.source.file === STORE_SOURCE_FILE)).toBe(true);
    await member('l1');
    await member('l2');
    const alive = new Set(['l1', 'l2']);
    const live = { has: (r: string) => alive.has(r) };
    await new Definitions(redis, keys, 'l1', live).publish([...stored, ...filed]);
    const l2 = new Definitions(redis, keys, 'l2', live, undefined, 0, undefined, 1_000);
    await l2.publish([...stored, ...filed]);
    const v = await version();
    // l1's membership lapses (its event loop busy): the file's names are renamed at once, the store's are not.
    alive.delete('l1');
    await member('l1', -1_000);
    await l2.refresh();
    await l2.refresh();
    expect(await version()).toBe(v + 20);
    expect((await Promise.all(filed.map((s) => publisher(s.name)))).every((r) => r === 'l2')).toBe(true);
    expect((await Promise.all(stored.map((s) => publisher(s.name)))).every((r) => r === 'l1')).toBe(true);
    expect([...stored, ...filed].every((s) => l2.isCurrent(s))).toBe(true);
    // Still gone after the grace: renamed as before.
    await new Promise((r) => setTimeout(r, 1_100));
    await l2.refresh();
    expect(await version()).toBe(v + 50);
    expect((await Promise.all(stored.map((s) => publisher(s.name)))).every((r) => r === 'l2')).toBe(true);
  });

  it("a stored change's publication does not read the view: current at once, read back and its load time noted by the next refresh", async () => {
    const old = (await parseScheduleText(file(5, 21).replaceAll('s-', 'chg-'), 'a.yaml')).schedules;
    const changed = (await parseScheduleText(file(5, 22).replaceAll('s-', 'chg-'), 'a.yaml')).schedules;
    await member('c1');
    await member('c2');
    const live = { has: () => true };
    const c1 = new Definitions(redis, keys, 'c1', live);
    await c1.publish(old);
    const reads = { ...c1.reads };
    // Another replica's publication since: the view is behind, yet the change does not read it.
    await new Definitions(redis, keys, 'c2', live).publishChanges([changed[4]!], []);
    await c1.publishChanges(changed.slice(0, 2), ['chg-3']);
    expect(c1.reads).toEqual(reads);
    expect(changed.slice(0, 2).every((s) => c1.isCurrent(s) && c1.isPublishedAs(s) && c1.publisherOf(s.name) === 'c1')).toBe(true);
    expect(c1.has('chg-3')).toBe(false);
    expect(await publisher('chg-0')).toBe('c1');
    expect(await redis.hexists(keys.definitions, 'chg-3')).toBe(0);
    expect(await c1.refresh()).toBe(true);
    expect(c1.reads.changes).toBe(reads.changes + 1);
    const published = JSON.parse((await redis.hget(keys.definitions, 'chg-0'))!).loadedAtMs as number;
    expect(c1.loadedAtMs('chg-0')).toBe(published);
    expect(c1.isCurrent(changed[4]!)).toBe(true);
    expect(c1.isCurrent(old[4]!)).toBe(false);
  });
});

/**
 * The rule is the load time: a definition re-published after Redis lost the published set, or after its rival's
 * publisher lapsed for a moment, must not beat a newer one (found by a user: after Redis restarted empty the flock
 * ran the old and the new definition of a schedule side by side for good, nothing re-published; after a canary's
 * SIGSTOP longer than the membership, the rollout stayed rolled back when the canary came back).
 */
describe('the definition loaded last wins again after Redis lost the set, or its publisher lapsed', () => {
  const ks = new Keyspace('loss');
  const members = new Set<string>();
  const live = { has: (r: string) => members.has(r) };
  const join = async (r: string): Promise<void> => {
    members.add(r);
    const [s] = await redis.time();
    await redis.zadd(ks.replicas, Number(s) * 1000 + 60_000, r);
  };
  const leave = async (r: string): Promise<void> => {
    members.delete(r);
    await redis.zrem(ks.replicas, r);
  };
  const winner = async (name: string): Promise<{ replica: string; definitionHash: string; loadedAtMs: number }> => JSON.parse((await redis.hget(ks.definitions, name))!);
  const setUp = async (prefix: string) => {
    const older = (await parseScheduleText(file(20, 21).replaceAll('s-', prefix), 'old.yaml')).schedules;
    const newer = (await parseScheduleText(file(20, 23).replaceAll('s-', prefix), 'new.yaml')).schedules;
    await join('old');
    await join('new');
    const oldR = new Definitions(redis, ks, 'old', live);
    const newR = new Definitions(redis, ks, 'new', live);
    await oldR.publish(older);
    await new Promise((r) => setTimeout(r, 5));
    await newR.publish(newer);
    await oldR.refresh();
    expect(older.some((s) => oldR.isCurrent(s))).toBe(false);
    return { older, newer, oldR, newR, newAt: (await winner(`${prefix}0`)).loadedAtMs };
  };
  const lose = (): Promise<number> => redis.del(ks.definitions, ks.definitionsVersion, ks.definitionsChanges, ks.definitionsLog);

  it.each([['the older replica first'], ['the newer replica first']])('Redis lost the set: each replica re-publishes, the newer definition wins whoever comes first (%s)', async (order) => {
    const prefix = order.includes('older') ? 'loss-a-' : 'loss-b-';
    const { older, newer, oldR, newR, newAt } = await setUp(prefix);
    expect(older).toHaveLength(20);
    await lose();
    const [first, second] = order.includes('older') ? [oldR, newR] : [newR, oldR];
    expect(await first.refresh()).toBe(true); // it sees the loss and re-publishes
    expect(await second.refresh()).toBe(true);
    await first.refresh();
    for (const s of newer) expect(await winner(s.name)).toMatchObject({ replica: 'new', definitionHash: s.definitionHash, loadedAtMs: newAt });
    expect(older.some((s) => oldR.isCurrent(s))).toBe(false);
    expect(newer.every((s) => newR.isCurrent(s) && oldR.has(s.name))).toBe(true);
  });

  it('a rival re-published while the newer publisher lapsed: the newer wins again when it is back', async () => {
    const { older, newer, oldR, newR, newAt } = await setUp('lapse-');
    await leave('new');
    expect(await oldR.refresh()).toBe(true); // the orphan rule: its own definition runs again
    expect(older.every((s) => oldR.isCurrent(s))).toBe(true);
    expect((await winner('lapse-0')).replica).toBe('old');
    expect((await winner('lapse-0')).loadedAtMs).toBeLessThan(newAt); // its load time, not the re-publication's
    await join('new');
    expect(await newR.refresh()).toBe(true);
    for (const s of newer) expect(await winner(s.name)).toMatchObject({ replica: 'new', loadedAtMs: newAt });
    await oldR.refresh();
    expect(older.some((s) => oldR.isCurrent(s))).toBe(false);
    // Stable: neither publishes again.
    const v = await redis.get(ks.definitionsVersion);
    expect(await oldR.refresh()).toBe(false);
    expect(await newR.refresh()).toBe(false);
    expect(await redis.get(ks.definitionsVersion)).toBe(v);
  });
});

describe('the names published with suspend: true ({ns}:defs:suspended, counted by cronflock status)', () => {
  it('follow each publication and withdrawal, and a start fills in what was published before the set was kept', async () => {
    const [sec] = await redis.time();
    await redis.zadd(keys.replicas, Number(sec) * 1000 + 60_000, 'sp1');
    const yaml = (held: boolean): string =>
      `schedules:\n  - {name: sp-a, cron: "0 3 * * *", ${held ? 'suspend: true, ' : ''}job: {kind: http, url: "http://127.0.0.1:1/"}}\n  - {name: sp-b, cron: "0 4 * * *", job: {kind: http, url: "http://127.0.0.1:1/"}}\n`;
    const held = (await parseScheduleText(yaml(true), 'sp.yaml')).schedules;
    const d = new Definitions(redis, keys, 'sp1', new Set(['sp1']));
    await d.publish(held);
    expect((await redis.smembers(keys.definitionsSuspended)).filter((n) => n.startsWith('sp-'))).toEqual(['sp-a']);
    // suspend: false (a new hash): gone from the set
    const free = (await parseScheduleText(yaml(false), 'sp.yaml')).schedules;
    await d.publish(free);
    expect(await redis.sismember(keys.definitionsSuspended, 'sp-a')).toBe(0);
    // suspended again, then withdrawn: gone
    await d.publish(held);
    expect(await redis.sismember(keys.definitionsSuspended, 'sp-a')).toBe(1);
    await d.publishChanges([], ['sp-a']);
    expect(await redis.sismember(keys.definitionsSuspended, 'sp-a')).toBe(0);
    // published before the set was kept (an upgrade): a replica's start with the same definitions adds it
    await d.publish(held);
    await redis.srem(keys.definitionsSuspended, 'sp-a');
    await new Definitions(redis, keys, 'sp1', new Set(['sp1'])).publish(held);
    expect(await redis.sismember(keys.definitionsSuspended, 'sp-a')).toBe(1);
  });
});

/**
 * The planner's tick waits for the definitions refresh at most a plan budget (the tick renews the membership after
 * it: at 1M stored schedules a refresh longer than the 2 s membership made replicas drop out); a longer one goes
 * on in the background, and the view it replaces is replaced whole, never read half-built.
 */
describe('the refresh as a tick waits for it', () => {
  const ks = new Keyspace('tick');
  const N = 60_000;

  it('returns after the wait while a full read of 60,000 goes on, then the changes; the view is empty or whole, never half-read', async () => {
    const p = redis.pipeline();
    for (let i = 0; i < N; i++) {
      p.hset(ks.definitions, `t-${i}`, JSON.stringify({ cron: '0 3 * * *', timeZone: 'UTC', jitterMs: 0, definitionHash: `h${i}`, replica: 'pub', loadedAtMs: 1 }));
    }
    p.set(ks.definitionsVersion, String(N));
    await p.exec();
    const d = new Definitions(redis, ks, 'reader', { has: () => true });
    const sizes = new Set<number>();
    const watch = setInterval(() => sizes.add(d.snapshot().size), 1);
    try {
      expect(await d.refreshForTick(1)).toBe(false);
      expect(d.heldVersion).toBeNull(); // still reading
      let got: true | string[] | false = false;
      for (let i = 0; i < 600 && got === false; i++) got = await d.refreshForTick(50);
      expect(got).toBe(true);
      expect(d.snapshot().size).toBe(N);
      expect(d.heldVersion).toBe(String(N));
      expect(d.reads.full).toBe(1);
    } finally {
      clearInterval(watch);
    }
    expect([...sizes].filter((n) => n !== 0 && n !== N)).toEqual([]);
    // Nothing new: a quick refresh within the wait, nothing changed.
    expect(await d.refreshForTick(5_000)).toBe(false);
    // A publication by another replica: the next tick's refresh reads it from the log and names it.
    await new Definitions(redis, ks, 'other', { has: () => true }).publishChanges((await parseScheduleText(file(1, 4).replaceAll('s-', 't-'), 'a.yaml')).schedules, []);
    expect(await d.refreshForTick(5_000)).toEqual(['t-0']);
    await d.settled();
  }, 60_000);
});
