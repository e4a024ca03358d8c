/**
 * A change sent to the API while Redis is paused (SIGSTOP: it takes the connection and the command, answers
 * nothing, and runs what it received when it wakes), on a real redis-server: the write cannot be taken back, so
 * the 503 says the outcome is unknown (`REDIS_OUTCOME_UNKNOWN`: it may have been applied; read it back, retry with
 * a precondition) instead of `REDIS_UNAVAILABLE`, which says nothing was done. After SIGCONT the PUT did take
 * effect (and is audited), as the answer warned; the same for DELETE. A read while paused stays
 * `REDIS_UNAVAILABLE`.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { OPERATOR_TOKEN } from '../support/dashboard-flock.js';

const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s();
});

async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(new URL(path, base), {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR_TOKEN}` },
    signal: AbortSignal.timeout(30_000),
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

async function untilOk(f: () => Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + 20_000;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('a change while Redis is paused', () => {
  it('is answered 503 REDIS_OUTCOME_UNKNOWN (may have been applied), and it was: PUT and DELETE', async () => {
    const srv = await RedisServerProcess.start();
    stops.push(() => srv.cleanup());
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-away-'));
    stops.push(async () => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'tokens.yaml'), `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n`);
    const d: Dashboard = await startDashboard({ redisUrl: srv.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test', redisTimeoutMs: 1_000, rules: loadTokenFile(join(dir, 'tokens.yaml')) });
    stops.push(() => d.close());
    const def = { cron: '0 3 * * *', job: { kind: 'http', url: 'http://127.0.0.1:1/x' } };
    expect((await call(d.url, 'PUT', '/api/v1/schedules/warm', def)).status).toBe(200); // scripts loaded, connection ready

    process.kill(srv.pid!, 'SIGSTOP');
    let put: { status: number; body: any };
    let read: { status: number; body: any };
    try {
      put = await call(d.url, 'PUT', '/api/v1/schedules/paused-put', def);
      read = await call(d.url, 'GET', '/api/v1/audit');
    } finally {
      process.kill(srv.pid!, 'SIGCONT');
    }
    expect(put.status).toBe(503);
    expect(put.body.error.code).toBe('REDIS_OUTCOME_UNKNOWN');
    expect(put.body.error.message).toMatch(/may have been applied/);
    expect(put.body.error.message).toMatch(/If-Match|If-None-Match/);
    expect(read.status).toBe(503);
    expect(read.body.error.code).toBe('REDIS_UNAVAILABLE');
    // Redis ran what it had received: the PUT took effect, as the answer said it might.
    let got: { status: number; body: any } = { status: 0, body: undefined };
    await untilOk(async () => (got = await call(d.url, 'GET', '/api/v1/schedules/paused-put')).status === 200, 'the PUT readable');
    expect(got.body.stored.version).toBeGreaterThan(0);
    const audit = await call(d.url, 'GET', '/api/v1/audit?schedule=paused-put');
    expect(audit.body.items.map((e: any) => e.action)).toEqual(['upsert']);

    process.kill(srv.pid!, 'SIGSTOP');
    let del: { status: number; body: any };
    try {
      del = await call(d.url, 'DELETE', '/api/v1/schedules/warm');
    } finally {
      process.kill(srv.pid!, 'SIGCONT');
    }
    expect(del.status).toBe(503);
    expect(del.body.error.code).toBe('REDIS_OUTCOME_UNKNOWN');
    await untilOk(async () => (await call(d.url, 'GET', '/api/v1/schedules/warm')).status === 404, 'the DELETE applied');
  }, 90_000);
});
