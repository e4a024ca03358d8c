/**
 * "Answers never hold a secret" (README, Dashboard and API), for a stored schedule whose definition carries some:
 * an http job with user info and a query value in its URL and a header value, and a Slack webhook URL (the URL is
 * the credential). Stored with the real CLI (`cronflock apply -f`, from dist/: `npm run build` first), run once by a
 * real replica process (triggered through the API), then every API answer and dashboard page about the schedule is
 * scanned for the secret strings — before a replica published it (`published: false`) and after it ran — and so is
 * what `cronflock list` prints (table and --json).
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { OPERATOR_TOKEN } from '../support/dashboard-flock.js';
import { Flock, until } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';

const SECRETS = ['user:secret', 'supersecret', 'tok-abc-123', 'T000/B000/slacksecret'];
const NAME = 'leaky';
let flock: Flock;
let api: Dashboard;
const keys = new Keyspace();

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const r = await fetch(new URL(path, api.url), { headers });
  return { status: r.status, text: await r.text() };
}

/** Every answer about the schedule; each must be a 200 and hold none of SECRETS. */
async function scanAll(paths: string[]): Promise<void> {
  for (const p of paths) {
    const r = await get(p);
    expect(r.status, `${p}: ${r.text.slice(0, 300)}`).toBe(200);
    for (const s of SECRETS) expect(r.text.includes(s), `${p} holds the secret "${s}": ${r.text.slice(0, 600)}`).toBe(false);
  }
}

beforeAll(async () => {
  flock = await Flock.start();
  const file = flock.writeSchedules(
    'schedules:\n' +
      `  - name: ${NAME}\n` +
      '    cron: "0 0 1 1 *"\n' +
      '    job: {kind: http, url: "http://user:secret@127.0.0.1:9/x?key=supersecret", headers: {X-Token: tok-abc-123}}\n' +
      '    notify: {on: [failed], slack: {webhookUrl: "https://hooks.slack.com/services/T000/B000/slacksecret"}}\n',
    'leaky.yaml',
  );
  const applied = spawnSync(process.execPath, [BIN, 'apply', '-f', file, '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
  expect(applied.status, applied.stderr + applied.stdout).toBe(0);
  const tokens = join(flock.dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n`);
  api = await startDashboard({ redisUrl: flock.redis.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
}, 90_000);
afterAll(async () => {
  await api?.close();
  await flock?.close();
});

describe('a stored schedule with secrets in its definition', () => {
  it('is answered without them before a replica picked it up (GET /schedules/{name}, published: false)', async () => {
    const r = await get(`/api/v1/schedules/${NAME}`);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.text);
    expect(body.published).toBe(false);
    // the definition is still there, with what is not secret
    expect(body.stored.definition.cron).toBe('0 0 1 1 *');
    expect(body.stored.definition.job.url).toBe('http://127.0.0.1:9/x?key=***');
    expect(body.stored.definition.job.headers).toEqual({ 'X-Token': '***' });
    await scanAll([`/api/v1/schedules/${NAME}`, `/api/v1/audit?schedule=${NAME}`, '/api/v1/audit', '/audit']);
  });

  it('is printed without them by cronflock list and list --json (the API\'s redaction), still showing the definition', () => {
    for (const args of [['list', '--json'], ['list'], ['list', '--prefix', NAME, '--json']]) {
      const r = spawnSync(process.execPath, [BIN, ...args, '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(NAME);
      for (const s of SECRETS) expect((r.stdout + r.stderr).includes(s), `cronflock ${args.join(' ')} prints the secret "${s}": ${r.stdout.slice(0, 600)}`).toBe(false);
    }
    const json = spawnSync(process.execPath, [BIN, 'list', '--json', '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    const [item] = JSON.parse(json.stdout) as { name: string; version: number; definition: { cron: string; job: { url: string; headers: Record<string, string> } } }[];
    expect(item).toMatchObject({ name: NAME, version: 1, definition: { cron: '0 0 1 1 *', job: { url: 'http://127.0.0.1:9/x?key=***', headers: { 'X-Token': '***' } } } });
  });

  it('holds none in any API answer or page once a replica ran it (list, one, occurrences, the occurrence, audit, flock)', async () => {
    await flock.startReplica({ name: 'r1', schedules: '' });
    await until(async () => (await flock.redisClient.hget(keys.definitions, NAME)) !== null, 30_000, `${NAME} published`);
    await until(async () => JSON.parse((await get(`/api/v1/schedules/${NAME}`)).text).published === true, 30_000, 'the API sees it published');
    const t = await fetch(new URL(`/api/v1/schedules/${NAME}/trigger`, api.url), { method: 'POST', headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    expect(t.status, await t.text()).toBe(200);
    let key = '';
    await until(
      async () => {
        const page = JSON.parse((await get(`/api/v1/schedules/${NAME}/occurrences`)).text);
        const done = (page.items ?? []).find((o: any) => typeof o.endMs === 'number');
        key = done?.key ?? '';
        return key !== '';
      },
      60_000,
      'the triggered occurrence finished',
    );
    const one = JSON.parse((await get(`/api/v1/schedules/${NAME}`)).text);
    expect(one.published).toBe(true);
    expect(one.job).toContain('X-Token');
    expect(one.stored.definition.job.url).toBe('http://127.0.0.1:9/x?key=***');
    const enc = encodeURIComponent(key);
    await scanAll([
      '/api/v1/schedules',
      `/api/v1/schedules?q=${NAME}`,
      `/api/v1/schedules/${NAME}`,
      `/api/v1/schedules/${NAME}/occurrences`,
      `/api/v1/occurrences/${enc}`,
      `/api/v1/audit?schedule=${NAME}`,
      '/api/v1/flock',
      '/',
      '/ui/schedules-table',
      `/schedules/${NAME}`,
      `/occurrences/${enc}`,
      '/flock',
      '/audit',
    ]);
  }, 120_000);
});
