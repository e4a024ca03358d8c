/**
 * `GET /api/v1/audit?schedule=X` on a real redis-server: the server scans the log for X's entries (bounded per
 * call) instead of answering a filtered page of the log, so an entry of X behind thousands of newer entries of
 * other schedules comes in the first answer — no empty pages to walk — and a scan that stops at its bound says so
 * and gives the cursor to go on, with nothing missed or repeated across cursors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { AUDIT_API_SCAN, recordAudit } from '../../runner/history/audit.js';
import { HistoryKeys } from '../../runner/history/keys.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { Redis } from 'ioredis';

let srv: RedisServerProcess;
let redis: Redis;
let d: Dashboard;
const keys = new Keyspace('cronflock');

/** Appends `n` audit entries of other schedules, as recordAudit writes them (one pipeline: fast). */
async function others(n: number): Promise<void> {
  const p = redis.pipeline();
  for (let i = 0; i < n; i++) {
    p.xadd(new HistoryKeys(keys).audit, '*', 'who', 'bot', 'via', 'api', 'action', 'trigger', 'schedule', `other-${i % 50}`, 'reason', 'r', 'outcome', 'triggered');
  }
  await p.exec();
}

interface Page {
  items: { schedule: string; reason: string; id: string }[];
  next: string | null;
  scanned?: number;
  scanLimitReached?: boolean;
}
const get = async (q: string): Promise<Page> => (await (await fetch(new URL(`/api/v1/audit?${q}`, d.url))).json()) as Page;

beforeAll(async () => {
  srv = await RedisServerProcess.start();
  redis = new Redis(srv.url);
  d = await startDashboard({ redisUrl: srv.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test' });
});
afterAll(async () => {
  await d?.close();
  redis?.disconnect();
  await srv?.cleanup();
});

describe('GET /api/v1/audit?schedule=', () => {
  it('returns an entry of the schedule behind 2,500 newer entries of others in the first answer, not after empty pages', async () => {
    await recordAudit(redis, keys, { who: 'alice', via: 'api', action: 'suspend', schedule: 'deep', reason: 'the old one', outcome: 'suspended' });
    await others(2_500);
    const page = await get('schedule=deep&limit=10');
    expect(page.items.map((e) => [e.schedule, e.reason])).toEqual([['deep', 'the old one']]);
    expect(page).toMatchObject({ next: null, scanLimitReached: false });
    expect(page.scanned).toBeGreaterThan(2_500);
    // The log unfiltered still pages as before.
    const plain = await get('limit=10');
    expect(plain.items).toHaveLength(10);
    expect(plain.next).not.toBeNull();
  });

  it('stops at its bound saying so, with the cursor to go on; following cursors finds every entry once', async () => {
    await redis.del(new HistoryKeys(keys).audit);
    await recordAudit(redis, keys, { who: 'alice', via: 'api', action: 'suspend', schedule: 'far', reason: 'oldest', outcome: 'suspended' });
    await others(AUDIT_API_SCAN + 500);
    await recordAudit(redis, keys, { who: 'alice', via: 'api', action: 'resume', schedule: 'far', reason: 'newest', outcome: 'resumed' });
    await others(100);
    // limit 1: the newest comes with a cursor right after it.
    const first = await get('schedule=far&limit=1');
    expect(first.items.map((e) => e.reason)).toEqual(['newest']);
    expect(first.scanLimitReached).toBe(false);
    expect(first.next).toBe(first.items[0]!.id);
    // The oldest lies beyond one call's bound: that call says so and hands the cursor on.
    const second = await get(`schedule=far&limit=1&cursor=${encodeURIComponent(first.next!)}`);
    expect(second).toMatchObject({ items: [], scanned: AUDIT_API_SCAN, scanLimitReached: true });
    expect(second.next).not.toBeNull();
    const third = await get(`schedule=far&limit=1&cursor=${encodeURIComponent(second.next!)}`);
    expect(third.items.map((e) => e.reason)).toEqual(['oldest']);
  });
});

describe('GET /api/v1/audit?cursor= that is not a page\'s next', () => {
  it('answers 400 BAD_CURSOR naming query.cursor (not a 503 with Redis\'s error), with and without schedule=; a real next still pages', async () => {
    const res = async (q: string) => {
      const r = await fetch(new URL(`/api/v1/audit?${q}`, d.url));
      return { status: r.status, body: (await r.json()) as { error?: { code: string; field?: string; message: string } } };
    };
    for (const cursor of ['zzz', '0-0', '-1', '-', '+', '99999999999999999999-0', '1-2-3', ' 1-0']) {
      for (const q of [`cursor=${encodeURIComponent(cursor)}`, `schedule=deep&cursor=${encodeURIComponent(cursor)}`]) {
        const r = await res(q);
        expect(r.status, q).toBe(400);
        expect(r.body.error).toMatchObject({ code: 'BAD_CURSOR', field: 'query.cursor' });
        expect(r.body.error!.message).toMatch(/not a cursor of the audit log; allowed: a page's `next`/);
      }
    }
    const page = await get('limit=2');
    expect(page.next).not.toBeNull();
    const r = await res(`limit=2&cursor=${encodeURIComponent(page.next!)}`);
    expect(r.status).toBe(200);
  });
});
