/**
 * The HTTP API against a real flock (Redis, two replica processes, the receiver), served by the dashboard code
 * in this process: paging and filters of the schedules list, the overdue filter (one schedule failing, one
 * succeeding), auth (actions off → 403, no or bad token → 401, viewer → 403, cross-origin → 403, and nothing
 * changes; operator → done once, in the audit log with its reason), a run killed mid-way shown with both claims
 * and its log lines, and no secret in any answer.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { HistoryKeys } from '../../runner/history/keys.js';
import type { Flock } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';
import { until } from '../support/flock.js';
import { FILLERS, OPERATOR_TOKEN, SECRETS, startDashboardFlock, VIEWER_TOKEN } from '../support/dashboard-flock.js';

let flock: Flock;
let open: Dashboard; // read-only: no token file
let guarded: Dashboard; // operator and viewer tokens
const keys = new Keyspace();
const bodies: string[] = []; // every answer, for the secrets check

async function get(d: Dashboard, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any; text: string }> {
  const r = await fetch(new URL(path, d.url), { headers });
  const text = await r.text();
  bodies.push(text, JSON.stringify([...r.headers]));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: r.status, body, text };
}
async function post(d: Dashboard, path: string, json: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(new URL(path, d.url), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(json) });
  const text = await r.text();
  bodies.push(text);
  return { status: r.status, body: JSON.parse(text) };
}
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

beforeAll(async () => {
  flock = await startDashboardFlock();
  const tokens = join(flock.dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n  - {name: bob, role: viewer, token: ${VIEWER_TOKEN}}\n`);
  const base = { redisUrl: flock.redis.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test' };
  open = await startDashboard(base);
  guarded = await startDashboard({ ...base, rules: loadTokenFile(tokens) });
});
afterAll(async () => {
  await open?.close();
  await guarded?.close();
  await flock?.close();
});

describe('dashboard API', () => {
  it('pages through every schedule with limit and cursor, in order, without repeats', async () => {
    const names: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await get(open, `/api/v1/schedules?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(4);
      names.push(...r.body.items.map((s: { name: string }) => s.name));
      cursor = r.body.next;
      pages++;
    } while (cursor);
    const all = ['fail-job', ...Array.from({ length: FILLERS }, (_, i) => `filler-${String(i).padStart(2, '0')}`), 'ok-job', 'talk-job'];
    expect(names).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 4));
    const first = await get(open, '/api/v1/schedules?limit=2&prefix=filler-');
    expect(first.body.total).toBe(FILLERS);
    expect(first.body.items.map((s: { name: string }) => s.name)).toEqual(['filler-00', 'filler-01']);
    const s = first.body.items[0];
    expect(s).toMatchObject({ cron: '0 0 1 1 *', cronText: expect.stringMatching(/January/), timeZone: 'UTC', source: expect.stringMatching(/schedules\.yaml:\d+$/), jobKind: 'http' });
    const badLimit = await get(open, '/api/v1/schedules?limit=0');
    expect(badLimit.status).toBe(400);
    expect(badLimit.body).toEqual({
      error: { code: 'BAD_PARAMETER', field: 'query.limit', message: 'query.limit: must be at least 1; allowed: a whole number from 1 to 500' },
    });
    expect((await get(open, '/api/v1/schedules?cursor=nonsense')).status).toBe(400);
  });

  it('lists exactly the schedule whose last expected occurrence has no success as overdue (one fails, one succeeds)', async () => {
    await until(async () => (await get(open, '/api/v1/schedules/ok-job')).body.lastSuccessMs !== null, 30_000, 'a success of ok-job');
    // ok-job is owed a success, by the rule, whenever one of its runs has not succeeded by its fire time plus its
    // grace (2 s): under load (a replica or the receiver late) it is rightly overdue for a moment now and then. So
    // wait for an answer in which it has kept up (its latest owed occurrence succeeded), checking in every answer
    // that lists it that it really is owed one: its last success is before the fire time of its latest expected
    // occurrence (at most due time + jitter window).
    let overdue!: Awaited<ReturnType<typeof get>>;
    await until(
      async () => {
        overdue = await get(open, '/api/v1/schedules?overdue=true&limit=100');
        const ok = overdue.body.items.find((s: { name: string }) => s.name === 'ok-job');
        if (ok) expect(ok.lastSuccessMs === null || ok.lastSuccessMs < ok.lastExpectedDueMs + ok.jitterMs, JSON.stringify(ok)).toBe(true);
        return ok === undefined && overdue.body.items.length > 0;
      },
      60_000,
      'an answer in which fail-job is overdue and ok-job has kept up',
    );
    expect(overdue.body.items.map((s: { name: string }) => s.name)).toEqual(['fail-job']);
    expect(overdue.body.items[0].overdueSeconds).toBeGreaterThan(0);
    expect(overdue.body.items[0].last.state).toBe('failed');
    const notOverdue = await get(open, '/api/v1/schedules?overdue=false&limit=100');
    expect(notOverdue.body.items.map((s: { name: string }) => s.name)).toContain('ok-job');
    expect((await get(open, '/api/v1/schedules?state=failed')).body.items.map((s: { name: string }) => s.name)).toEqual(['fail-job']);
    const attention = await get(open, '/api/v1/schedules?sort=attention&limit=1');
    expect(attention.body.items[0].name).toBe('fail-job');
    const ok = await get(open, '/api/v1/schedules/ok-job');
    expect(ok.body.counts24h.succeeded).toBeGreaterThan(0);
    expect(ok.body.upcoming[0].fireMs).toBeGreaterThanOrEqual(ok.body.upcoming[0].dueMs);
    expect(ok.body.upcoming[0].fireMs).toBeLessThan(ok.body.upcoming[0].windowEndMs);
    const occ = await get(open, '/api/v1/schedules/ok-job/occurrences');
    expect(occ.body.items.length).toBeGreaterThan(0);
    expect(occ.body.items.some((o: { state: string }) => o.state === 'succeeded')).toBe(true);
  });

  it('refuses actions without an operator token, changing nothing; an operator triggers once, with the reason in the audit log', async () => {
    const runs = async () => (await flock.redisClient.zrange(keys.runs('talk-job'), 0, -1)).filter((k) => k.endsWith('~manual'));
    const audit = async () => flock.redisClient.xlen(new HistoryKeys(keys).audit);
    const before = { runs: await runs(), audit: await audit() };
    expect((await post(open, '/api/v1/schedules/talk-job/trigger', {}, bearer(OPERATOR_TOKEN))).status).toBe(401); // a token this API does not know
    const off = await post(open, '/api/v1/schedules/talk-job/trigger', {});
    expect(off.status).toBe(403);
    expect(off.body.error.message).toMatch(/--api-token-file/);
    expect((await post(guarded, '/api/v1/schedules/talk-job/trigger', {})).status).toBe(401);
    expect((await post(guarded, '/api/v1/schedules/talk-job/trigger', {}, bearer('wrong-token-0123456789'))).status).toBe(401);
    expect((await post(guarded, '/api/v1/schedules/talk-job/trigger', {}, bearer(VIEWER_TOKEN))).status).toBe(403);
    expect((await post(guarded, '/api/v1/schedules/talk-job/trigger', {}, { ...bearer(OPERATOR_TOKEN), origin: 'http://evil.example' })).status).toBe(403);
    expect((await post(guarded, '/api/v1/schedules/talk-job/trigger', {}, { ...bearer(OPERATOR_TOKEN), 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post(guarded, '/api/v1/schedules/talk-job/trigger', {}, { ...bearer(OPERATOR_TOKEN), origin: 'null' })).status).toBe(403);
    const badReason = await post(guarded, '/api/v1/schedules/talk-job/suspend', { reason: 42 }, bearer(OPERATOR_TOKEN));
    expect(badReason.status).toBe(400);
    expect(badReason.body.error).toMatchObject({ code: 'BAD_PARAMETER', field: 'body.reason', message: expect.stringMatching(/^body\.reason: must be text, not a number; allowed: text of up to 500 characters/) });
    expect(await runs()).toEqual(before.runs);
    expect(await audit()).toBe(before.audit);
    expect(await flock.redisClient.hexists(keys.suspended, 'talk-job')).toBe(0);

    const done = await post(guarded, '/api/v1/schedules/talk-job/trigger', { reason: 'check the new config' }, bearer(OPERATOR_TOKEN));
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ action: 'trigger', schedule: 'talk-job', done: true, auditId: expect.any(String) });
    expect((await runs()).length).toBe(before.runs.length + 1);
    const log = await get(guarded, '/api/v1/audit');
    expect(log.body.items[0]).toMatchObject({ who: 'alice', via: 'api', action: 'trigger', schedule: 'talk-job', reason: 'check the new config', outcome: expect.stringContaining(done.body.detail.occurrence) });
    expect(log.body.items).toHaveLength(before.audit + 1);
  });

  it('shows a run killed mid-way with both claims (replicas, fencing tokens 1 and 2) and the log lines of both attempts', async () => {
    const key = (await flock.redisClient.zrange(keys.runs('talk-job'), 0, -1)).find((k) => k.endsWith('~manual'))!;
    const path = `/api/v1/occurrences/${encodeURIComponent(key)}`;
    await until(async () => (await get(open, path)).body?.state === 'running', 20_000, 'talk-job running');
    await new Promise((r) => setTimeout(r, 1_500)); // its first log lines reach Redis (flushed every second)
    const claimant = (await get(open, path)).body.attempts[0].replica as string;
    flock.replicas.find((r) => r.name === claimant)!.signal('SIGKILL');
    await until(async () => (await get(open, path)).body.state === 'succeeded', 30_000, 'the re-claimed run to succeed');
    await new Promise((r) => setTimeout(r, 1_500));
    const o = (await get(open, path)).body;
    expect(o.attempts.map((a: { fencingToken: number; why: string }) => [a.fencingToken, a.why])).toEqual([[1, 'first'], [2, 'stalled']]);
    expect(o.attempts[1].replica).not.toBe(claimant);
    expect(o.result).toMatchObject({ acted: 1, objects: [{ name: 'old-config', result: 'deleted' }] });
    const msgs = o.logs.map((l: { attempt: number; msg: string }) => `${l.attempt}:${l.msg}`);
    expect(msgs).toContain('1:talk: attempt 1 starting with fencing token 1');
    expect(msgs).toContain('2:talk: attempt 2 starting with fencing token 2');
    expect(msgs).toContain('2:run finished');
    // The killed replica's lines outlive it: they are in Redis, not in its process.
    expect(o.logs.find((l: { attempt: number; msg: string }) => l.attempt === 1 && l.msg === 'run started').fields.replica).toBe(claimant);
  });

  it('suspends with a note and resumes without a reason (optional), shown in the list and the audit log as "(no reason given)"', async () => {
    const s = await post(guarded, '/api/v1/schedules/filler-03/suspend', { reason: 'db migration' }, bearer(OPERATOR_TOKEN));
    expect(s.body.done).toBe(true);
    expect((await post(guarded, '/api/v1/schedules/filler-03/suspend', { reason: 'again' }, bearer(OPERATOR_TOKEN))).body.done).toBe(false);
    await until(async () => (await get(open, '/api/v1/schedules?suspended=true')).body.items.length === 1, 10_000, 'the suspension in the list');
    const listed = (await get(open, '/api/v1/schedules?suspended=true')).body.items[0];
    expect(listed).toMatchObject({ name: 'filler-03', suspended: true, suspension: { by: 'api:alice', note: 'db migration' } });
    const resumed = await post(guarded, '/api/v1/schedules/filler-03/resume', {}, bearer(OPERATOR_TOKEN));
    expect(resumed.status).toBe(200);
    expect(resumed.body.done).toBe(true);
    expect((await post(guarded, '/api/v1/schedules/filler-03/suspend', undefined, bearer(OPERATOR_TOKEN))).body.done).toBe(true); // no body at all
    const audit = (await get(open, '/api/v1/audit?schedule=filler-03')).body.items;
    expect(audit.map((e: { action: string; reason: string }) => [e.action, e.reason])).toEqual([
      ['suspend', '(no reason given)'],
      ['resume', '(no reason given)'],
      ['suspend', 'db migration'],
    ]);
    expect((await post(guarded, '/api/v1/schedules/filler-03/resume', { reason: 'migration done' }, bearer(OPERATOR_TOKEN))).body.done).toBe(true);
    expect((await get(open, '/api/v1/audit?schedule=filler-03&limit=1')).body.items[0]).toMatchObject({ action: 'resume', reason: 'migration done' });
    const dry = await post(guarded, '/api/v1/schedules/filler-04/backfill', { from: '2020-01-01T00:00:00Z', to: '2023-01-01T00:00:00Z', dryRun: true }, bearer(OPERATOR_TOKEN));
    expect(dry.body).toMatchObject({ done: false, detail: { dryRun: true, count: 4 } });
  });

  it('filters by the states a latest result can have, and refuses an open state with the allowed ones (README lists them)', async () => {
    expect((await get(open, '/api/v1/schedules?state=none')).status).toBe(200);
    const running = await get(open, '/api/v1/schedules?state=running');
    expect(running.status).toBe(400);
    expect(running.body.error.field).toBe('query.state');
    expect(running.body.error.message).toMatch(/allowed: .*succeeded.*failed.*missed.*skipped.*none/);
    expect(running.body.error.message).not.toMatch(/allowed: .*(scheduled|retrying)/);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('`state` (latest result: `succeeded`, `failed`, `missed`, `skipped`, `none`');
  });

  it('refuses a query parameter a schedule does not take (?range=99y) with a 400, as the page refuses a range it does not show', async () => {
    const r = await get(open, '/api/v1/schedules/ok-job?range=99y');
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({
      code: 'BAD_PARAMETER',
      message: 'query.range: this route takes no query parameters; for occurrences over a time range use GET /api/v1/schedules/ok-job/occurrences?from=…&to=…',
      field: 'query.range',
    });
    expect((await get(open, '/api/v1/schedules/ok-job')).status).toBe(200);
    const page = await get(open, '/schedules/ok-job?range=99y');
    expect(page.status).toBe(400);
    expect(page.text).toContain('range &quot;99y&quot; is not one of 1h, 24h or 7d');
    for (const range of ['1h', '24h', '7d']) expect((await get(open, `/schedules/ok-job?range=${range}`)).status).toBe(200);
  });

  it("refuses a backfill in the API's words: the body field named and set as field, a too-large range counted", async () => {
    const reversed = await post(guarded, '/api/v1/schedules/filler-04/backfill', { from: '2023-01-01T00:00:00Z', to: '2020-01-01T00:00:00Z' }, bearer(OPERATOR_TOKEN));
    expect(reversed.status).toBe(400);
    expect(reversed.body.error).toEqual({
      code: 'CONTROL_REFUSED',
      message: 'body.from must not be after body.to (2023-01-01T00:00:00.000Z is after 2020-01-01T00:00:00.000Z)',
      field: 'body.from',
    });
    // ok-job runs every 2 s: one day holds 43,200 due times.
    const day = { from: '2026-01-01T00:00:00Z', to: '2026-01-01T23:59:59Z' };
    const big = await post(guarded, '/api/v1/schedules/ok-job/backfill', { ...day, dryRun: true }, bearer(OPERATOR_TOKEN));
    expect(big.status).toBe(400);
    expect(big.body.error.field).toBe('body.to');
    expect(big.body.error.message).toBe(
      'the range holds 43,200 occurrences of "ok-job" (body.from 2026-01-01T00:00:00.000Z to body.to 2026-01-01T23:59:59.000Z); one backfill creates at most 10,000: backfill a shorter range at a time',
    );
    const hour = { from: '2026-01-01T00:00:00Z', to: '2026-01-01T00:59:59Z' };
    const unconfirmed = await post(guarded, '/api/v1/schedules/ok-job/backfill', hour, bearer(OPERATOR_TOKEN));
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.body.error.field).toBe('body.yes');
    expect(unconfirmed.body.error.message).toContain('check it with body.dryRun, then run again with body.yes (or body.max 1800)');
    expect(JSON.stringify([reversed.body, big.body, unconfirmed.body])).not.toMatch(/--(from|to|yes|max|dry-run)/);
  });

  it('records the command line\'s actions in the same audit log, and `cronflock audit` prints it', async () => {
    // Not execFileSync: blocking this process for seconds starves the in-process dashboards, whose idle
    // keep-alive sockets then close under the next test's first request (ECONNRESET).
    const cli = async (...args: string[]) => (await promisify(execFile)(process.execPath, [BIN, ...args, '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8' })).stdout;
    await cli('suspend', 'filler-07', '--note', 'disk full on the target');
    await cli('resume', 'filler-07', '--reason', 'disk cleaned');
    const entries = JSON.parse(await cli('audit', '--schedule', 'filler-07', '--json')) as { action: string; via: string; reason: string; who: string }[];
    expect(entries.map((e) => [e.action, e.via, e.reason])).toEqual([['resume', 'cli', 'disk cleaned'], ['suspend', 'cli', 'disk full on the target']]);
    expect(entries[0]!.who).toMatch(/@/);
    expect(await cli('audit', '--schedule', 'filler-07')).toMatch(/suspend\s+filler-07\s+disk full on the target/);
    // No reason on the command line: the same words as the API's, not an empty field.
    await cli('suspend', 'filler-08');
    await cli('resume', 'filler-08');
    const bare = JSON.parse(await cli('audit', '--schedule', 'filler-08', '--json')) as { action: string; via: string; reason: string }[];
    expect(bare.map((e) => [e.action, e.via, e.reason])).toEqual([['resume', 'cli', '(no reason given)'], ['suspend', 'cli', '(no reason given)']]);
  });

  it('serves its OpenAPI 3.1 document, the flock, and no secret in any answer', async () => {
    const doc = (await get(open, '/api/v1/openapi.json')).body;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/schedules', '/schedules/{name}/occurrences', '/occurrences/{key}', '/flock', '/audit']));
    expect(doc.components.schemas.ScheduleSummary.properties.overdueSeconds).toBeDefined();
    const flockView = (await get(open, '/api/v1/flock')).body;
    expect(flockView.redis.version).toMatch(/^\d/);
    expect(flockView.replicas.length).toBeGreaterThanOrEqual(1);
    const ok = await get(open, '/api/v1/schedules/ok-job');
    expect(ok.body.job).toMatch(/^POST http:\/\/127\.0\.0\.1:\d+\/ok\?token=\*\*\* \(headers: X-Api-Key, values hidden\)$/);
    const occ = await get(open, '/api/v1/schedules/ok-job/occurrences?limit=3');
    for (const o of occ.body.items) await get(open, `/api/v1/occurrences/${encodeURIComponent(o.key)}`);
    for (const p of ['/', '/schedules/ok-job', '/flock', '/audit', `/occurrences/${encodeURIComponent(occ.body.items[0].key)}`, '/api/v1/schedules?limit=100']) await get(open, p);
    const leaks = bodies.filter((b) => [...SECRETS, OPERATOR_TOKEN, VIEWER_TOKEN].some((s) => b.includes(s)));
    expect(leaks).toEqual([]);
    const headers = (await fetch(new URL('/', open.url))).headers;
    expect(headers.get('content-security-policy')).toMatch(/default-src 'self'.*frame-ancestors 'none'/);
    expect(headers.get('x-content-type-options')).toBe('nosniff');
  });
});
