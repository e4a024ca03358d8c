/**
 * The dashboard and the API when Redis is away, on a real redis-server: paused (SIGSTOP: it takes connections
 * but answers nothing) a request is answered 503 REDIS_UNAVAILABLE in the error envelope within the Redis
 * timeout (it hung before); stopped (killed) the same, with the cause in words, never the client's internals
 * ("Stream isn't writeable and enableOfflineQueue options is false"); back, the same requests are answered.
 * `cronflock ui --redis-timeout` sets that bound. A page (not the API) says it as an HTML page.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { BIN, ROOT } from '../support/replica.js';

const INTERNALS = /enableOfflineQueue|Stream isn't writeable|maxRetriesPerRequest|max retries|Connection is closed|Command timed out/;
// Requests that read Redis (the schedules list of an empty flock is answered from the in-memory index).
const PATHS = ['/api/v1/flock', '/api/v1/audit', '/api/v1/occurrences/x@2026-01-01T00:00:00.000Z'];

async function get(base: string, path: string): Promise<{ status: number; body: { error?: { code: string; message: string } }; ms: number }> {
  const t0 = Date.now();
  const r = await fetch(new URL(path, base), { signal: AbortSignal.timeout(30_000) });
  return { status: r.status, body: (await r.json()) as { error?: { code: string; message: string } }, ms: Date.now() - t0 };
}

const stops: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s();
});

describe('the dashboard with Redis away', () => {
  it('answers 503 REDIS_UNAVAILABLE within the Redis timeout while Redis is paused or down, and answers again when it is back', async () => {
    const srv = await RedisServerProcess.start();
    stops.push(() => srv.cleanup());
    const d: Dashboard = await startDashboard({ redisUrl: srv.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test', redisTimeoutMs: 1_000 });
    stops.push(() => d.close());
    expect((await get(d.url, '/api/v1/flock')).status).toBe(200);

    process.kill(srv.pid!, 'SIGSTOP');
    try {
      for (const path of PATHS) {
        const r = await get(d.url, path);
        expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(503);
        expect(r.body.error!.code).toBe('REDIS_UNAVAILABLE');
        expect(r.body.error!.message).toMatch(/^Redis is not answering: Redis accepted the connection but did not answer within 1 s \(is the server paused.*--redis-timeout/);
        expect(r.body.error!.message).not.toMatch(INTERNALS);
        expect(r.ms, path).toBeLessThan(15_000); // bounded by the 1 s timeout (generous on a loaded machine)
      }
      // A page says it as a page, in words.
      const page = await fetch(new URL('/flock', d.url), { signal: AbortSignal.timeout(30_000) });
      expect(page.status).toBe(503);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const text = await page.text();
      expect(text).toContain('<h1>Redis is not answering</h1>');
      expect(text).not.toMatch(INTERNALS);
    } finally {
      process.kill(srv.pid!, 'SIGCONT');
    }
    // Back: answered again (the connection may need a moment to be ready again).
    const until = Date.now() + 20_000;
    let back = await get(d.url, '/api/v1/flock');
    while (back.status !== 200 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 200));
      back = await get(d.url, '/api/v1/flock');
    }
    expect(back.status, JSON.stringify(back.body)).toBe(200);

    await srv.stop(); // down: nothing accepts connections
    for (const path of PATHS) {
      const r = await get(d.url, path);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(503);
      expect(r.body.error!.code).toBe('REDIS_UNAVAILABLE');
      expect(r.body.error!.message).toMatch(/^Redis is not answering: /);
      expect(r.body.error!.message).not.toMatch(INTERNALS);
    }
    expect((await get(d.url, '/api/v1/flock')).body.error!.message).toMatch(/connection refused|not reachable|closed the connection/);
  });

  it('`cronflock ui --redis-timeout 1` on a paused Redis answers 503 within seconds instead of hanging', async () => {
    const srv = await RedisServerProcess.start();
    stops.push(() => srv.cleanup());
    const ui = spawn(process.execPath, [BIN, 'ui', '--redis', srv.url, '--listen', '127.0.0.1:0', '--redis-timeout', '1'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    stops.push(async () => {
      if (ui.exitCode === null) {
        ui.kill('SIGKILL');
        await new Promise((r) => ui.once('exit', r));
      }
    });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no dashboard URL in: ${out}`)), 30_000);
      const seen = (b: Buffer) => {
        out += b.toString();
        const m = /dashboard on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      };
      ui.stdout.on('data', seen);
      ui.stderr.on('data', seen);
    });
    expect((await get(url, '/api/v1/schedules')).status).toBe(200);
    process.kill(srv.pid!, 'SIGSTOP');
    try {
      const r = await get(url, '/api/v1/flock');
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body.error!.message).toMatch(/^Redis is not answering: Redis accepted the connection but did not answer within 1 s/);
      expect(r.ms).toBeLessThan(15_000);
    } finally {
      process.kill(srv.pid!, 'SIGCONT');
    }
  });
});
