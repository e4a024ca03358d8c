/**
 * Stored schedules through the HTTP API and the command line (issue 19, points 3 and 5), on a real redis-server
 * with a real replica process (it runs a schedule file, so its names are owned by that file) and the real CLI
 * (`bin/cronflock.js`, from dist/: `npm run build` first):
 * - PUT/DELETE /api/v1/schedules/{name}: 401 without a token, 403 for a viewer, 422 with every problem, 412 on a
 *   stale If-Match, 409 naming the file that owns the name, 404 in the error envelope; each change audited (via
 *   api, who, version);
 * - tenant and labels: the API's list and the library's list filter by them; a tenant at its limit is refused
 *   (409 naming its limit and count);
 * - `cronflock apply -f`: a file with one bad schedule, or one name owned by the file of a replica, stores
 *   nothing; a good one stores all (audited via cli); `cronflock delete`, refused whole for a name not stored;
 *   `cronflock list --tenant`, `cronflock tenants set-limit`.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { readAudit } from '../../runner/history/audit.js';
import { connectFlock, type Flock as LibFlock } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { Flock, until } from '../support/flock.js';
import { OPERATOR_TOKEN, VIEWER_TOKEN } from '../support/dashboard-flock.js';
import { BIN, ROOT } from '../support/replica.js';

let flock: Flock;
let api: Dashboard;
let lib: LibFlock;
let quietApi: Dashboard;
let quiet: LibFlock;
const keys = new Keyspace();

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, on: Dashboard = api): Promise<{ status: number; body: any; etag: string | null }> {
  const r = await fetch(new URL(path, on.url), {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined, etag: r.headers.get('etag') };
}
const op = bearer(OPERATOR_TOKEN);
const def = (extra: Record<string, unknown> = {}) => ({ cron: '0 3 * * *', job: { kind: 'http', url: 'http://127.0.0.1:1/x' }, ...extra });

/** Runs the CLI against the flock's Redis; returns its exit code and output. */
function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args, '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  flock = await Flock.start();
  const file = flock.writeSchedules(
    `schedules:\n  - {name: file-owned, cron: "0 0 1 1 *", job: {kind: http, url: "${flock.receiver.url}/x"}}\n` +
      `  - {name: file-suspended, suspend: true, cron: "0 0 1 1 *", job: {kind: http, url: "${flock.receiver.url}/x"}}\n`,
  );
  await flock.startReplica({ name: 'r1', schedules: file });
  const tokens = join(flock.dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n  - {name: bob, role: viewer, token: ${VIEWER_TOKEN}}\n`);
  api = await startDashboard({ redisUrl: flock.redis.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
  // a flock without replicas: what is stored there is never picked up
  quietApi = await startDashboard({ redisUrl: flock.redis.url, namespace: 'quiet', listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
  quiet = await connectFlock({ redis: flock.redis.url, namespace: 'quiet', by: 'app' });
  lib = await connectFlock({ redis: flock.redis.url, by: 'app' });
  // the replica published its file's schedule: the name is owned
  await until(async () => (await flock.redisClient.hget(keys.definitions, 'file-owned')) !== null, 30_000, 'file-owned published');
}, 90_000);
afterAll(async () => {
  await quiet?.close();
  await quietApi?.close();
  await lib?.close();
  await api?.close();
  await flock?.close();
});

describe('PUT and DELETE /api/v1/schedules/{name}', () => {
  it('needs the operator token: 401 without one, 403 for a viewer, and nothing is stored', async () => {
    expect((await call('PUT', '/api/v1/schedules/p1', def())).status).toBe(401);
    const viewer = await call('PUT', '/api/v1/schedules/p1', def(), bearer(VIEWER_TOKEN));
    expect(viewer.status).toBe(403);
    expect(viewer.body.error.code).toBe('FORBIDDEN');
    expect((await call('DELETE', '/api/v1/schedules/p1', undefined, bearer(VIEWER_TOKEN))).status).toBe(403);
    expect(await lib.schedules.get('p1')).toBeUndefined();
  });

  it('stores with a version (ETag), compare-and-set on If-Match (412 with the current version), audited via api', async () => {
    const a = await call('PUT', '/api/v1/schedules/p1', { ...def(), reason: 'onboarding' }, op);
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ name: 'p1', changed: true });
    expect(a.etag).toBe(`"${a.body.version}"`);
    const stale = await call('PUT', '/api/v1/schedules/p1', def({ cron: '0 4 * * *' }), { ...op, 'if-match': `"${a.body.version + 100}"` });
    expect(stale.status).toBe(412);
    expect(stale.body.error).toMatchObject({ code: 'VERSION_CONFLICT', version: a.body.version });
    expect((await lib.schedules.get('p1'))!.definition.cron).toBe('0 3 * * *');
    const b = await call('PUT', '/api/v1/schedules/p1', def({ cron: '0 4 * * *' }), { ...op, 'if-match': a.etag! });
    expect(b.status).toBe(200);
    expect(b.body.version).toBeGreaterThan(a.body.version);
    expect((await call('PUT', '/api/v1/schedules/p1', def(), { ...op, 'if-none-match': '*' })).status).toBe(412);
    const audit = (await readAudit(flock.redisClient, keys, { limit: 50, schedule: 'p1' })).items;
    expect(audit.map((e) => [e.action, e.via, e.who, e.version])).toEqual([
      ['upsert', 'api', 'alice', b.body.version],
      ['upsert', 'api', 'alice', a.body.version],
    ]);
    expect(audit[1]!.reason).toBe('onboarding');
  });

  it('refuses a bad definition whole with 422 and every problem {field, reason, hint}; unknown fields too', async () => {
    const r = await call('PUT', '/api/v1/schedules/p2', { cron: '61 * * * *', jitter: 'soon', job: { kind: 'http' }, retriez: 3 }, op);
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('SCHEDULE_INVALID');
    const fields = r.body.error.problems.map((p: any) => p.field);
    expect(fields).toEqual(expect.arrayContaining(['cron', 'jitter', 'retriez']));
    for (const p of r.body.error.problems) expect(typeof p.reason).toBe('string');
    expect(r.body.error.problems.some((p: any) => typeof p.hint === 'string')).toBe(true);
    expect((await call('PUT', '/api/v1/schedules/p2', { ...def(), name: 'other' }, op)).status).toBe(422);
    expect((await call('PUT', '/api/v1/schedules/p2', '[1]', op)).status).toBe(422);
    expect((await call('PUT', '/api/v1/schedules/p2', 'not json', op)).status).toBe(400);
    expect(await lib.schedules.get('p2')).toBeUndefined();
  });

  it('refuses a body with a key given twice (400 DUPLICATE_KEY naming the key, its JSON path and line:col) before storing anything; the other JSON bodies too', async () => {
    const body = '{"cron":"61 * * * *","cron":"* * * * *","job":{"kind":"http","url":"http://127.0.0.1:1/x"}}';
    const r = await call('PUT', '/api/v1/schedules/dup-key', body, op);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'DUPLICATE_KEY', field: 'body.cron' });
    expect(r.body.error.message).toContain('key "cron" appears twice');
    expect(r.body.error.message).toContain('at line 1:22 of the body, first at line 1:2');
    expect(r.body.error.message).toContain('send each key once');
    expect(r.body.error.problems).toEqual([expect.objectContaining({ field: 'body.cron', hint: expect.stringContaining('the later one would silently win') })]);
    expect(await lib.schedules.get('dup-key')).toBeUndefined();
    // deep inside params, on its own line; an escaped spelling of the same key is the same key (as JSON.parse has it)
    const deep = await call('PUT', '/api/v1/schedules/dup-key', '{"cron":"0 3 * * *",\n "job":{"kind":"handler","handler":"h",\n  "params":{"list":[{"a":1,\n   "\\u0061":2}]}}}', op);
    expect(deep.status).toBe(400);
    expect(deep.body.error.field).toBe('body.job.params.list[0].a');
    expect(deep.body.error.message).toContain('at line 4:4 of the body, first at line 3:22');
    expect(await lib.schedules.get('dup-key')).toBeUndefined();
    // a change is refused too: the stored version stays
    expect((await call('PUT', '/api/v1/schedules/dup-key', def(), op)).status).toBe(200);
    const before = await lib.schedules.get('dup-key');
    expect((await call('PUT', '/api/v1/schedules/dup-key', '{"cron":"0 4 * * *","cron":"0 5 * * *","job":{"kind":"http","url":"http://127.0.0.1:1/x"}}', op)).status).toBe(400);
    expect((await lib.schedules.get('dup-key'))?.version).toBe(before?.version);
    // DELETE and the actions read their bodies through the same function
    const del = await call('DELETE', '/api/v1/schedules/dup-key', '{"reason":"a","reason":"b"}', op);
    expect(del.status).toBe(400);
    expect(del.body.error.code).toBe('DUPLICATE_KEY');
    expect(await lib.schedules.get('dup-key')).toBeDefined();
    const sus = await call('POST', '/api/v1/schedules/dup-key/suspend', '{"reason":"a","reason":"b"}', op);
    expect(sus.status).toBe(400);
    expect(sus.body.error).toMatchObject({ code: 'DUPLICATE_KEY', field: 'body.reason' });
    await call('DELETE', '/api/v1/schedules/dup-key', undefined, op);
  });

  it('refuses an integer past ±(2^53−1) (400 UNSAFE_INTEGER at its JSON path and line:col, the value not shown) before storing anything; a quoted one is stored as sent', async () => {
    const body = '{"cron":"0 3 * * *",\n "job":{"kind":"handler","handler":"h",\n  "params":{"ok":9007199254740991,"big":[1, -12345678901234567890],"f":1e20,"g":12345678901234567890.0,"h":1.2345678901234567890e19}}}';
    const r = await call('PUT', '/api/v1/schedules/big-int', body, op);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'UNSAFE_INTEGER', field: 'body.job.params.big[1]' });
    expect(r.body.error.message).toContain('at line 3:45 of the body');
    expect(r.body.error.message).not.toContain('12345678901234567');
    expect(r.body.error.problems).toEqual([
      expect.objectContaining({ field: 'body.job.params.big[1]', hint: expect.stringContaining('as a JSON string') }),
      // with a fraction or an exponent, the same number is changed the same way (found by a user)
      expect.objectContaining({ field: 'body.job.params.g' }),
      expect.objectContaining({ field: 'body.job.params.h' }),
    ]);
    expect(await lib.schedules.get('big-int')).toBeUndefined();
    const quoted = await call('PUT', '/api/v1/schedules/big-int', body.replace('-12345678901234567890', '"-12345678901234567890"').replace(',"g":12345678901234567890.0,"h":1.2345678901234567890e19', ',"g":6.02e23'), op);
    expect(quoted.status).toBe(200);
    expect((await lib.schedules.get('big-int'))?.definition.job).toMatchObject({ params: { ok: 9007199254740991, big: [1, '-12345678901234567890'], f: 1e20, g: 6.02e23 } });
    await call('DELETE', '/api/v1/schedules/big-int', undefined, op);
  });

  it('refuses with 409 a name a schedule file of a live replica owns, naming that file', async () => {
    const r = await call('PUT', '/api/v1/schedules/file-owned', def(), op);
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('NAME_OWNED');
    expect(r.body.error.message).toContain('schedules.yaml');
    expect(r.body.error.source).toContain('schedules.yaml');
    expect(await lib.schedules.get('file-owned')).toBeUndefined();
  });

  it('deletes (audited via api); 404 in the error envelope when not stored; unknown body fields refused', async () => {
    await call('PUT', '/api/v1/schedules/p3', def(), op);
    expect((await call('DELETE', '/api/v1/schedules/p3', { reasn: 'x' }, op)).status).toBe(400);
    const d = await call('DELETE', '/api/v1/schedules/p3', { reason: 'customer left' }, op);
    expect(d.status).toBe(200);
    expect(await lib.schedules.get('p3')).toBeUndefined();
    const again = await call('DELETE', '/api/v1/schedules/p3', undefined, op);
    expect(again.status).toBe(404);
    expect(again.body.error).toMatchObject({ code: 'NOT_FOUND' });
    const owned = await call('DELETE', '/api/v1/schedules/file-owned', undefined, op);
    expect(owned.status).toBe(404);
    expect(owned.body.error.message).toContain('schedules.yaml');
    const [e] = (await readAudit(flock.redisClient, keys, { limit: 200, schedule: 'p3' })).items;
    expect(e).toMatchObject({ action: 'delete', via: 'api', who: 'alice', version: d.body.version, reason: 'customer left' });
  });
});

describe('tenants and labels', () => {
  it('the library and the API list by tenant and label; the library audits via library', async () => {
    const up = await lib.schedules.upsert({ name: 't-acme-1', ...def({ tenant: 'acme', labels: { plan: 'gold' } }) } as never);
    expect(up.ok).toBe(true);
    await lib.schedules.upsert({ name: 't-acme-2', ...def({ tenant: 'acme', labels: { plan: 'free' } }) } as never);
    await lib.schedules.upsert({ name: 't-bolt-1', ...def({ tenant: 'bolt', labels: { plan: 'gold' } }) } as never);
    expect((await lib.schedules.list({ tenant: 'acme' })).items.map((s) => s.name)).toEqual(['t-acme-1', 't-acme-2']);
    expect((await lib.schedules.list({ labels: { plan: 'gold' } })).items.map((s) => s.name)).toEqual(['t-acme-1', 't-bolt-1']);
    const [e] = (await readAudit(flock.redisClient, keys, { limit: 200, schedule: 't-acme-1' })).items;
    expect(e).toMatchObject({ action: 'upsert', via: 'library', who: 'app', version: up.ok && up.version });
    // the API lists what the replicas run: the replica picks the stored schedules up from the change stream
    const names = async (q: string) => (await call('GET', `/api/v1/schedules?${q}`)).body.items.map((s: any) => s.name);
    // all three: the replica may apply them in more than one batch of the change stream
    await until(async () => (await names('tenant=acme')).length === 2 && (await names('tenant=bolt')).length === 1, 30_000, 'replica runs the stored schedules');
    expect(await names('tenant=acme')).toEqual(['t-acme-1', 't-acme-2']);
    expect(await names('tenant=acme&label=plan=gold')).toEqual(['t-acme-1']);
    expect(await names('label=plan=gold')).toEqual(['t-acme-1', 't-bolt-1']);
    const one = (await call('GET', '/api/v1/schedules?tenant=bolt')).body.items[0];
    expect(one).toMatchObject({ tenant: 'bolt', labels: { plan: 'gold' } });
    expect((await call('GET', '/api/v1/schedules?label=plan')).status).toBe(400);
  });

  it('refuses an upsert past the tenant limit set by cronflock tenants set-limit, naming the tenant, its limit and count (API: 409)', async () => {
    const set = cli('tenants', 'set-limit', 'lim', '2');
    expect(set.stderr).toBe('');
    expect(set.status).toBe(0);
    expect((await call('PUT', '/api/v1/schedules/lim-1', def({ tenant: 'lim' }), op)).status).toBe(200);
    expect((await call('PUT', '/api/v1/schedules/lim-2', def({ tenant: 'lim' }), op)).status).toBe(200);
    const r = await call('PUT', '/api/v1/schedules/lim-3', def({ tenant: 'lim' }), op);
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ code: 'TENANT_LIMIT', tenant: 'lim', limit: 2, count: 2 });
    expect(r.body.error.message).toContain('cronflock tenants set-limit lim');
    const lr = await lib.schedules.upsert({ name: 'lim-3', ...def({ tenant: 'lim' }) } as never);
    expect(!lr.ok && lr.error.code).toBe('TENANT_LIMIT');
    const list = cli('tenants', 'list', '--json');
    expect(JSON.parse(list.stdout).tenants).toEqual(expect.arrayContaining([{ tenant: 'lim', count: 2, limit: 2, defaultLimit: false }]));
  });
});

describe('cronflock apply -f and delete', () => {
  it('refuses an integer past ±(2^53−1) with file:line:col (nothing stored), and stores << merge keys merged as the loader reads them, not as a key "<<"', async () => {
    const big = flock.writeSchedules(`schedules:\n  - {name: c-big, cron: "0 1 * * *", job: {kind: handler, handler: h, params: {big: 12345678901234567890}}}\n`, 'big.yaml');
    const r = cli('apply', '-f', big);
    expect(r.status, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain(`${big}:2:85: schedules[0].job.params.big: this number is outside ±9007199254740991 (2^53−1) and has more digits than a JavaScript number keeps`);
    expect(r.stderr).toContain('quote it ("…" around the digits)');
    expect(await lib.schedules.get('c-big')).toBeUndefined();
    const merged = flock.writeSchedules(
      `schedules:\n  - name: c-m1\n    cron: "0 1 * * *"\n    job: &hook {kind: http, url: "http://127.0.0.1:1/a", method: POST}\n  - name: c-m2\n    cron: "0 2 * * *"\n    job: {<<: *hook, method: PUT}\n`,
      'merged.yaml',
    );
    const m = cli('apply', '-f', merged);
    expect(m.status, m.stdout + m.stderr).toBe(0);
    expect((await lib.schedules.get('c-m2'))!.definition.job).toEqual({ kind: 'http', url: 'http://127.0.0.1:1/a', method: 'PUT' });
    expect(cli('delete', 'c-m1', 'c-m2').status).toBe(0);
  });

  it('stores nothing from a file with one bad schedule, nor from one that names a schedule another file owns', () => {
    const bad = flock.writeSchedules(
      `schedules:\n  - {name: c-ok-1, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/a"}}\n  - {name: c-bad, cron: "0 1 * * *", group: nope, job: {kind: http, url: "http://127.0.0.1:1/b"}}\n`,
      'bad.yaml',
    );
    const r = cli('apply', '-f', bad);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/bad\.yaml:\d+:\d+.*schedules\[1\]\.group/);
    expect(r.stderr).toContain('nothing was stored');
    // valid as a file, but not as stored schedules: a group belongs to its file
    const grouped = flock.writeSchedules(
      `groups:\n  g: {maxConcurrent: 1}\nschedules:\n  - {name: c-ok-1, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/a"}}\n  - {name: c-grouped, cron: "0 1 * * *", group: g, job: {kind: http, url: "http://127.0.0.1:1/b"}}\n`,
      'grouped.yaml',
    );
    const g = cli('apply', '-f', grouped);
    expect(g.status).toBe(2);
    expect(g.stderr).toMatch(/grouped\.yaml:5:49: schedules\[1\]\.group: a stored schedule cannot use group:/);
    const owned = flock.writeSchedules(
      `schedules:\n  - {name: c-ok-1, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/a"}}\n  - {name: file-owned, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/b"}}\n`,
      'owned.yaml',
    );
    const o = cli('apply', '-f', owned);
    expect(o.status).toBe(2);
    expect(o.stderr).toMatch(/file-owned" is defined by .*schedules\.yaml/);
    const over = flock.writeSchedules(
      `schedules:\n  - {name: c-ok-1, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/a"}}\n  - {name: lim-9, tenant: lim, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/b"}}\n`,
      'over.yaml',
    );
    const ov = cli('apply', '-f', over);
    expect(ov.status).toBe(2);
    expect(ov.stderr).toContain('tenant "lim"');
    expect(cli('list', '--prefix', 'c-', '--json').stdout.trim()).toBe('[]');
  });

  it('stores every schedule of a good file (audited via cli with the version), lists by tenant, and deletes (refused whole for a name not stored)', async () => {
    const good = flock.writeSchedules(
      `schedules:\n  - {name: c-ok-1, tenant: zeta, labels: {plan: gold}, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/a"}}\n  - {name: c-ok-2, cron: "0 2 * * *", job: {kind: http, url: "http://127.0.0.1:1/b"}}\n`,
      'good.yaml',
    );
    const r = cli('apply', '-f', good, '--json', '--reason', 'release 42');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.map((x: any) => [x.name, x.stored])).toEqual([
      ['c-ok-1', true],
      ['c-ok-2', true],
    ]);
    const [e] = (await readAudit(flock.redisClient, keys, { limit: 200, schedule: 'c-ok-1' })).items;
    expect(e).toMatchObject({ action: 'upsert', via: 'cli', version: out[0].version, reason: 'release 42' });
    expect(e!.who).toMatch(/@/);
    expect(JSON.parse(cli('list', '--tenant', 'zeta', '--json').stdout).map((s: any) => s.name)).toEqual(['c-ok-1']);
    expect(JSON.parse(cli('list', '--label', 'plan=gold', '--prefix', 'c-', '--json').stdout).map((s: any) => s.name)).toEqual(['c-ok-1']);
    const refused = cli('delete', 'c-ok-1', 'c-nope');
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('c-nope');
    expect(await lib.schedules.get('c-ok-1')).toBeDefined();
    const d = cli('delete', 'c-ok-1', 'c-ok-2');
    expect(d.status).toBe(0);
    expect(await lib.schedules.get('c-ok-1')).toBeUndefined();
    expect(await lib.schedules.get('c-ok-2')).toBeUndefined();
    const [de] = (await readAudit(flock.redisClient, keys, { limit: 200, schedule: 'c-ok-2' })).items;
    expect(de).toMatchObject({ action: 'delete', via: 'cli' });
    expect((await lib.tenants.list()).tenants.find((t) => t.tenant === 'zeta')).toBeUndefined();
  });
});

describe('limits, content types and conditional requests (found by a user)', () => {
  it('refuses a definition over 64 KiB with 413 naming the limit, and a body over 256 KiB with 413; nothing stored', async () => {
    const big = def({ job: { kind: 'handler', handler: 'h', params: { blob: 'x'.repeat(70_000) } } });
    const r = await call('PUT', '/api/v1/schedules/too-big', big, op);
    expect(r.status).toBe(413);
    expect(r.body.error).toMatchObject({ code: 'DEFINITION_TOO_LARGE', limitBytes: 65_536 });
    expect(r.body.error.message).toContain('65,536 bytes (64 KiB)');
    const huge = await call('PUT', '/api/v1/schedules/too-big', def({ job: { kind: 'handler', handler: 'h', params: { blob: 'x'.repeat(300_000) } } }), op);
    expect(huge.status).toBe(413);
    expect(huge.body.error).toMatchObject({ code: 'BODY_TOO_LARGE', limitBytes: 262_144, definitionLimitBytes: 65_536 });
    expect(await lib.schedules.get('too-big')).toBeUndefined();
    // the library: the same cap, as a value naming it
    const l = await lib.schedules.upsert({ name: 'too-big', ...big } as never);
    expect(!l.ok && l.error.message).toContain('65,536 bytes (64 KiB)');
  });

  it('refuses a body sent as text/plain, form data or without a Content-Type with 415 naming application/json', async () => {
    for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', undefined]) {
      const r = await fetch(new URL('/api/v1/schedules/typed', api.url), { method: 'PUT', headers: { ...op, ...(type ? { 'content-type': type } : {}) }, body: type === undefined ? new Blob([JSON.stringify(def())]) : JSON.stringify(def()) });
      const body = (await r.json()) as any;
      expect(r.status, String(type)).toBe(415);
      expect(body.error).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', field: 'header.Content-Type', expected: 'application/json' });
      expect(body.error.message).toContain('allowed: application/json');
    }
    const post = await fetch(new URL('/api/v1/schedules/file-owned/trigger', api.url), { method: 'POST', headers: { ...op, 'content-type': 'text/plain' }, body: '{"reason":"x"}' });
    expect(post.status).toBe(415);
    expect(await lib.schedules.get('typed')).toBeUndefined();
    // application/json with a charset, and +json types, are JSON
    expect((await call('PUT', '/api/v1/schedules/typed', def(), { ...op, 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
    expect((await call('PUT', '/api/v1/schedules/typed', def(), { ...op, 'content-type': 'application/merge-patch+json' })).status).toBe(200);
  });

  it('If-Match: * changes only an existing schedule (412 when absent); If-None-Match: * only creates; a weak tag never matches; a list or a DELETE If-None-Match is refused', async () => {
    const absent = await call('PUT', '/api/v1/schedules/cond', def(), { ...op, 'if-match': '*' });
    expect(absent.status).toBe(412);
    expect(absent.body.error.message).toMatch(/does not exist; If-Match \(\*\) changes only an existing schedule/);
    expect(await lib.schedules.get('cond')).toBeUndefined();
    const created = await call('PUT', '/api/v1/schedules/cond', def(), { ...op, 'if-none-match': '*' });
    expect(created.status).toBe(200);
    const exists = await call('PUT', '/api/v1/schedules/cond', def(), { ...op, 'if-none-match': '*' });
    expect(exists.status).toBe(412);
    expect(exists.body.error).toMatchObject({ field: 'header.If-None-Match', version: created.body.version });
    expect(exists.body.error.message).toContain(`to change it, send If-Match: "${created.body.version}"`);
    expect(exists.body.error.message).not.toContain('ifVersion');
    const star = await call('PUT', '/api/v1/schedules/cond', def({ cron: '0 5 * * *' }), { ...op, 'if-match': '*' });
    expect(star.status).toBe(200);
    expect(star.body.changed).toBe(true);
    const weak = await call('PUT', '/api/v1/schedules/cond', def(), { ...op, 'if-match': `W/"${star.body.version}"` });
    expect(weak.status).toBe(412);
    expect(weak.body.error.message).toContain('weak entity tag');
    const list = await call('PUT', '/api/v1/schedules/cond', def(), { ...op, 'if-match': `"1", "${star.body.version}"` });
    expect(list.status).toBe(400);
    expect(list.body.error.message).toContain('a list of entity tags is not taken');
    expect((await call('PUT', '/api/v1/schedules/cond', def(), { ...op, 'if-none-match': `"${star.body.version}"` })).status).toBe(400);
    const delNone = await call('DELETE', '/api/v1/schedules/cond', undefined, { ...op, 'if-none-match': '*' });
    expect(delNone.status).toBe(400);
    expect(delNone.body.error.field).toBe('header.If-None-Match');
    expect((await lib.schedules.get('cond'))!.definition.cron).toBe('0 5 * * *');
    expect((await call('DELETE', '/api/v1/schedules/cond', undefined, { ...op, 'if-match': '*' })).status).toBe(200);
  });

  it('GET /schedules/{name} answers a stored schedule no replica has picked up yet: its definition, version (ETag) and a status saying so', async () => {
    const up = await quiet.schedules.upsert({ name: 'waiting', ...def({ tenant: 'acme' }) } as never);
    expect(up.ok).toBe(true);
    const g = await call('GET', '/api/v1/schedules/waiting', undefined, {}, quietApi);
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ name: 'waiting', source: 'store', published: false, tenant: 'acme', stored: { version: up.ok && up.version, definition: { cron: '0 3 * * *' }, by: 'app' } });
    expect(g.body.status).toMatch(/^stored, not yet applied/);
    expect(g.etag).toBe(`"${up.ok && up.version}"`);
    expect((await call('GET', '/api/v1/schedules/nothing-here', undefined, {}, quietApi)).status).toBe(404);
    // once a replica runs it, the same route answers what runs, with the stored version next to it
    await lib.schedules.upsert({ name: 'picked', ...def() } as never);
    await until(async () => (await call('GET', '/api/v1/schedules/picked')).body.published === true, 30_000, 'picked up');
    const p = await call('GET', '/api/v1/schedules/picked');
    expect(p.body).toMatchObject({ name: 'picked', published: true, stored: { version: expect.any(Number) } });
  });

  it('DELETE and cronflock delete of a name a schedule file owns name that file and how to remove it there', async () => {
    const d = await call('DELETE', '/api/v1/schedules/file-owned', undefined, op);
    expect(d.status).toBe(404);
    expect(d.body.error.message).toMatch(/is not stored: it is defined by .*schedules\.yaml:2, which owns the name; remove it from .*schedules\.yaml \(line 2\)/);
    expect(d.body.error.source).toMatch(/schedules\.yaml:2$/);
    const c = cli('delete', 'file-owned');
    expect(c.status).toBe(2);
    expect(c.stderr).toMatch(/it is defined by .*schedules\.yaml:2, which owns the name; remove it from/);
    const l = await lib.schedules.remove('file-owned');
    expect(!l.ok && l.error.message).toContain('remove it from');
  });

  it('cronflock apply refuses a schedule over 64 KiB before storing anything; cronflock tenants set-limit reports the store\'s one check', () => {
    const big = flock.writeSchedules(
      `schedules:\n  - {name: a-ok, cron: "0 1 * * *", job: {kind: http, url: "http://127.0.0.1:1/a"}}\n  - {name: a-big, cron: "0 1 * * *", job: {kind: handler, handler: h, params: {blob: "${'x'.repeat(70_000)}"}}}\n`,
      'big.yaml',
    );
    const r = cli('apply', '-f', big);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/big\.yaml:3:5: schedules\[1\]: .*65,536 bytes \(64 KiB\)/);
    expect(r.stderr).toContain('nothing was stored');
    expect(cli('list', '--prefix', 'a-', '--json').stdout.trim()).toBe('[]');
    const t = cli('tenants', 'set-limit', 'Bad_Tenant', '2');
    expect(t.status).toBe(2);
    expect(t.stderr).toContain('tenant "Bad_Tenant": must be a DNS-1123 label');
    const n = cli('tenants', 'set-limit', 'acme', '2.5');
    expect(n.status).toBe(2);
    expect(n.stderr).toContain('limit "2.5": must be a whole number from 0 to 100,000,000');
  });
});

describe('suspend: true in a stored definition, and resume (one rule)', () => {
  it('resume clears a stored definition\'s suspend: true (a new version, audited); every status says what suspends it', async () => {
    const up = await lib.schedules.upsert({ name: 'sus-1', ...def({ suspend: true }) } as never);
    expect(up.ok).toBe(true);
    await until(async () => (await call('GET', '/api/v1/schedules/sus-1')).body?.published === true, 30_000, 'sus-1 picked up');
    const g = await call('GET', '/api/v1/schedules/sus-1');
    expect(g.body).toMatchObject({ suspended: true, suspension: { by: 'its stored definition', note: 'suspend: true (resume clears it)' } });
    const st = JSON.parse(cli('status', '--schedule', 'sus-1', '--json').stdout);
    expect(st.schedules.shown[0].suspended).toMatchObject({ by: 'its stored definition' });
    const r = await lib.schedules.resume('sus-1', { reason: 'customer paid' });
    expect(r.done).toBe(true);
    expect(r.message).toContain('its stored definition no longer says suspend: true');
    const after = await lib.schedules.get('sus-1');
    expect(after!.definition.suspend).toBeUndefined();
    expect(after!.version).toBeGreaterThan(up.ok ? up.version : 0);
    const audit = (await readAudit(flock.redisClient, keys, { limit: 20, schedule: 'sus-1' })).items;
    expect(audit.slice(0, 2).map((e) => [e.action, e.via])).toEqual([
      ['resume', 'library'],
      ['upsert', 'library'],
    ]);
    expect(audit[1]).toMatchObject({ version: after!.version, reason: 'customer paid' });
    await until(async () => (await call('GET', '/api/v1/schedules/sus-1')).body.suspended === false, 30_000, 'resumed on the replica');
    expect((await lib.schedules.resume('sus-1')).done).toBe(false);
  });

  it('resume of a schedule its file suspends refuses, naming the file and what to change there', async () => {
    await expect(lib.schedules.resume('file-suspended')).rejects.toThrow(/suspended by its own definition \(suspend: true in .*schedules\.yaml:3\).*set suspend: false/);
    const g = await call('GET', '/api/v1/schedules/file-suspended');
    expect(g.body.suspension).toMatchObject({ by: expect.stringMatching(/^its definition in .*schedules\.yaml:3$/) });
  });
});

