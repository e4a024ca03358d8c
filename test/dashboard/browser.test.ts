/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against a real flock: two replica
 * processes, Redis, the receiver, and `cronflock ui` as its own process. Each page is loaded and checked (schedule
 * names, a failed run shown as failed, a suspended schedule as suspended, a re-claimed run with both fencing
 * tokens and its log lines), "Run now" is refused without a token and done once with an operator token, the
 * schedules page renders with 10,000 schedules, and no page breaks its Content Security Policy. Screenshots go
 * to a temporary folder, or with CRONFLOCK_SCREENSHOTS=1 (`npm run screenshots`) to docs/images/ (shown in the
 * README): a test run leaves the checkout as it was.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { HistoryKeys } from '../../runner/history/keys.js';
import type { Flock } from '../support/flock.js';
import { until } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';
import { OPERATOR_TOKEN, startDashboardFlock } from '../support/dashboard-flock.js';
import { publishMany } from '../../bench/lib/many-schedules.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const IMAGES = process.env.CRONFLOCK_SCREENSHOTS === '1' ? join(ROOT, 'docs/images') : mkdtempSync(join(tmpdir(), 'cronflock-screens-'));
/** Flags for a headless Chromium on a machine without a network (background networking otherwise hangs). */
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let flock: Flock;
let ui: { child: ChildProcess; url: string };
let big: { child: ChildProcess; url: string };
let context: BrowserContext;
let profile: string;
const cspErrors: string[] = [];
const keys = new Keyspace();

/** Starts `cronflock ui` on a free port and waits for its URL. */
async function startUi(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'ui', '--listen', '127.0.0.1:0', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  await until(() => /"url":"http[^"]+"/.test(out) || child.exitCode !== null, 20_000, 'cronflock ui to listen');
  if (child.exitCode !== null) throw new Error(`cronflock ui exited: ${err}`);
  return { child, url: /"url":"(http[^"]+)"/.exec(out)![1]! };
}

async function open(path: string, base = ui.url): Promise<Page> {
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) cspErrors.push(`${path}: ${m.text()}`);
  });
  const r = await page.goto(new URL(path, base).toString());
  expect(r?.status()).toBe(200);
  return page;
}

async function api(path: string, init: RequestInit = {}): Promise<any> {
  return (await fetch(new URL(path, ui.url), init)).json();
}

beforeAll(async () => {
  flock = await startDashboardFlock();
  const tokens = join(flock.dir, 'token');
  writeFileSync(tokens, `${OPERATOR_TOKEN}\n`);
  ui = await startUi(['--redis', flock.redis.url, '--api-token-file', tokens]);
  await publishMany(flock.redisClient, flock.dir, 'big', 10_000);
  big = await startUi(['--redis', flock.redis.url, '--namespace', 'big']);
  profile = mkdtempSync(join(tmpdir(), 'cronflock-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1400, height: 900 } });
  mkdirSync(IMAGES, { recursive: true });
  // A suspended schedule (with its note), a failed run, and a run killed mid-way (re-claimed with token 2).
  const op = { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' };
  await api('/api/v1/schedules/filler-05/suspend', { method: 'POST', headers: op, body: JSON.stringify({ reason: 'waiting for the storage migration' }) });
  const t = await api('/api/v1/schedules/talk-job/trigger', { method: 'POST', headers: op, body: JSON.stringify({ reason: 'demo of a re-claim' }) });
  const path = `/api/v1/occurrences/${encodeURIComponent(t.detail.occurrence)}`;
  await until(async () => (await api(path)).state === 'running', 20_000, 'talk-job running');
  await new Promise((r) => setTimeout(r, 1_500));
  const claimant = (await api(path)).attempts[0].replica;
  flock.replicas.find((r) => r.name === claimant)!.signal('SIGKILL');
  await until(async () => (await api(path)).state === 'succeeded', 30_000, 'the re-claim to succeed');
  await until(async () => (await api('/api/v1/schedules?state=failed')).items.length > 0, 20_000, 'a failed run in the list');
  await until(async () => (await api('/api/v1/schedules?suspended=true')).items.length === 1, 10_000, 'the suspension in the list');
  await new Promise((r) => setTimeout(r, 1_500)); // the re-claim's last log lines
});
afterAll(async () => {
  await context?.close();
  for (const p of [ui, big]) p?.child.kill('SIGTERM');
  await flock?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('dashboard in a browser', () => {
  it('shows every schedule, a failing one as failed and overdue, a suspended one as suspended, and filters live', async () => {
    const page = await open('/');
    await page.waitForSelector('tr[data-schedule="ok-job"]');
    const text = await page.locator('#table').innerText();
    for (const n of ['ok-job', 'fail-job', 'talk-job', 'filler-00']) expect(text).toContain(n);
    const failed = page.locator('tr[data-schedule="fail-job"]');
    await expect.poll(() => failed.locator('.pill.st-failed').count(), { timeout: 10_000 }).toBeGreaterThan(0);
    expect(await failed.locator('.pill.overdue').count()).toBe(1);
    const suspended = page.locator('tr[data-schedule="filler-05"]');
    expect(await suspended.innerText()).toContain('waiting for the storage migration');
    expect(await suspended.locator('.pill.suspended').count()).toBeGreaterThan(0);
    // Overdue and failing first (the default sort).
    expect(await page.locator('tbody tr').first().getAttribute('data-schedule')).toBe('fail-job');
    await page.screenshot({ path: join(IMAGES, 'schedules.png'), fullPage: true });
    await page.fill('input[type=search]', 'filler-1');
    await expect.poll(() => page.locator('tbody tr').count(), { timeout: 10_000 }).toBe(2); // filler-10, filler-11
    await page.close();
  });

  it('shows a schedule: its timeline (jitter windows, fire ticks, starts by state) and lateness plot', async () => {
    const page = await open('/schedules/ok-job');
    expect(await page.locator('svg.timeline rect.band').count()).toBeGreaterThan(0);
    expect(await page.locator('svg.timeline line.fire').count()).toBeGreaterThan(0);
    expect(await page.locator('svg.timeline circle.st-succeeded').count()).toBeGreaterThan(0);
    await page.waitForSelector('#lateness .uplot canvas');
    expect(await page.locator('h2', { hasText: 'Lateness' }).innerText()).toMatch(/p50 .* p99 /);
    await page.screenshot({ path: join(IMAGES, 'schedule.png'), fullPage: true });
    const failing = await open('/schedules/fail-job?range=7d');
    expect(await failing.locator('svg.timeline circle.st-failed').count()).toBeGreaterThan(0);
    await failing.close();
    await page.close();
  });

  it('refuses "Run now" without a token and runs it once with an operator token', async () => {
    const manual = async () => (await flock.redisClient.zrange(keys.runs('ok-job'), 0, -1)).filter((k) => k.endsWith('~manual')).length;
    const page = await open('/schedules/ok-job');
    await until(async () => (await page.locator('.actions').getAttribute('data-allowed')) === 'no' && (await page.locator('#actions-why').innerText()) !== '', 10_000, 'the role check');
    await page.click('form[data-action$="/trigger"] button');
    await expect.poll(() => page.locator('#status').innerText()).toMatch(/operator token/);
    expect(await manual()).toBe(0);
    await page.click('#token-open');
    await page.fill('#token-input', OPERATOR_TOKEN);
    await page.click('#token-form button');
    await until(async () => (await page.locator('.actions').getAttribute('data-allowed')) === 'yes', 10_000, 'actions allowed');
    expect(await page.locator('#who').innerText()).toContain('operator');
    await page.click('form[data-action$="/trigger"] button');
    await expect.poll(() => page.locator('#status').innerText(), { timeout: 10_000 }).toMatch(/^triggered ok-job@/);
    expect(await manual()).toBe(1);
    const audit = await flock.redisClient.xrevrange(new HistoryKeys(keys).audit, '+', '-', 'COUNT', 1);
    expect(audit[0]![1]).toEqual(expect.arrayContaining(['action', 'trigger', 'schedule', 'ok-job', 'via', 'api']));
    await page.close();
  });

  it('shows a run killed mid-way: both claims with their replicas and fencing tokens, the result as a table, and the log lines', async () => {
    const key = (await flock.redisClient.zrange(keys.runs('talk-job'), 0, -1)).find((k) => k.endsWith('~manual'))!;
    const page = await open(`/occurrences/${encodeURIComponent(key)}`);
    const rows = page.locator('table.attempts tbody tr');
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).getAttribute('data-token')).toBe('1');
    expect(await rows.nth(1).getAttribute('data-token')).toBe('2');
    expect(await rows.nth(1).innerText()).toMatch(/stalled/);
    expect(await page.locator('svg.timeline path.reclaim').count()).toBe(1);
    expect(await page.locator('main').innerText()).toContain('old-config');
    const log = await page.locator('pre.log').innerText();
    expect(log).toContain('talk: attempt 1 starting with fencing token 1');
    expect(log).toContain('talk: attempt 2 starting with fencing token 2');
    await page.screenshot({ path: join(IMAGES, 'occurrence.png'), fullPage: true });
    await page.close();
  });

  it('shows the flock (replicas, skew, load, planning shares) and Redis; and the audit log', async () => {
    const page = await open('/flock');
    await page.waitForSelector('tr[data-replica]');
    const text = await page.locator('main').innerText();
    expect(text).toMatch(/\d+ live replica/);
    expect(text).toContain('noeviction');
    await page.screenshot({ path: join(IMAGES, 'flock.png'), fullPage: true });
    const audit = await open('/audit');
    expect(await audit.locator('main').innerText()).toContain('waiting for the storage migration');
    await audit.screenshot({ path: join(IMAGES, 'audit.png'), fullPage: true });
    await audit.close();
    await page.close();
  });

  it('renders the schedules page with 10,000 schedules (paged)', async () => {
    const t0 = Date.now();
    const page = await open('/?sort=name', big.url);
    await page.waitForSelector('tr[data-schedule="s-00000"]');
    console.log(`schedules page with 10,000 schedules: loaded in ${Date.now() - t0} ms`);
    expect(await page.locator('tbody tr').count()).toBe(100);
    expect(await page.locator('#table').innerText()).toContain('10000 schedule(s)');
    await page.click('text=next page');
    await page.waitForSelector('tr[data-schedule="s-00100"]');
    await page.close();
  });

  it('breaks no Content Security Policy rule on any page (every asset is local)', () => {
    expect(cspErrors).toEqual([]);
    expect(existsSync(join(IMAGES, 'schedules.png'))).toBe(true);
  });
});
