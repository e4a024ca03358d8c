/**
 * An audit reason is text wherever the dashboard shows it, on a real redis-server: HTML in it is escaped (no
 * element is made of it), control characters stay inside their cell as characters (a browser does not run
 * terminal escapes), and the API gives it back exactly as it was given.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { recordAudit } from '../../runner/history/audit.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { Redis } from 'ioredis';

let srv: RedisServerProcess;
let redis: Redis;
let d: Dashboard;
const REASON = '<script>alert(1)</script><img src=x onerror=alert(2)> "quoted" & \x1b[31mred\x1b]0;t\x07\u202eevil';
beforeAll(async () => {
  srv = await RedisServerProcess.start();
  redis = new Redis(srv.url);
  await recordAudit(redis, new Keyspace('cronflock'), { who: 'mallory', via: 'api', action: 'suspend', schedule: 'x', reason: REASON, outcome: 'suspended' });
  d = await startDashboard({ redisUrl: srv.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test' });
});
afterAll(async () => {
  await d?.close();
  redis?.disconnect();
  await srv?.cleanup();
});

describe('an audit reason in the dashboard', () => {
  it('is shown as text: HTML escaped, no element made of it; the API gives it back as given', async () => {
    const page = await (await fetch(new URL('/audit', d.url))).text();
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; &quot;quoted&quot; &amp; ');
    expect(page).not.toContain('<script>alert(1)');
    expect(page).not.toContain('<img src=x');
    // The whole reason sits in one cell, as characters.
    const cell = /<td>(&lt;script&gt;[^<]*)<\/td>/.exec(page);
    expect(cell?.[1]).toBe(REASON.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;'));
    const api = (await (await fetch(new URL('/api/v1/audit', d.url))).json()) as { items: { reason: string }[] };
    expect(api.items[0]!.reason).toBe(REASON);
  });
});
