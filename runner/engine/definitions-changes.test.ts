/**
 * The published definitions followed through their change log (definitions.ts, lua/publish-definitions.lua,
 * lua/definitions-changes.lua) on a real redis-server: after any sequence of publications and withdrawals by
 * several replicas, a replica that reads only the changes holds what a full read gives; it reads everything
 * again when the log was trimmed past it or a write was not logged; and the planner's incremental digest equals
 * the digest of the whole set.
 */
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseScheduleText, type CompiledSchedule } from '../config/load.js';
import { Keyspace } from '../redis/keys.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { Definitions } from './definitions.js';
import { DefinitionsDigest, definitionsDigest } from './ownership.js';

// One server for the file, not flushed between tests (each test uses its own names); shared set-up: test/support.
const pr = usePrivateRedis({ flushBetweenTests: false });
let redis: Redis;

beforeAll(() => {
  redis = pr.redis;
});

/** Deterministic PRNG (mulberry32), so a failure reproduces with its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMES = 80;
const VARIANTS = 4;

/** `variants[v][i]`: schedule s-i with definition v (its minute). */
async function variants(): Promise<CompiledSchedule[][]> {
  const out: CompiledSchedule[][] = [];
  for (let v = 0; v < VARIANTS; v++) {
    const text = `schedules:\n${Array.from({ length: NAMES }, (_, i) => `  - {name: s-${i}, cron: "${v} * * * *", job: {kind: http, url: "http://127.0.0.1:1/"}}\n`).join('')}`;
    out.push((await parseScheduleText(text, 'a.yaml')).schedules);
  }
  return out;
}

/** What a replica reading everything now holds. */
async function fullView(keys: Keyspace): Promise<ReturnType<Definitions['snapshot']>> {
  const d = new Definitions(redis, keys, 'reader-full', { has: () => true });
  await d.refresh(true);
  return d.snapshot();
}

/** The published definitions in Redis, decoded, reduced to what the view holds. */
async function inRedis(keys: Keyspace): Promise<Map<string, { hash: string; replica: string; loadedAtMs: number }>> {
  const raw = await redis.hgetall(keys.definitions);
  return new Map(
    Object.entries(raw).map(([k, v]) => {
      const d = JSON.parse(v) as { definitionHash: string; replica: string; loadedAtMs: number };
      return [k, { hash: d.definitionHash, replica: d.replica, loadedAtMs: d.loadedAtMs }];
    }),
  );
}

const sorted = <V>(m: Map<string, V>): [string, V][] => [...m].sort((a, b) => (a[0] < b[0] ? -1 : 1));

describe('the definitions view follows the change log', () => {
  for (const seed of [1, 2, 3]) {
    it(`equals a full read after 300 random publications and withdrawals by 3 replicas (seed ${seed})`, async () => {
      const rand = rng(seed);
      const keys = new Keyspace(`prop${seed}`);
      const defs = await variants();
      const live = new Set(['r1', 'r2', 'r3']);
      const replicas = ['r1', 'r2', 'r3'].map((r) => new Definitions(redis, keys, r, live));
      const follower = new Definitions(redis, keys, 'follower', live);
      await follower.refresh();
      for (let op = 0; op < 300; op++) {
        const r = replicas[Math.floor(rand() * replicas.length)]!;
        const pick = (): CompiledSchedule => defs[Math.floor(rand() * VARIANTS)]![Math.floor(rand() * NAMES)]!;
        const kind = rand();
        if (kind < 0.05) {
          // A whole file published (a reload): one variant of every name.
          const v = Math.floor(rand() * VARIANTS);
          await r.publish(defs[v]!);
        } else {
          const upserted = new Map<string, CompiledSchedule>();
          for (let i = Math.floor(rand() * 6); i > 0; i--) {
            const s = pick();
            upserted.set(s.name, s);
          }
          const removed: string[] = [];
          for (let i = Math.floor(rand() * 4); i > 0; i--) {
            const name = `s-${Math.floor(rand() * NAMES)}`;
            if (!upserted.has(name)) removed.push(name);
          }
          await r.publishChanges([...upserted.values()], [...new Set(removed)]);
        }
        if (rand() < 0.3) await follower.refresh();
        if (op % 50 === 49) {
          await follower.refresh();
          expect(sorted(follower.snapshot())).toEqual(sorted(await inRedis(keys)));
        }
      }
      // A replica's refresh may publish (a name it runs that another withdrew is published by nobody: it publishes
      // its own again), so the follower reads after them, and the replicas read twice (the second pass publishes
      // nothing: the rule settles).
      for (const r of replicas) await r.refresh();
      const settled = await redis.get(keys.definitionsVersion);
      for (const r of replicas) await r.refresh();
      expect(await redis.get(keys.definitionsVersion)).toBe(settled);
      await follower.refresh();
      const truth = sorted(await inRedis(keys));
      expect(truth.length).toBeGreaterThan(0);
      expect(sorted(await fullView(keys))).toEqual(truth);
      expect(sorted(follower.snapshot())).toEqual(truth);
      for (const r of replicas) expect(sorted(r.snapshot())).toEqual(truth);
      // Only the first read was a full one: the rest came from the log.
      expect(follower.reads.full).toBe(1);
      expect(follower.reads.changes).toBeGreaterThan(10);

      // A replica leaves: the others' own definitions of its schedules are published again (by the rule), and
      // every view still equals what Redis holds.
      const gone = sorted(await inRedis(keys)).find(([, w]) => w.replica === 'r3')?.[0];
      live.delete('r3');
      for (const r of replicas.slice(0, 2)) await r.refresh();
      await follower.refresh();
      const after = sorted(await inRedis(keys));
      expect(sorted(follower.snapshot())).toEqual(after);
      if (gone !== undefined) expect(follower.snapshot().get(gone)?.replica).not.toBe('r3');
    });
  }

  it('reads everything again when the log was trimmed past its version, and only the changes otherwise', async () => {
    const keys = new Keyspace('trim');
    const defs = await variants();
    const live = { has: () => true };
    const writer = new Definitions(redis, keys, 'w', live, 10);
    const reader = new Definitions(redis, keys, 'r', live, 10);
    await writer.publish(defs[0]!.slice(0, 40));
    await reader.refresh();
    expect(reader.reads.full).toBe(1);
    expect(await redis.zcard(keys.definitionsChanges)).toBe(10);

    // 5 changes: within what the log keeps.
    await writer.publishChanges(defs[1]!.slice(0, 5), []);
    await reader.refresh();
    expect(reader.reads).toMatchObject({ full: 1, changes: 1, changedNames: 5 });
    expect(sorted(reader.snapshot())).toEqual(sorted(await inRedis(keys)));

    // 25 changes and 3 withdrawals: the log keeps 10, the reader is further behind.
    await writer.publishChanges(defs[2]!.slice(0, 25), ['s-30', 's-31', 's-32']);
    await reader.refresh();
    expect(reader.reads.full).toBe(2);
    const truth = sorted(await inRedis(keys));
    expect(truth.map(([n]) => n)).not.toContain('s-31');
    expect(sorted(reader.snapshot())).toEqual(truth);

    // A change written without the log (a replica of an older version): read everything, not a stale view.
    await redis.hset(keys.definitions, 's-0', JSON.stringify({ definitionHash: 'old-writer', replica: 'w', loadedAtMs: 1 }));
    await redis.incr(keys.definitionsVersion);
    await reader.refresh();
    expect(reader.reads.full).toBe(3);
    expect(reader.snapshot().get('s-0')?.hash).toBe('old-writer');
    // The next logged write after it raises the floor: a reader from before the unlogged write reads everything.
    const stale = new Definitions(redis, keys, 's', live, 10);
    await stale.refresh();
    await redis.hset(keys.definitions, 's-1', JSON.stringify({ definitionHash: 'old-writer', replica: 'w', loadedAtMs: 1 }));
    await redis.incr(keys.definitionsVersion);
    await writer.publishChanges([defs[3]![2]!], []);
    await stale.refresh();
    expect(stale.reads.full).toBe(2);
    expect(sorted(stale.snapshot())).toEqual(sorted(await inRedis(keys)));
  });

  it('reads a change log longer than one page in pages', async () => {
    const keys = new Keyspace('pages');
    const text = `schedules:\n${Array.from({ length: 4_500 }, (_, i) => `  - {name: p-${i}, cron: "1 * * * *", job: {kind: http, url: "http://127.0.0.1:1/"}}\n`).join('')}`;
    const text2 = text.replaceAll('"1 * * * *"', '"2 * * * *"');
    const a = (await parseScheduleText(text, 'a.yaml')).schedules;
    const b = (await parseScheduleText(text2, 'a.yaml')).schedules;
    const live = { has: () => true };
    const writer = new Definitions(redis, keys, 'w', live);
    const reader = new Definitions(redis, keys, 'r', live);
    await writer.publish(a);
    await reader.refresh();
    await writer.publishChanges(b, []);
    await reader.refresh();
    expect(reader.reads).toMatchObject({ full: 1, changes: 1, changedNames: 4_500 });
    expect(b.every((s) => reader.isCurrent(s))).toBe(true);
    expect(sorted(reader.snapshot())).toEqual(sorted(await inRedis(keys)));
  });
});

describe('the planning digest, kept up to date one schedule at a time', () => {
  it('equals the digest of the whole set after random additions, changes and removals', async () => {
    const rand = rng(7);
    const defs = await variants();
    const held = new Map<string, CompiledSchedule>();
    const d = new DefinitionsDigest();
    for (let op = 0; op < 2_000; op++) {
      const s = defs[Math.floor(rand() * VARIANTS)]![Math.floor(rand() * NAMES)]!;
      const old = held.get(s.name);
      if (old) d.toggle(old.name, old.definitionHash);
      if (rand() < 0.3) held.delete(s.name);
      else {
        held.set(s.name, s);
        d.toggle(s.name, s.definitionHash);
      }
      if (op % 100 === 0) expect(d.value()).toBe(definitionsDigest([...held.values()]));
    }
    expect(d.value()).toBe(definitionsDigest([...held.values()].reverse()));
    // Different sets, different digests.
    expect(definitionsDigest(defs[0]!)).not.toBe(definitionsDigest(defs[1]!));
    expect(definitionsDigest(defs[0]!)).not.toBe(definitionsDigest(defs[0]!.slice(1)));
  });
});
