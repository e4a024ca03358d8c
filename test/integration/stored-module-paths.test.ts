/**
 * What a stored schedule's module path means, and what the API says when replicas refuse a stored schedule, on a
 * real redis-server with the real CLI and a real replica process (from dist/: `npm run build` first):
 * - a relative module path is refused by every writer — `cronflock apply -f sub/ap5.yaml` (the file's folder has
 *   the module, every replica's working directory would not), `PUT /api/v1/schedules/{name}` (422, field
 *   job.path) and the library's `upsert` — saying to write the absolute path (as the writer's machine sees it
 *   for apply and the library; not for the API, whose caller is elsewhere); nothing is stored;
 * - a stored schedule that live replicas refuse (an absolute module path their machine lacks) is answered by
 *   `GET /api/v1/schedules/{name}` as refused, with each replica's reason, not as "not yet applied".
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { connectFlock, type Flock as LibFlock } from '../../runner/library/index.js';
import { OPERATOR_TOKEN } from '../support/dashboard-flock.js';
import { Flock, until } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';

let flock: Flock;
let api: Dashboard;
let lib: LibFlock;
const ECHO = join(ROOT, 'test/fixtures/modules/echo.mjs');

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(new URL(path, api.url), {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR_TOKEN}` },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  flock = await Flock.start();
  const tokens = join(flock.dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n`);
  api = await startDashboard({ redisUrl: flock.redis.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
  lib = await connectFlock({ redis: flock.redis.url, by: 'app' });
}, 60_000);
afterAll(async () => {
  await lib?.close();
  await api?.close();
  await flock?.close();
});

describe('a relative module path in a stored schedule', () => {
  it('is refused by cronflock apply -f (checked against the file folder before), saying to use the absolute path; nothing stored', async () => {
    const sub = join(flock.dir, 'sub');
    mkdirSync(sub);
    copyFileSync(ECHO, join(sub, 'relmod.mjs'));
    writeFileSync(join(sub, 'ap5.yaml'), 'schedules:\n  - {name: ap-rel, cron: "0 3 * * *", job: {kind: module, path: ./relmod.mjs}}\n');
    const r = spawnSync(process.execPath, [BIN, 'apply', '-f', 'sub/ap5.yaml', '--redis', flock.redis.url], { cwd: flock.dir, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
    expect(r.status, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain('job.path');
    expect(r.stderr).toContain('relative path');
    expect(r.stderr).toContain(join(sub, 'relmod.mjs')); // the absolute path, as this machine sees it
    expect(await lib.schedules.get('ap-rel')).toBeUndefined();
  });

  it('is refused by PUT (422, field job.path) and by the library upsert (job.path); an absolute one is stored', async () => {
    const put = await call('PUT', '/api/v1/schedules/ap-rel2', { cron: '0 3 * * *', job: { kind: 'module', path: './test/fixtures/modules/echo.mjs' } });
    expect(put.status).toBe(422);
    expect(put.body.error.problems.map((p: any) => p.field)).toEqual(['job.path']);
    expect(put.body.error.problems[0].hint).toContain('write the absolute path as the replicas see it');
    // the API server's working directory means nothing to its caller: not named (issue 19 break-it run)
    expect(put.body.error.problems[0].hint).not.toContain('here:');
    expect(put.body.error.message).not.toContain(process.cwd());
    const up = await lib.schedules.upsert({ name: 'ap-rel3', cron: '0 3 * * *', job: { kind: 'module', path: 'test/fixtures/modules/echo.mjs' } });
    expect(up.ok).toBe(false);
    if (!up.ok) expect((up.error as any).problems.map((p: any) => p.field)).toEqual(['job.path']);
    // the library's writer is local: it keeps the absolute path as it sees it
    if (!up.ok) expect((up.error as any).problems[0].hint).toContain(`(here: ${join(process.cwd(), 'test/fixtures/modules/echo.mjs')})`);
    expect(await lib.schedules.get('ap-rel2')).toBeUndefined();
    expect(await lib.schedules.get('ap-rel3')).toBeUndefined();
    expect((await call('PUT', '/api/v1/schedules/ap-abs', { cron: '0 3 * * *', job: { kind: 'module', path: ECHO } })).status).toBe(200);
  });
});

describe('a stored schedule that live replicas refuse', () => {
  it('is answered as refused with each replica\'s reason, not "not yet applied"', async () => {
    // Stored where the writer has the module; the replica's machine does not (it is gone before it starts).
    const gone = join(flock.dir, 'only-here.mjs');
    copyFileSync(ECHO, gone);
    const up = await lib.schedules.upsert({ name: 'ap-gone', cron: '0 3 * * *', job: { kind: 'module', path: gone } });
    expect(up.ok).toBe(true);
    rmSync(gone);
    const before = await call('GET', '/api/v1/schedules/ap-gone');
    expect(before.body.status).toContain('not yet applied'); // no replica yet: true
    const r1 = await flock.startReplica({ name: 'r1', schedules: '' });
    await r1.waitForLog((l) => String(l.msg).startsWith('stored schedule cannot run on this replica'), 30_000, 'the refusal logged');
    let g: { status: number; body: any } = { status: 0, body: undefined };
    await until(async () => (g = await call('GET', '/api/v1/schedules/ap-gone')).body.stored.refusals.length > 0, 30_000, 'the refusal recorded');
    expect(g.body.published).toBe(false);
    expect(g.body.status).not.toContain('not yet applied');
    expect(g.body.status).toContain('refused by 1 live replica');
    expect(g.body.status).toContain('r1');
    expect(g.body.stored.refusals).toEqual([expect.objectContaining({ replica: 'r1', version: up.ok ? up.version : -1, reason: expect.stringContaining('job.path') })]);
    // the schedule it can run is not refused
    await until(async () => (await call('GET', '/api/v1/schedules/ap-abs')).body.published === true, 30_000, 'ap-abs published');
    expect((await call('GET', '/api/v1/schedules/ap-abs')).body.stored.refusals).toEqual([]);
  }, 90_000);
});
