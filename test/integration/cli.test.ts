/**
 * The CLI as the README tells a user to run it, from the built package (bin/cronflock.js → dist/).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { listRuns } from '../../runner/records/runs.js';
import { recordAudit } from '../../runner/history/audit.js';
import { freePort, RedisServerProcess } from '../../runner/redis/server-process.js';
import { Flock, sleep, until } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';

/** Calls per command since the server started (INFO commandstats). */
async function commandCalls(flock: Flock): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of (await flock.redisClient.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

const run = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });

describe('the cronflock command', () => {
  let flock: Flock;
  beforeAll(async () => {
    flock = await Flock.start();
  });
  afterAll(() => flock?.close());

  it('loads the Kubernetes client and the AWS SDK only for the kinds that need them', () => {
    // An ESM resolve hook in the child reports the packages it resolves.
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-lazy-'));
    writeFileSync(
      join(dir, 'resolve.mjs'),
      `export async function resolve(s, c, next) {
  if (/^@(kubernetes|aws-sdk)\\//.test(s)) process.stderr.write('RESOLVED ' + s + '\\n');
  return next(s, c);
}\n`,
    );
    const hook = join(dir, 'hook.mjs');
    writeFileSync(hook, `import { register } from 'node:module';\nregister('./resolve.mjs', import.meta.url);\n`);
    const write = (name: string, job: string): string => {
      const f = join(dir, name);
      writeFileSync(f, `schedules:\n  - { name: a, cron: "0 3 * * *", job: ${job} }\n`);
      return f;
    };
    const validate = (file: string) =>
      spawnSync(process.execPath, ['--import', hook, BIN, 'validate', file], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    const http = validate(write('http.yaml', '{ kind: http, url: "http://127.0.0.1:9/x" }'));
    expect(http.status, http.stderr).toBe(0);
    expect(http.stderr).not.toMatch(/RESOLVED/);
    // The hook works: a cleanup schedule's compile step loads the Kubernetes client.
    const cleanup = validate(write('cleanup.yaml', '{ kind: cleanup, resources: [{ preset: finished-jobs, olderThan: 1h }] }'));
    expect(cleanup.status, cleanup.stdout + cleanup.stderr).toBe(0);
    expect(cleanup.stderr).toMatch(/RESOLVED @kubernetes\/client-node/);
  });

  it('is what the package ships: bin, compiled CLI and the JSON Schema', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    const files = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    for (const f of ['bin/cronflock.js', 'dist/runner/cli/main.js', 'dist/runner/engine/replica.js', 'schema/schedules.schema.json']) {
      expect(files).toContain(f);
    }
    expect(files.some((f) => f.endsWith('.test.js'))).toBe(false);
  });

  it('validates the examples and refuses a bad file with file:line:col and the field', () => {
    const ok = run(['validate', 'examples/']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/3 schedules valid, 0 file\(s\) refused/);
    const bad = flock.writeSchedules('schedules:\n  - name: x\n    cron: "61 * * * *"\n    job: {kind: http, url: http://127.0.0.1/}\n', 'bad.yaml');
    const r = run(['validate', bad]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${bad}:3:11: schedules[0].cron:`);
  });

  it("prints next due times in UTC and in the schedule's time zone", () => {
    const r = run(['next', 'examples/schedules.yaml', '--schedule', 'ping-billing', '-n', '2', '--from', '2026-07-01T00:00:00Z', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as { dueAt: string; dueLocal: string; fireLocal: string; timeZone: string }[];
    expect(rows[0]).toMatchObject({ dueAt: '2026-07-01T00:00:02.000Z', dueLocal: '2026-07-01T02:00:02.000+02:00', timeZone: 'Europe/Berlin' });
    const text = run(['next', 'examples/schedules.yaml', '-n', '1', '--from', '2026-01-01T00:00:00Z']);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^SCHEDULE +DUE \(UTC\) +FIRE \(UTC\) +WINDOW END \(UTC\) +FIRE \(LOCAL\) +ZONE +NOTE$/m);
    expect(text.stdout).toMatch(/^ping-billing +2026-01-01T00:00:02\.000Z .* 2026-01-01T01:00:02\.\d{3}\+01:00 +Europe\/Berlin$/m);
    expect(text.stdout).toMatch(/^nightly-ish +2026-01-01T00:00:30\.000Z .* 2025-12-31T19:00:30\.000-05:00 +America\/New_York$/m);
  });

  it('prints next due times, fire times and window ends', () => {
    const r = run(['next', 'examples/schedules.yaml', '--schedule', 'ping-billing', '-n', '3', '--from', '2026-01-01T00:00:00Z', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as { dueAt: string; fireAt: string; windowEnd: string }[];
    expect(rows.map((x) => x.dueAt)).toEqual(['2026-01-01T00:00:02.000Z', '2026-01-01T00:00:04.000Z', '2026-01-01T00:00:06.000Z']);
    for (const x of rows) {
      expect(Date.parse(x.fireAt)).toBeGreaterThanOrEqual(Date.parse(x.dueAt));
      expect(Date.parse(x.fireAt)).toBeLessThan(Date.parse(x.windowEnd));
      expect(Date.parse(x.windowEnd) - Date.parse(x.dueAt)).toBe(1000);
    }
  });

  it('starts a replica against --redis, and `runs` shows its records', async () => {
    const file = flock.writeSchedules(`schedules:\n  - name: hello\n    cron: "* * * * * *"\n    job: {kind: http, url: ${flock.receiver.url}/x}\n`, 'hello.yaml');
    const r = await flock.startReplica({ name: 'cli-1', schedules: file });
    await until(() => flock.receiver.of('hello').length >= 2, 15_000, 'two runs');
    await r.stop();
    expect((await r.exited).code).toBe(0);
    const out = run(['runs', '--schedule', 'hello', '--json', '--redis', flock.redis.url]);
    expect(out.status, out.stderr).toBe(0);
    const runs = JSON.parse(out.stdout) as { key: string; state: string; replica: string }[];
    const got = new Set(flock.receiver.of('hello').map((d) => d.body.occurrence));
    const succeeded = runs.filter((x) => x.state === 'succeeded');
    expect(new Set(succeeded.map((x) => x.key))).toEqual(got);
    expect(succeeded.every((x) => x.replica === 'cli-1')).toBe(true);
    // --json gives a job's result as JSON, not as a string holding JSON.
    expect((succeeded[0] as unknown as { result: unknown }).result).toEqual({ status: 200 });
    const shown = run(['runs', '--schedule', 'hello', '--show', '--redis', flock.redis.url]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`${succeeded[0]!.key} (succeeded):\n  {\n    "status": 200\n  }`);
    const table = run(['runs', '--schedule', 'hello', '--redis', flock.redis.url]);
    expect(table.stdout).toMatch(/^DUE \(UTC\) +SCHEDULE +STATE +ORIGIN +FIRE +START +END +TOOK +LATE +REPLICA +ATT +TOKEN +REASON$/m);
    expect(table.stdout).toMatch(/^\S+Z +hello +succeeded +schedule +\d\d:\d\d:\d\d\.\d{3} +\d\d:\d\d:\d\d\.\d{3} +\d\d:\d\d:\d\d\.\d{3} +\d+(ms|\.?\d*s) +\d+ms +cli-1 +1 +1$/m);
  });

  it('shows a re-claimed run with the lateness of the attempt that ran, its duration and its origin', async () => {
    // The record as the claim script leaves it after a re-claim: the first attempt started 3 ms late and
    // stalled (its replica was killed); the second started 5,466 ms after the fire time and took 1.2 s.
    const keys = new Keyspace('reclaimed');
    const due = Date.parse('2026-01-01T00:00:00Z');
    const fire = due + 100;
    const key = `nightly@${new Date(due).toISOString()}`;
    const r = flock.redisClient;
    await r.hset(keys.occurrence(key), {
      key, schedule: 'nightly', state: 'succeeded', dueMs: due, fireMs: fire, manual: 0, origin: 'backfill', token: 2, attempt: 2,
      stalls: 1, handovers: 0, refused: 0, replica: 'r2', firstStartMs: fire + 3, latenessMs: 3, startMs: fire + 5466,
      endMs: fire + 5466 + 1200, result: '{"rows":7}',
    });
    await r.zadd(keys.runs('nightly'), due, key);
    await r.sadd(keys.schedules, 'nightly');
    const out = run(['runs', '--namespace', 'reclaimed', '--redis', flock.redis.url]);
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^2026-01-01T00:00:00\.000Z +nightly +succeeded +backfill +00:00:00\.100 +00:00:05\.566 +00:00:06\.766 +1\.2s +5\.47s +r2 +2 +2$/m);
    const json = JSON.parse(run(['runs', '--namespace', 'reclaimed', '--json', '--redis', flock.redis.url]).stdout) as { result: unknown; origin: string }[];
    expect(json[0]).toMatchObject({ result: { rows: 7 }, origin: 'backfill', startMs: fire + 5466, latenessMs: 3 });
  });

  it('`status` shows live replicas, schedules (suspension with its note, next fire, last result, overdue) and the backlog', async () => {
    const ns = 'status-test';
    // good runs inside the replica: an http job would wait for this test process, blocked in spawnSync.
    const noop = join(flock.dir, 'noop.mjs');
    writeFileSync(noop, 'export default { run() { return { ok: true }; } };\n');
    const file = flock.writeSchedules(
      `schedules:
  - { name: good, cron: "* * * * * *", job: { kind: module, path: ${noop}, isolation: none } }
  - { name: bad, cron: "* * * * * *", job: { kind: http, url: "http://127.0.0.1:9/nothing" } }
  - { name: quiet, cron: "0 0 1 1 *", timeZone: Europe/Berlin, job: { kind: http, url: ${flock.receiver.url}/quiet } }
  - { name: held, cron: "0 0 1 1 *", suspend: true, job: { kind: http, url: ${flock.receiver.url}/held } }
`,
      'status.yaml',
    );
    const rs = [await flock.startReplica({ name: 'st-1', schedules: file, namespace: ns }), await flock.startReplica({ name: 'st-2', schedules: file, namespace: ns })];
    try {
      const goodRuns = () => listRuns(flock.redisClient, new Keyspace(ns), { schedule: 'good' });
      await until(async () => (await goodRuns()).some((x) => x.state === 'succeeded'), 15_000, 'good runs');
      await sleep(1500); // and a failure of bad recorded
      const redis = ['--namespace', ns, '--redis', flock.redis.url];
      const s1 = run(['suspend', 'quiet', '--note', 'maintenance window', ...redis]);
      expect(s1.status, s1.stderr).toBe(0);
      expect(s1.stdout).toBe('suspended quiet\n');
      const s2 = run(['suspend', 'quiet', ...redis]);
      expect(s2.status, s2.stderr).toBe(0);
      expect(s2.stdout).toMatch(/^quiet was already suspended \(since \S+Z by (\S+): maintenance window\); nothing changed$/m);
      // The same identity as the audit log gives the action (it said cli@host here and user@host there).
      const me = `${userInfo().username}@${hostname()}`;
      expect(s2.stdout.match(/by (\S+): maintenance/)?.[1]).toBe(me);
      const audited = JSON.parse(run(['audit', '--json', ...redis]).stdout) as { who: string; action: string }[];
      expect(audited.filter((a) => a.action === 'suspend').map((a) => a.who)).toEqual([me]);

      const text = run(['status', ...redis]);
      expect(text.status, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/^replicas: 2 live$/m);
      expect(text.stdout).toMatch(/^ {2}st-1 +\d/m);
      expect(text.stdout).toMatch(/^ {2}st-2 +\d/m);
      // both kinds of suspension, each named: quiet at run time, held by its definition's suspend: true
      expect(text.stdout).toMatch(/^schedules: 4 published, suspended: 1 at run time \(cronflock suspend\), 1 by their definition \(suspend: true\)$/m);
      expect(text.stdout).toMatch(/^ {2}held +0 0 1 1 \* +UTC +.* +yes, \S+ ago by its definition in \S+status\.yaml:\d+: suspend: true/m);
      expect(text.stdout).toMatch(/^ {2}SCHEDULE +CRON +ZONE +NEXT FIRE \(UTC\) +LAST RESULT +LAST SUCCESS +OVERDUE +SUSPENDED$/m);
      expect(text.stdout).toMatch(/^ {2}good +\* \* \* \* \* \* +UTC +\S+Z +succeeded \(\S+ ago\) +\S+ ago +0 +no$/m);
      expect(text.stdout).toMatch(/^ {2}bad +.* +failed: job failed: request failed.* ago\) +- +0 +no$/m);
      expect(text.stdout).toMatch(/^ {2}quiet +0 0 1 1 \* +Europe\/Berlin +20\d\d-12-31T23:00:00Z +- +- +0 +yes, \S+ ago by \S+@\S+: maintenance window$/m);
      expect(text.stdout).toMatch(/^backlog: \d+ planned and not yet claimed, 0 of them overdue/m);

      const json = JSON.parse(run(['status', '--json', ...redis]).stdout) as {
        replicas: { name: string }[];
        schedules: { total: number; suspended: number; shown: { name: string; suspended?: { note?: string }; last?: { state: string }; overdue: number }[] };
        backlog: { pending: number; overdue: number; queue: { waiting: number; delayed: number; active: number } };
      };
      expect(json.replicas.map((x) => x.name).sort()).toEqual(['st-1', 'st-2']);
      expect(json.schedules).toMatchObject({ total: 4, suspended: 1, suspendedByDefinition: 1 });
      const byName = new Map(json.schedules.shown.map((x) => [x.name, x]));
      expect(byName.get('quiet')?.suspended?.note).toBe('maintenance window');
      expect(byName.get('good')?.last?.state).toBe('succeeded');
      expect(byName.get('bad')?.last?.state).toBe('failed');
      expect(json.backlog.queue).toEqual({ waiting: expect.any(Number), delayed: expect.any(Number), active: expect.any(Number) });

      // Few at a time: the suspended one first, and it says how to see the others.
      const one = run(['status', '--limit', '1', ...redis]);
      expect(one.stdout).toMatch(/^ {2}quiet /m);
      expect(one.stdout).not.toMatch(/^ {2}good /m);
      expect(one.stdout).toContain('(1 of 4 shown: suspended and overdue first; --limit <n> or --schedule <name> for others)');
      // the ones its definition suspends come next, before the others
      const two = run(['status', '--limit', '2', ...redis]);
      expect(two.stdout).toMatch(/^ {2}held /m);
      expect(two.stdout).toMatch(/^ {2}quiet /m);
      const unknown = run(['status', '--schedule', 'nope', ...redis]);
      expect(unknown.stdout).toContain('nope: no replica publishes a schedule of this name');

      // An occurrence nobody claims is overdue: stop the replicas; good's planned occurrences pass their fire time.
      await Promise.all(rs.map((x) => x.stop()));
      const keys = new Keyspace(ns);
      const stale = `good@${new Date(Date.now() - 60_000).toISOString()}`;
      await flock.redisClient.zadd(keys.pending, Date.now() - 60_000, stale);
      const after = JSON.parse(run(['status', '--json', ...redis]).stdout) as typeof json;
      expect(after.replicas).toEqual([]);
      expect(after.backlog.overdue).toBeGreaterThanOrEqual(1);
      expect(after.schedules.shown.find((x) => x.name === 'good')?.overdue).toBeGreaterThanOrEqual(1);
      const afterText = run(['status', ...redis]).stdout;
      expect(afterText).toMatch(/^replicas: 0 live$/m);
      expect(afterText).toMatch(/^ {2}good +.* +[1-9]\d* +no$/m);
    } finally {
      await Promise.all(rs.map((x) => x.stop()));
    }
  });

  it('`status` stays fast with 100,000 schedules: a bounded number of small Redis commands', async () => {
    const keys = new Keyspace('huge');
    const r = flock.redisClient;
    const N = 100_000;
    for (let i = 0; i < N; i += 10_000) {
      const defs: string[] = [];
      const oks: string[] = [];
      for (let j = i; j < i + 10_000; j++) {
        defs.push(`s-${j}`, JSON.stringify({ cron: '0 3 * * *', timeZone: 'UTC', jitterMs: 0, startingDeadlineMs: null, concurrencyPolicy: 'Allow', onResume: 'skip', definitionHash: 'h', replica: 'gone', loadedAtMs: 0 }));
        oks.push(`s-${j}`, String(Date.now()));
      }
      await r.hset(keys.definitions, ...defs);
      await r.hset(keys.lastSuccess, ...oks);
    }
    await r.hset(keys.suspended, 's-77777', JSON.stringify({ sinceMs: Date.now(), by: 'test', note: 'why not' }));
    const before = await commandCalls(flock);
    const t0 = Date.now();
    const out = run(['status', '--namespace', 'huge', '--redis', flock.redis.url]);
    const tookMs = Date.now() - t0;
    const after = await commandCalls(flock);
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^schedules: 100000 published, suspended: 1 at run time \(cronflock suspend\), 0 by their definition \(suspend: true\)$/m);
    expect(out.stdout).toMatch(/^ {2}s-77777 .* yes, .*: why not$/m);
    expect(out.stdout).toContain('(50 of 100000 shown');
    expect(tookMs).toBeLessThan(15_000); // a process start and a few round trips; generous for a loaded machine
    let total = 0;
    for (const [cmd, n] of after) total += n - (before.get(cmd) ?? 0);
    expect(total).toBeLessThan(200); // not one per schedule
    // No whole-hash read: this namespace has no run records, so not even a record's HGETALL.
    for (const whole of ['hgetall', 'hkeys', 'hvals']) expect((after.get(whole) ?? 0) - (before.get(whole) ?? 0), whole).toBe(0);
  });

  it('starts a private redis-server when no Redis is given, and says so', async () => {
    const env = { ...process.env };
    delete env.REDIS_URL;
    const child = spawn(process.execPath, [BIN, 'start', 'examples/schedules.yaml', '--replica', 'solo'], { cwd: ROOT, env });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    await until(() => out.includes('"msg":"replica running"'), 30_000, 'replica running');
    expect(out).toMatch(/started a private redis-server on redis:\/\/127\.0\.0\.1:\d+/);
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('exits with a message saying how to get Redis when there is none', () => {
    // A PATH with node and nothing else (node may live in /usr/bin beside redis-server).
    const bin = mkdtempSync(join(tmpdir(), 'cronflock-path-'));
    symlinkSync(process.execPath, join(bin, 'node'));
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: bin };
    delete env.REDIS_URL;
    const r = run(['start', 'examples/schedules.yaml'], env);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/redis-server is not on PATH\. Install Redis 7 .*REDIS_URL=redis:\/\/host:6379/);
  });

  it('refuses a bad schedule file at start, before scheduling anything', () => {
    const bad = flock.writeSchedules('schedules:\n  - name: Bad_Name\n    cron: "* * * * *"\n    job: {kind: http, url: http://127.0.0.1/}\n', 'bad2.yaml');
    const r = run(['start', bad, '--redis', flock.redis.url]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${bad}:2:11: schedules[0].name:`);
    expect(r.stderr).toContain('no valid schedules');
  });

  it('refuses a Redis database index the server does not have instead of using database 0', () => {
    const r = run(['runs', '--redis', `${flock.redis.url}/99`]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('the server has no database 99');
  });

  it('exits when the reader of its output goes away (`cronflock start bad.yaml | head -1`)', async () => {
    const lines = Array.from({ length: 400 }, (_, i) => `  - { name: a${i}, cron: "99 * * * *", job: { kind: http, url: "http://127.0.0.1/" } }`);
    const bad = flock.writeSchedules(`schedules:\n${lines.join('\n')}\n`, 'many-bad.yaml');
    const child = spawn(process.execPath, [BIN, 'start', bad, '--redis', flock.redis.url], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    // Like `head -1`: read the first chunk of the log, then close the pipe.
    child.stdout.once('data', () => child.stdout.destroy());
    child.stderr.resume();
    const exited = await Promise.race([
      new Promise<boolean>((resolve) => child.once('exit', () => resolve(true))),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000)),
    ]);
    if (!exited) child.kill('SIGKILL');
    expect(exited).toBe(true);
  });

  it('says what is wrong on bad input in one line and exits 2; help lists the environment and defaults', () => {
    for (const args of [['runs', '--limit', 'x'], ['start'], ['bogus'], ['status', '--bogus'], ['next', 'examples/', '-n', '0']]) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n').length, r.stderr).toBeLessThanOrEqual(2);
      expect(r.stderr).not.toContain('Options:');
    }
    expect(run(['runs', '--limit', 'x']).stderr).toMatch(/argument 'x' is invalid\. must be a whole number ≥ 1\n\(add --help for usage\)/);
    // A flag that means nothing without another one is refused before anything starts (it was ignored).
    const wait = spawnSync(process.execPath, [BIN, 'start', 'examples/schedules.yaml', '--redis-wait-timeout', '250ms', '--redis', flock.redis.url], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(wait.status, wait.stderr).toBe(2);
    expect(wait.stderr).toMatch(/--redis-wait-timeout 250ms has no effect without --redis-wait-replicas of 1 or more .*add --redis-wait-replicas <n>/);
    const help = run(['--help']);
    expect(help.status).toBe(0);
    for (const v of ['REDIS_URL', 'REDIS_TLS_CA_FILE', 'CRONFLOCK_NAMESPACE', 'CRONFLOCK_REPLICA', 'CRONFLOCK_ADMIN', 'CRONFLOCK_LOG_LEVEL', 'Exit codes']) {
      expect(help.stdout).toContain(v);
    }
    const start = run(['start', '--help']).stdout.replace(/\s+/g, ' '); // help text wraps at 80 columns
    for (const t of ['(default 4s)', '(default 10s)', '(default 1h)', '(default 200)', 'env: CRONFLOCK_ADMIN', 'env: REDIS_URL', 'env: CRONFLOCK_NAMESPACE', 'default: "cronflock"']) {
      expect(start).toContain(t);
    }
    expect(run(['--version']).stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });

  it('`audit` prints control characters of a reason escaped (no terminal escape sequence reaches the terminal)', async () => {
    const ns = 'audit-escape';
    const reason = 'migrate\x1b[2J\x1b]0;pwned\x07\r\nFAKE ENTRY\x9b31m\u202eevil';
    await recordAudit(flock.redisClient, new Keyspace(ns), { who: 'mallory', via: 'api', action: 'suspend', schedule: 'x', reason, outcome: 'suspended' });
    const r = run(['audit', '--namespace', ns, '--redis', flock.redis.url]);
    expect(r.status, r.stderr).toBe(0);
    // eslint-disable-next-line no-control-regex -- the assertion looks for raw control characters
    for (const line of r.stdout.split('\n')) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(r.stdout).toContain('migrate\\x1b[2J\\x1b]0;pwned\\x07\\r\\nFAKE ENTRY\\x9b31m\\u202eevil');
    expect(r.stdout.trim().split('\n')).toHaveLength(2); // the header and the one entry
    // --json keeps the reason as it was given (JSON escapes it).
    expect((JSON.parse(run(['audit', '--namespace', ns, '--json', '--redis', flock.redis.url]).stdout) as { reason: string }[])[0]!.reason).toBe(reason);
  });

  it('runs from the TypeScript sources too (package.json found from either place)', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'runner/cli/main.ts', '--version'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('explains an unreachable Redis in words with a hint, without the client internals', async () => {
    const port = await freePort();
    for (const cmd of ['runs', 'status', 'suspend x']) {
      const r = run([...cmd.split(' '), '--redis', `redis://127.0.0.1:${port}`]);
      expect(r.status, cmd).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^cronflock: .*redis://127\\.0\\.0\\.1:${port}: nothing accepts connections there \\(connection refused\\)\n  hint: is Redis running`));
      expect(r.stderr).not.toMatch(/maxRetriesPerRequest|max retries|enableOfflineQueue|Stream isn't writeable/);
    }
  });

  it('gives up with the cause when Redis accepts the connection but never answers (a paused server), every Redis command alike', async () => {
    const srv = await RedisServerProcess.start();
    process.kill(srv.pid!, 'SIGSTOP');
    try {
      const commands = ['status', 'runs', 'audit', 'suspend x --reason test', 'resume x --reason test', 'trigger x', 'backfill x --from 2026-01-01T00:00:00Z --to 2026-01-01T00:05:00Z'];
      for (const cmd of commands) {
        const t0 = Date.now();
        const r = spawnSync(process.execPath, [BIN, ...cmd.split(' '), '--redis', srv.url], {
          cwd: ROOT,
          env: { ...process.env, CRONFLOCK_REDIS_TIMEOUT: '2' },
          encoding: 'utf8',
          timeout: 30_000, // it hung forever before
        });
        expect(r.error, cmd).toBeUndefined();
        expect(r.status, `${cmd}: ${r.stderr}`).toBe(2);
        expect(Date.now() - t0, cmd).toBeLessThan(20_000);
        expect(r.stderr, cmd).toContain(`${srv.url}: Redis accepted`);
        expect(r.stderr, cmd).toMatch(/Redis accepted the connection but did not answer within 2 s\n {2}hint: is the server paused.*--redis-timeout/);
      }
    } finally {
      process.kill(srv.pid!, 'SIGCONT');
      await srv.stop();
    }
  });

  it('says "is the server TLS?" within seconds when rediss:// names a plain Redis', () => {
    const tls = flock.redis.url.replace('redis://', 'rediss://');
    for (const args of [['runs', '--redis', tls], ['start', 'examples/schedules.yaml', '--redis', tls, '--admin', 'off']]) {
      const t0 = Date.now();
      const r = run(args);
      expect(Date.now() - t0, args[0]).toBeLessThan(8_000); // a process start and ~1 s; it was ~21 s
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('TLS handshake failed — is the server TLS?');
      expect(r.stderr).toMatch(/use redis:\/\//);
    }
  });

  it('logs a final failure at error and a retry at warn, so a warn filter keeps both', async () => {
    const file = flock.writeSchedules(
      `schedules:\n  - { name: flaky, cron: "* * * * * *", retries: 1, retryBackoff: 100ms, job: { kind: http, url: "http://127.0.0.1:9/x", timeout: 1s } }\n`,
      'flaky.yaml',
    );
    const r = await flock.startReplica({ name: 'levels', schedules: file, namespace: 'levels' });
    try {
      const retry = await r.waitForLog((l) => l.msg === 'run failed; retrying', 15_000, 'a retry');
      const final = await r.waitForLog((l) => l.msg === 'run finished' && l.state === 'failed', 15_000, 'a final failure');
      expect(retry.level).toBe(40);
      expect(final.level).toBe(50);
    } finally {
      await r.stop();
    }
  });

  it('runs the demo flock the README starts with `npm start`', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, CRONFLOCK_DEMO_PORT: '0' };
    delete env.REDIS_URL;
    const r = spawnSync('npm', ['start', '--', '--seconds', '12'], { cwd: ROOT, env, encoding: 'utf8', timeout: 90_000 });
    expect(r.status, r.stderr).toBe(0);
    const started = r.stdout.split('\n').filter((l) => / due \d\d:\d\d:\d\d\.\d{3} {2}fire \d\d:\d\d:\d\d\.\d{3} {2}start /.test(l));
    expect(started.length).toBeGreaterThanOrEqual(3);
    expect(r.stdout).toMatch(/receiver {2}\/hook ← ping-billing@/);
    expect(r.stdout).toMatch(/done: the receiver got [1-9]\d* calls/);
  });
});
