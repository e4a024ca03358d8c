/**
 * Names across sources (issue 19, point 4: a name is owned by one source), on a real redis-server with real
 * replica processes (`bin/cronflock.js start`, from dist/: `npm run build` first) and the real CLI:
 * - a replica whose file defines a stored name refuses the file BEFORE its first plan or claim: no call to any
 *   URL of that file, no run record of it (not even "skipped … schedule removed");
 * - removing the stored schedule starts the refused file, without SIGHUP (the replica follows the change stream);
 * - a file's names stay owned while its replica is paused past the membership TTL (SIGSTOP 4 s): `apply -f` and
 *   the library are refused, naming the file and how long ago its replica was seen;
 * - a clash that gets into the store anyway (here: the publisher's last-seen entry deleted, as if gone for longer
 *   than the hold): the older owner keeps the name: the file's replica goes on with its own definition, also
 *   after a restart, and the rest of its file runs; a replica running stored schedules refuses the stored one by
 *   name (no call to its URL);
 * - `__proto__` is refused in a stored definition (library, PUT /api/v1/schedules/{name}) as in a file.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenFile } from '../../runner/api/auth.js';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { connectFlock, type Flock as LibFlock } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { Flock, sleep, until, hasLogged } from '../support/flock.js';
import { OPERATOR_TOKEN, VIEWER_TOKEN } from '../support/dashboard-flock.js';
import { BIN, ROOT } from '../support/replica.js';

let flock: Flock;
let lib: LibFlock;
const keys = new Keyspace();

/** Runs the CLI against the flock's Redis. */
function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args, '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const calls = (path: string): number => flock.receiver.deliveries.filter((d) => d.path === path).length;
/** Whether `replica` is a live member now (its membership expiry is ahead of the Redis clock). */
const live = (replica: string): Promise<boolean> => flock.isLiveMember(replica, keys);
const logged = hasLogged;

beforeAll(async () => {
  flock = await Flock.start();
  lib = await connectFlock({ redis: flock.redis.url, by: 'app' });
}, 60_000);
afterAll(async () => {
  await lib?.close();
  await flock?.close();
});

describe('a file that defines a stored name', () => {
  it('is refused before its first plan or claim: no call, no record; removing the stored one starts it without SIGHUP', async () => {
    const url = flock.receiver.url;
    // stored first; its cron never fires during the test
    const up = await lib.schedules.upsert({ name: 'own2-a', cron: '0 0 1 1 *', job: { kind: 'http', url: `${url}/own2-stored` } });
    expect(up.ok).toBe(true);
    const file = flock.writeSchedules(
      `schedules:\n  - {name: own2-a, cron: "* * * * * *", job: {kind: http, url: "${url}/own2-a"}}\n  - {name: own2-b, cron: "* * * * * *", job: {kind: http, url: "${url}/own2-b"}}\n`,
      'own2.yaml',
    );
    const r = await flock.startReplica({ name: 'own2-r', schedules: file });
    await until(() => /own2-a/.test(r.stderr.join('')), 5_000, 'the refusal on stderr');
    expect(r.stderr.join('')).toMatch(/own2\.yaml:\d+:\d+.*"own2-a" is also defined in the schedule store/);
    await sleep(4_000);
    expect(calls('/own2-a') + calls('/own2-b')).toBe(0);
    expect(await flock.runs('own2-b')).toEqual([]);
    expect((await flock.runs('own2-a')).filter((x) => x.state === 'skipped')).toEqual([]);

    // the stored one goes: the replica follows the change stream, re-checks the refused file and starts it
    expect((await lib.schedules.remove('own2-a')).ok).toBe(true);
    await r.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('"own2-a" removed: re-checking'), 15_000, 're-check');
    await flock.receiver.waitFor(() => calls('/own2-a') >= 2 && calls('/own2-b') >= 2, 20_000, 'the file runs');
    expect(calls('/own2-stored')).toBe(0);
  }, 90_000);
});

describe('a file\'s names stay owned while its replica is paused', () => {
  it('refuses apply -f and the library past the membership TTL, naming the file and when its replica was seen', async () => {
    const url = flock.receiver.url;
    const file = flock.writeSchedules(
      `schedules:\n  - {name: race-a, cron: "* * * * * *", job: {kind: http, url: "${url}/race-a-file"}}\n  - {name: race-b, cron: "* * * * * *", job: {kind: http, url: "${url}/race-b"}}\n`,
      'race.yaml',
    );
    const r = await flock.startReplica({ name: 'race-r', schedules: file });
    await until(async () => (await flock.redisClient.hget(keys.definitions, 'race-a')) !== null, 20_000, 'race-a published');
    const apply = flock.writeSchedules(`schedules:\n  - {name: race-a, cron: "* * * * * *", job: {kind: http, url: "${url}/race-a-stored"}}\n`, 'race-apply.yaml');
    r.signal('SIGSTOP');
    try {
      await sleep(4_000); // past the 2 s membership TTL
      expect(await live('race-r')).toBe(false); // no longer a live member
      const a = cli('apply', '-f', apply);
      expect(a.status).toBe(2);
      expect(a.stderr).toMatch(/"race-a" is defined by .*race\.yaml:2 \(run by replica race-r, last seen \d+ s ago/);
      const u = await lib.schedules.upsert({ name: 'race-a', cron: '* * * * * *', job: { kind: 'http', url: `${url}/race-a-stored` } });
      expect(u.ok).toBe(false);
      expect(!u.ok && u.error.code).toBe('NAME_OWNED');
      expect(await lib.schedules.get('race-a')).toBeUndefined();
    } finally {
      r.signal('SIGCONT');
    }
  }, 60_000);

  it('a clash that got into the store anyway: the older owner keeps the name, the rest of its file runs, also after a restart', async () => {
    const url = flock.receiver.url;
    const r = flock.replicas.find((x) => x.name === 'race-r')!;
    // No replica runs stored schedules while the name is unowned (one would take it over legitimately: see
    // runner/store/ownership.ts): the first test's replica goes.
    await flock.replicas.find((x) => x.name === 'own2-r')?.stop();
    // As if race-r had been gone longer than the hold: its last-seen entry deleted while it is paused.
    r.signal('SIGSTOP');
    try {
      await until(async () => !(await live('race-r')), 10_000, 'race-r out of the membership');
      await flock.redisClient.zrem(keys.replicasSeen, 'race-r');
      const u = await lib.schedules.upsert({ name: 'race-a', cron: '* * * * * *', job: { kind: 'http', url: `${url}/race-a-stored` } });
      expect(u.ok).toBe(true);
      await sleep(500);
    } finally {
      r.signal('SIGCONT');
    }
    await until(async () => (await flock.redisClient.zscore(keys.replicasSeen, 'race-r')) !== null, 10_000, 'race-r seen again');
    // the file's replica keeps its own race-a (a newcomer never takes a running schedule's name over)
    await r.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('stored schedule "race-a" refused on this replica'), 15_000, 'stored race-a refused by the file\'s replica');
    // a replica running the stored schedules (no path) refuses the stored race-a by name: the file owns it
    const s = await flock.startReplica({ name: 'store-r', schedules: '' });
    expect(logged(s, 'stored schedule "race-a" refused on this replica: the name is owned by')).toBe(true);
    const from = Date.now();
    await flock.receiver.waitFor(() => flock.receiver.deliveries.filter((d) => d.path === '/race-a-file' && d.receivedMs > from).length >= 3, 20_000, 'the file\'s race-a goes on');

    // restart the file's replica with the same file: the whole file runs, race-a from the file
    await r.stop();
    const r2 = await flock.startReplica({ name: 'race-r', schedules: join(flock.dir, 'race.yaml') });
    expect(logged(r2, 'stored schedule "race-a" refused on this replica: the name is owned by')).toBe(true);
    expect(r2.stderr.join('')).not.toMatch(/race\.yaml.*refused|also defined in the schedule store/);
    const after = Date.now();
    await flock.receiver.waitFor(
      () => ['/race-a-file', '/race-b'].every((p) => flock.receiver.deliveries.filter((d) => d.path === p && d.receivedMs > after).length >= 3),
      30_000,
      'race-a (file) and race-b run after the restart',
    );
    expect(calls('/race-a-stored')).toBe(0);
  }, 120_000);
});

describe('__proto__ in a stored definition', () => {
  let api: Dashboard;
  beforeAll(async () => {
    const tokens = join(flock.dir, 'tokens.yaml');
    writeFileSync(tokens, `tokens:\n  - {name: alice, role: operator, token: ${OPERATOR_TOKEN}}\n  - {name: bob, role: viewer, token: ${VIEWER_TOKEN}}\n`);
    api = await startDashboard({ redisUrl: flock.redis.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test', rules: loadTokenFile(tokens) });
  });
  afterAll(async () => api?.close());
  const reason = 'the key "__proto__" cannot be used: JavaScript gives it a special meaning, and what it holds would be dropped';

  it('is refused by the library (JSON.parse makes it an own key) with the file loader\'s error, at every depth', async () => {
    const def = JSON.parse('{"name":"p4","cron":"0 3 * * *","__proto__":{"suspend":true},"job":{"kind":"http","url":"http://127.0.0.1:1/x","headers":{"__proto__":{"a":"b"}}}}');
    const r = await lib.schedules.upsert(def);
    expect(r.ok).toBe(false);
    const problems = !r.ok && 'problems' in r.error ? r.error.problems : [];
    expect(problems.map((p) => [p.field, p.code, p.reason])).toEqual([
      ['__proto__', 'SCHEMA_INVALID', reason],
      ['job.headers.__proto__', 'SCHEMA_INVALID', reason],
    ]);
    expect(await lib.schedules.get('p4')).toBeUndefined();
  });

  it('is refused by PUT /api/v1/schedules/{name} with 422 naming the field', async () => {
    const res = await fetch(new URL('/api/v1/schedules/p4', api.url), {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${OPERATOR_TOKEN}` },
      body: '{"cron":"0 3 * * *","job":{"kind":"http","url":"http://127.0.0.1:1/x","headers":{"__proto__":{"x":"1"}}}}',
    });
    const body = (await res.json()) as any;
    expect(res.status).toBe(422);
    expect(body.error.problems).toEqual([expect.objectContaining({ field: 'job.headers.__proto__', reason })]);
    expect(await lib.schedules.get('p4')).toBeUndefined();
  });
});
