/**
 * What one occurrence costs Redis (issue 16: Redis CPU per occurrence ≤ 0.5× BullMQ's), counted on a real
 * redis-server with INFO commandstats, which counts the commands the scripts run inside Lua too: the plan, the
 * claim and the finish of an occurrence of a schedule without notify or heartbeat, under Allow, in steady state
 * (the scripts loaded, the history's hourly upkeep done). A budget that goes red when a change adds a command per
 * occurrence; lower it when a change saves one. The bench (`npm run bench -- throughput`, "Redis commands per
 * occurrence") measures the same with delivery and everything else.
 *
 * Also: the claim and finish trust the schedule's `outboxOn` the replica passes (its definition is the published
 * one) instead of reading the published definition per outcome.
 */
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { occurrenceKey } from '../schedule/occurrence.js';
import { claimRequest as req, redisNow as now0, scriptHarness } from '../../test/support/script-harness.js';
import { OutboxKeys } from '../outbox/keys.js';
import type { PlannedOccurrence } from './store.js';

const h = scriptHarness();
const redisNow = () => now0(h.redis);

/** Commands run since the last call (INFO commandstats), by name, without the INFO itself. */
async function commandsSince(redis: Redis, before?: Map<string, number>): Promise<Map<string, number>> {
  const now = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) now.set(m[1]!, Number(m[2]));
  if (!before) return now;
  const d = new Map<string, number>();
  for (const [k, v] of now) if (k !== 'info' && v - (before.get(k) ?? 0) > 0) d.set(k, v - (before.get(k) ?? 0));
  return d;
}
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

const planned = (key: string, dueMs: number): PlannedOccurrence => ({
  schedule: 's', key, dueMs, fireMs: dueMs, keepFireMs: null,
  policy: { suspend: false, startingDeadlineMs: null, catchUp: 'latest', maxCatchUpRuns: 10 },
});
const planOpts = { horizonMs: 60_000, retentionMs: 120_000, catchUpGraceMs: 1000, replica: 'a' };

describe('Redis commands per occurrence (plan, claim, finish)', () => {
  it('stay within the budget: plan 9, claim 8, finish 15 (each with its EVALSHA and TIME)', async () => {
    const now = await redisNow();
    const costs: { plan: number; claim: number; finish: number; detail: string }[] = [];
    for (const due of [now + 500, now + 600]) { // the first loads the scripts and does the hour's upkeep
      const key = occurrenceKey('s', due);
      const at0 = await commandsSince(h.redis);
      await h.store.plan([planned(key, due)], planOpts);
      const plan = await commandsSince(h.redis, at0);
      const at1 = await commandsSince(h.redis);
      // claimed at once (early tolerance): in steady state the claim finds the record the plan made
      expect(await h.store.claim(req(key, due, due, { outboxOn: '', earlyToleranceMs: 5000 }))).toMatchObject({ status: 'claimed' });
      const claim = await commandsSince(h.redis, at1);
      const at2 = await commandsSince(h.redis);
      expect(await h.store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000, outboxOn: '' })).toEqual({ status: 'recorded' });
      const finish = await commandsSince(h.redis, at2);
      costs.push({ plan: total(plan), claim: total(claim), finish: total(finish), detail: JSON.stringify({ plan: [...plan], claim: [...claim], finish: [...finish] }) });
    }
    const steady = costs[1]!;
    expect({ plan: steady.plan, claim: steady.claim, finish: steady.finish }, steady.detail).toEqual({ plan: 9, claim: 8, finish: 15 });
  });

  it('the outcomes go to the outbox as the passed outboxOn says, without reading the published definition', async () => {
    const now = await redisNow();
    const ob = new OutboxKeys(h.keys);
    // nothing published for "s": only the passed outboxOn can ask for these outcomes
    const key = occurrenceKey('s', now - 100);
    expect(await h.store.claim(req(key, now - 100, now - 100, { outboxOn: 'failed started succeeded' }))).toMatchObject({ status: 'claimed' });
    expect(await h.store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000, outboxOn: 'failed started succeeded' })).toEqual({ status: 'recorded' });
    const states = (await h.redis.xrange(ob.stream, '-', '+')).map(([, f]) => f[f.indexOf('state') + 1]);
    expect(states).toEqual(['started', 'succeeded']);
    // and '' (the replica's published definition has neither notify nor heartbeat) reads nothing and adds nothing
    await h.redis.hset(h.keys.definitions, 's', JSON.stringify({ outboxOn: 'started succeeded' }));
    const key2 = occurrenceKey('s', now - 50);
    await h.store.claim(req(key2, now - 50, now - 50, { outboxOn: '' }));
    await h.store.finish(key2, 1, { state: 'succeeded', retentionMs: 120_000, outboxOn: '' });
    expect(await h.redis.xlen(ob.stream)).toBe(2);
    // without it, the published definition decides (a caller that does not know it)
    const key3 = occurrenceKey('s', now - 20);
    await h.store.claim(req(key3, now - 20, now - 20));
    await h.store.finish(key3, 1, { state: 'succeeded', retentionMs: 120_000 });
    expect(await h.redis.xlen(ob.stream)).toBe(4);
  });
});
