/**
 * The history on a real redis-server: what the scripts write when an occurrence becomes final (one compact entry
 * with every attempt, the schedule's latest result, its 24 h counts), how it is read back once the run record is
 * gone, its trim by the history's length, and what an entry costs in Redis memory.
 */
import { describe, expect, it } from 'vitest';
import { occurrenceKey } from '../schedule/occurrence.js';
import { claimRequest as req, redisNow as now0, scriptHarness } from '../../test/support/script-harness.js';
import { HistoryKeys } from './keys.js';
import { readOccurrence, readOccurrences } from './read.js';
import { publishHistoryMs } from './config.js';
import { OutboxKeys } from '../outbox/keys.js';

const h = scriptHarness();
const hk = new HistoryKeys(h.keys);
const redisNow = () => now0(h.redis);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('history', () => {
  it('keeps every claim of an occurrence — replica, fencing token, lateness — after a stall, past its run record', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now - 50);
    const first = await h.store.claim(req(key, now - 50, now - 40, { replica: 'a' }));
    expect(first).toMatchObject({ status: 'claimed', token: 1 });
    await sleep(400); // a's lease lapses: it was killed
    const second = await h.store.claim(req(key, now - 50, now - 40, { replica: 'b' }));
    expect(second).toMatchObject({ status: 'claimed', token: 2 });
    // While open, the attempts are read from the record (field att).
    const open = await readOccurrence(h.redis, h.keys, key);
    expect(open).toMatchObject({ state: 'running', from: 'record' });
    expect(open!.attempts.map((a) => [a.fencingToken, a.replica, a.why])).toEqual([[1, 'a', 'first'], [2, 'b', 'stalled']]);
    expect(await h.store.finish(key, 2, { state: 'succeeded', retentionMs: 120_000, result: '{"ok":true}' })).toEqual({ status: 'recorded' });
    expect(await h.redis.exists(hk.attempts(key))).toBe(0); // folded into the entry
    expect(await h.redis.hget(h.keys.occurrence(key), 'att')).toBeFalsy(); // and out of the final record

    await h.redis.del(h.keys.occurrence(key)); // the record's retention is over
    const v = await readOccurrence(h.redis, h.keys, key);
    expect(v).toMatchObject({ key, schedule: 's', state: 'succeeded', from: 'history', dueMs: now - 50, fireMs: now - 40, result: { ok: true } });
    expect(v!.attempts.map((a) => [a.attempt, a.fencingToken, a.replica, a.why])).toEqual([[1, 1, 'a', 'first'], [2, 2, 'b', 'stalled']]);
    expect(v!.attempts[0]!.latenessMs).toBe(v!.attempts[0]!.startMs - (now - 40));
    expect(v!.attempts[1]!.startMs).toBeGreaterThanOrEqual(v!.attempts[0]!.startMs + 300);
    expect(v!.endMs).toBeGreaterThanOrEqual(v!.attempts[1]!.startMs);

    // The latest result and the counts of the last 24 h.
    expect(await h.redis.hget(hk.last, 's')).toMatch(new RegExp(`^${now - 50}\\|`));
    const counts = await h.redis.hgetall(hk.counts('s'));
    expect(Object.entries(counts).map(([f, c]) => [f[0], c.split(':')[1]])).toEqual([['s', '1']]);
  });

  it('records occurrences closed without a run (planned skipped, missed at claim) with who closed them and why', async () => {
    const now = await redisNow();
    const key = occurrenceKey('s', now - 5_000);
    expect(await h.store.claim(req(key, now - 5_000, now - 5_000, { startingDeadlineMs: 1_000, replica: 'c' }))).toEqual({ status: 'missed', reason: 'starting deadline exceeded' });
    const page = await readOccurrences(h.redis, h.keys, 's', now - 60_000, now, 100);
    await h.redis.del(h.keys.occurrence(key));
    const v = await readOccurrence(h.redis, h.keys, key);
    expect(page.items).toHaveLength(1);
    expect(v).toMatchObject({ state: 'missed', reason: 'starting deadline exceeded', replica: 'c', attempts: [], from: 'history' });
  });

  it('records an occurrence the plan script closed in a state a calendar fixed (skipped: calendar …), with its reason, in the history, the latest result and the outbox', async () => {
    const now = await redisNow();
    // The published definition asks for skipped outcomes in the outbox (runner/notify/events.ts outboxOn).
    await h.redis.hset(h.keys.definitions, 's', JSON.stringify({ outboxOn: 'skipped' }));
    const policy = { suspend: false, startingDeadlineMs: null, catchUp: 'latest' as const, maxCatchUpRuns: 10 };
    const due = now + 1_000;
    const key = occurrenceKey('s', due);
    const r = await h.store.plan(
      [{ schedule: 's', key, dueMs: due, fireMs: due, keepFireMs: null, policy, fixed: { state: 'skipped', reason: 'calendar holidays' } }],
      { horizonMs: 60_000, retentionMs: 120_000, catchUpGraceMs: 1_000, replica: 'p' },
    );
    expect(r).toEqual({ toEnqueue: [], finals: [{ key, state: 'skipped', reason: 'calendar holidays' }] });

    await h.redis.del(h.keys.occurrence(key)); // the record's retention is over: the history still tells
    const page = await readOccurrences(h.redis, h.keys, 's', now - 60_000, now + 60_000, 100);
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({ key, state: 'skipped', reason: 'calendar holidays', attempts: [], from: 'history' });
    expect(await readOccurrence(h.redis, h.keys, key)).toMatchObject({ state: 'skipped', reason: 'calendar holidays', from: 'history' });
    expect(await h.redis.hget(hk.last, 's')).toMatch(new RegExp(`^${due}\\|`));
    expect(Object.keys(await h.redis.hgetall(hk.counts('s'))).map((f) => f[0])).toEqual(['k']);
    // The same final state reached the outbox and the schedule's last result (alerts' lastresult).
    const outbox = await h.redis.xrange(new OutboxKeys(h.keys).stream, '-', '+');
    const fields = outbox.map(([, f]) => Object.fromEntries(Array.from({ length: f.length / 2 }, (_, i) => [f[2 * i], f[2 * i + 1]])));
    expect(fields).toEqual([expect.objectContaining({ key, schedule: 's', state: 'skipped', reason: 'calendar holidays' })]);
    expect(await h.redis.hget(h.keys.lastResult, 's')).toMatch(new RegExp(`^0\\|skipped\\|${due}\\|\\d+\\|calendar holidays$`));
  });

  it('trims entries older than the history and keeps a newer latest result', async () => {
    await publishHistoryMs(h.redis, h.keys, 2_000);
    const now = await redisNow();
    for (const due of [now - 10_000, now - 1_000]) {
      const key = occurrenceKey('s', due);
      await h.store.claim(req(key, due, due));
      await h.store.finish(key, 1, { state: due < now - 5_000 ? 'failed' : 'succeeded', retentionMs: 120_000 });
    }
    const members = await h.redis.zrange(hk.history('s'), 0, -1, 'WITHSCORES');
    expect(members.filter((_, i) => i % 2 === 1)).toEqual([String(now - 1_000)]); // the older one is gone
    // kept up once an hour: the expiry is the history's plus that hour
    expect(await h.redis.pttl(hk.history('s'))).toBeLessThanOrEqual(2_000 + 3_600_000);
    expect(await h.redis.pttl(hk.history('s'))).toBeGreaterThan(3_600_000);
    expect(await h.redis.hget(hk.last, 's')).toMatch(new RegExp(`^${now - 1_000}\\|`));
  });

  it('keeps the history up (trim, expiry) at the first outcome of each hour of a state code, not at every entry', async () => {
    await publishHistoryMs(h.redis, h.keys, 5_000);
    const now = await redisNow();
    const finishAt = async (due: number) => {
      const key = occurrenceKey('u', due);
      await h.store.claim(req(key, due, due, { schedule: 'u' }));
      expect(await h.store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    };
    await finishAt(now - 30_000); // the hour's first success: trimmed before it is added, expiry set
    expect(await h.redis.pttl(hk.history('u'))).toBeGreaterThan(3_600_000);
    expect(await h.redis.pttl(hk.counts('u'))).toBeGreaterThan(26 * 3_600_000);
    await h.redis.persist(hk.history('u'));
    await h.redis.persist(hk.counts('u'));
    await finishAt(now - 20_000); // the same hour and code: no upkeep (the old entry stays, at most an hour)
    expect(await h.redis.zcard(hk.history('u'))).toBe(2);
    expect(await h.redis.pttl(hk.history('u'))).toBe(-1);
    // the bucket of this hour as if written an hour ago: the next success is the hour's first
    const hour = Math.floor(now / 3_600_000);
    await h.redis.hset(hk.counts('u'), `s${hour % 26}`, `${hour - 1}:7`);
    await finishAt(now - 1_000);
    expect((await h.redis.zrange(hk.history('u'), 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1)).toEqual([String(now - 1_000)]);
    expect(await h.redis.pttl(hk.history('u'))).toBeGreaterThan(3_600_000);
    expect(await h.redis.pttl(hk.history('u'))).toBeLessThanOrEqual(5_000 + 3_600_000);
    expect(await h.redis.pttl(hk.counts('u'))).toBeGreaterThan(26 * 3_600_000);
    expect(await h.redis.hget(hk.counts('u'), `s${hour % 26}`)).toBe(`${hour}:1`);
  });

  it('folds in the attempt LIST of an occurrence claimed by an older version, and keeps no attempts in a final record', async () => {
    const now = await redisNow();
    const key = occurrenceKey('v', now - 50);
    expect(await h.store.claim(req(key, now - 50, now - 40, { replica: 'a', schedule: 'v' }))).toMatchObject({ status: 'claimed', token: 1 });
    // what an older version wrote at its claim: the attempts in a LIST of their own, none in the record
    const att = await h.redis.hget(h.keys.occurrence(key), 'att');
    expect(JSON.parse(`[${att!}]`)).toEqual([[1, 'a', expect.any(Number), 'first']]);
    await h.redis.hdel(h.keys.occurrence(key), 'att');
    await h.redis.rpush(hk.attempts(key), JSON.stringify([1, 'old', 7, 'first']));
    expect(await h.store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000 })).toEqual({ status: 'recorded' });
    expect(await h.redis.exists(hk.attempts(key))).toBe(0);
    expect(await h.redis.hget(h.keys.occurrence(key), 'att')).toBeFalsy();
    const v = await readOccurrence(h.redis, h.keys, key);
    expect(v!.attempts.map((a) => [a.fencingToken, a.replica, a.why])).toEqual([[1, 'old', 'first']]);
  });

  it('measures what 10,000 finished occurrences cost in Redis memory (the history entries, as the scripts write them)', async () => {
    const now = await redisNow();
    const n = 10_000;
    const schedules = 10;
    for (let i = 0; i < n; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, async (_, k) => {
          const j = i + k;
          const s = `schedule-${j % schedules}`;
          const due = now - 3_000_000 + j * 100;
          const key = occurrenceKey(s, due);
          const r = { ...req(key, due, due + 312, { schedule: s, replica: 'cronflock-7d9f8b-x2k4q', horizonMs: 3_600_000 }) };
          await h.store.claim(r);
          await h.store.finish(key, 1, { state: 'succeeded', retentionMs: 120_000, result: '{"status":200}' });
        }),
      );
    }
    let bytes = 0;
    for (let i = 0; i < schedules; i++) bytes += Number(await h.redis.call('MEMORY', 'USAGE', hk.history(`schedule-${i}`), 'SAMPLES', '0'));
    expect(await h.redis.zcard(hk.history('schedule-0'))).toBe(n / schedules);
    const perEntry = bytes / n;
    console.log(`history: ${perEntry.toFixed(0)} bytes per finished occurrence in Redis (${n} http-like runs of ${schedules} schedules, one attempt, a 14-byte result); 1M ≈ ${((perEntry * 1e6) / 2 ** 20).toFixed(0)} MiB`);
    expect(perEntry).toBeLessThan(400);
  });
});
