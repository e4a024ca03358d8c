/**
 * Bad input at the HTTP API's edges (a user's break-it run), on a real redis-server with a real replica process (it
 * publishes a file's schedule, so its occurrences can be asked for; from dist/: `npm run build` first) and the real
 * API server: each refusal names the field or header actually given, says what is wrong once and what is allowed,
 * and changes nothing.
 * - `If-Match: "0"` (no ETag of this API; the store reads version 0 as "create only") is a 400 naming If-Match, on
 *   PUT and DELETE, not a 412 naming If-None-Match, and never a create; a 412 names the header that was sent;
 * - `?limit=99999999999999999999` says the field's one limit (1–500), not also zod's safe-integer bound;
 * - `from`/`to` (occurrences query, backfill body) past the latest time a Date holds, or text only Date.parse's
 *   fallback reads (-5, 1.5), are refused naming the field and the accepted forms, not read as a time.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { connectFlock, type Flock as LibFlock } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { OPERATOR_TOKEN } from '../support/dashboard-flock.js';
import { Flock, until } from '../support/flock.js';

let flock: Flock;
let api: Dashboard;
let lib: LibFlock;
const keys = new Keyspace();
const op = { authorization: `Bearer ${OPERATOR_TOKEN}` };
const def = { cron: '0 3 * * *', job: { kind: 'http', url: 'http://127.0.0.1:1/x' } };

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(new URL(path, api.url), {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  flock = await Flock.start();
  const file = flock.writeSchedules(`schedules:\n  - {name: edge-file, cron: "0 0 1 1 *", job: {kind: http, url: "${flock.receiver.url}/x"}}\n`);
  await flock.startReplica({ name: 'r1', schedules: file });
  const tokens = join(flock.dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n`);
  api = await startDashboard({ redisUrl: flock.redis.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
  lib = await connectFlock({ redis: flock.redis.url, by: 'app' });
  await until(async () => (await flock.redisClient.hget(keys.definitions, 'edge-file')) !== null, 30_000, 'edge-file published');
}, 90_000);
afterAll(async () => {
  await lib?.close();
  await api?.close();
  await flock?.close();
});

describe('If-Match: "0"', () => {
  it('is refused naming If-Match (versions start at 1), on PUT of a new and of a stored schedule and on DELETE; nothing changes', async () => {
    const fresh = await call('PUT', '/api/v1/schedules/ie-new', def, { ...op, 'if-match': '"0"' });
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(400);
    expect(fresh.body.error.field).toBe('header.If-Match');
    expect(fresh.body.error.message).toMatch(/^header\.If-Match: "0" is not a version \(versions start at 1\); allowed: /);
    expect(await lib.schedules.get('ie-new')).toBeUndefined(); // not created as If-None-Match: * would

    const first = await call('PUT', '/api/v1/schedules/ie-one', def, op);
    expect(first.status).toBe(200);
    const again = await call('PUT', '/api/v1/schedules/ie-one', { ...def, cron: '0 4 * * *' }, { ...op, 'if-match': '"0"' });
    expect(again.status).toBe(400);
    expect(again.body.error.field).toBe('header.If-Match');
    const del = await call('DELETE', '/api/v1/schedules/ie-one', undefined, { ...op, 'if-match': '0' });
    expect(del.status).toBe(400);
    expect(del.body.error.field).toBe('header.If-Match');
    // A DELETE takes no If-None-Match: its hint does not offer one.
    expect(del.body.error.message).not.toContain('If-None-Match');
    expect((await lib.schedules.get('ie-one'))?.definition.cron).toBe('0 3 * * *');
  });

  it('a tag with a leading zero ("01") is no ETag of this API: it matches no version (412, strong comparison), nothing written', async () => {
    const first = await call('PUT', '/api/v1/schedules/ie-zero', def, op);
    expect(first.status).toBe(200);
    expect(first.body.version).toBeGreaterThan(0);
    const v = String(first.body.version);
    for (const method of ['PUT', 'DELETE'] as const) {
      const r = await call(method, '/api/v1/schedules/ie-zero', method === 'PUT' ? { ...def, cron: '0 5 * * *' } : undefined, { ...op, 'if-match': `"0${v}"` });
      expect(r.status, JSON.stringify(r.body)).toBe(412);
      expect(r.body.error).toMatchObject({ code: 'VERSION_CONFLICT', field: 'header.If-Match' });
      expect(r.body.error.message).toContain(`"0${v}" is not an ETag of this API`);
    }
    expect((await lib.schedules.get('ie-zero'))?.definition.cron).toBe('0 3 * * *');
    // The tag as given still matches.
    expect((await call('PUT', '/api/v1/schedules/ie-zero', { ...def, cron: '0 5 * * *' }, { ...op, 'if-match': `"${v}"` })).status).toBe(200);
  });

  it('a 412 names the header that was sent: If-Match: * on a schedule not stored, If-None-Match: * on a stored one', async () => {
    const absent = await call('PUT', '/api/v1/schedules/ie-absent', def, { ...op, 'if-match': '*' });
    expect(absent.status).toBe(412);
    expect(absent.body.error.field).toBe('header.If-Match');
    await call('PUT', '/api/v1/schedules/ie-two', def, op);
    const exists = await call('PUT', '/api/v1/schedules/ie-two', def, { ...op, 'if-none-match': '*' });
    expect(exists.status).toBe(412);
    expect(exists.body.error.field).toBe('header.If-None-Match');
    const gone = await call('DELETE', '/api/v1/schedules/ie-absent', undefined, { ...op, 'if-match': '"3"' });
    expect(gone.status).toBe(404);
  });
});

describe('GET /api/v1/schedules?limit= far out of range', () => {
  it('says the one limit of the field, once', async () => {
    for (const [limit, message] of [
      ['99999999999999999999', 'query.limit: must be at most 500; allowed: a whole number from 1 to 500'],
      ['-99999999999999999999', 'query.limit: must be at least 1; allowed: a whole number from 1 to 500'],
    ] as const) {
      const r = await call('GET', `/api/v1/schedules?limit=${limit}`);
      expect(r.status).toBe(400);
      expect(r.body.error).toEqual({ code: 'BAD_PARAMETER', message, field: 'query.limit' });
    }
    const occ = await call('GET', '/api/v1/schedules/edge-file/occurrences?limit=99999999999999999999');
    expect(occ.body.error.message).toBe('query.limit: must be at most 5000; allowed: a whole number from 1 to 5000');
  });
});

describe('from and to that are no time', () => {
  it('are refused on the occurrences query naming the field and the accepted forms, not read as a time', async () => {
    for (const [query, field] of [
      ['from=99999999999999999999', 'query.from'],
      ['to=99999999999999999999', 'query.to'],
      ['from=8640000000000001', 'query.from'],
    ] as const) {
      const r = await call('GET', `/api/v1/schedules/edge-file/occurrences?${query}`);
      expect(r.status, query).toBe(400);
      expect(r.body.error.field).toBe(field);
      expect(r.body.error.message).toBe(
        `${field}: is out of range: UTC milliseconds go up to 8640000000000000 (the year 275760); allowed: an ISO 8601 time (2026-01-01T00:00:00Z) or UTC milliseconds from 0 to 8640000000000000`,
      );
    }
    for (const v of ['-5', '1.5', 'soon']) {
      const r = await call('GET', `/api/v1/schedules/edge-file/occurrences?from=${v}`);
      expect(r.status, v).toBe(400);
      expect(r.body.error.message).toMatch(/^query\.from: is not a time; allowed: an ISO 8601 time/);
    }
    const ok = await call('GET', '/api/v1/schedules/edge-file/occurrences?from=2026-01-01T00:00:00Z&to=1798761600000');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ fromMs: Date.UTC(2026, 0, 1), toMs: 1798761600000 });
  });

  it('are refused in a backfill body naming body.from, and nothing is backfilled', async () => {
    const r = await call('POST', '/api/v1/schedules/edge-file/backfill', { from: '99999999999999999999', to: '2026-01-02T00:00:00Z', dryRun: true }, op);
    expect(r.status).toBe(400);
    expect(r.body.error.field).toBe('body.from');
    expect(r.body.error.message).toContain('UTC milliseconds go up to 8640000000000000');
  });
});
