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
