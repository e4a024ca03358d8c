/**
 * The API's 404s, on a real redis-server: an unknown route or method, an unknown schedule and an unknown
 * occurrence are all answered in the error envelope `{error: {code: 'NOT_FOUND', message}}` the other errors use
 * (an unknown route was Hono's plain-text "404 Not Found"), and the OpenAPI document says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';

let srv: RedisServerProcess;
let d: Dashboard;
beforeAll(async () => {
  srv = await RedisServerProcess.start();
  d = await startDashboard({ redisUrl: srv.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test' });
});
afterAll(async () => {
  await d?.close();
  await srv?.cleanup();
});

async function call(method: string, path: string): Promise<{ status: number; type: string; body: unknown }> {
  const r = await fetch(new URL(path, d.url), { method });
  const text = await r.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: the assertion shows the text */
  }
  return { status: r.status, type: r.headers.get('content-type') ?? '', body };
}

describe('API 404s', () => {
  it('answers an unknown route, method, schedule or occurrence with 404 in the error envelope', async () => {
    const cases: [string, string, RegExp][] = [
      ['GET', '/api/v1/nonsense', /^no API route GET \/api\/v1\/nonsense: the routes are listed in \/api\/v1\/openapi\.json$/],
      ['GET', '/api/v2/schedules', /^no API route GET \/api\/v2\/schedules: /],
      ['GET', '/api/v1/schedules/a/b/c', /^no API route GET \/api\/v1\/schedules\/a\/b\/c: /],
      ['PATCH', '/api/v1/schedules/x', /^no API route PATCH \/api\/v1\/schedules\/x: /],
      ['GET', '/api/v1/schedules/no-such-schedule', /^no published or stored schedule named "no-such-schedule"$/],
      ['GET', '/api/v1/occurrences/x@2026-01-01T00:00:00.000Z', /^no record or history of x@2026-01-01T00:00:00\.000Z/],
    ];
    for (const [method, path, message] of cases) {
      const r = await call(method, path);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.type, `${method} ${path}`).toMatch(/^application\/json/);
      expect(r.body, `${method} ${path}`).toEqual({ error: { code: 'NOT_FOUND', message: expect.stringMatching(message) } });
    }
    // The pages keep their own (not the API's JSON).
    const page = await call('GET', '/no-such-page');
    expect(page.status).toBe(404);
    expect(page.type).not.toMatch(/json/);
  });

  it('documents the 404 in the OpenAPI document, with the error envelope', async () => {
    const doc = (await call('GET', '/api/v1/openapi.json')).body as { paths: Record<string, Record<string, { responses: Record<string, { description: string; content: unknown }> }>> };
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (path === '/whoami' || path === '/openapi.json') continue;
      for (const [method, op] of Object.entries(ops)) {
        const nf = op.responses['404'];
        expect(nf, `${method} ${path}`).toBeDefined();
        expect(nf!.description).toMatch(/NOT_FOUND.*no such route/);
        expect(nf!.content).toEqual({ 'application/json': { schema: { $ref: '#/components/schemas/Error' } } });
      }
    }
  });
});
