/**
 * The CLI as the README tells a user to run it, from the built package (bin/cronflock.js → dist/).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flock, until } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';

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
    const shown = run(['runs', '--schedule', 'hello', '--show', '--redis', flock.redis.url]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`${succeeded[0]!.key} (succeeded):\n  {\n    "status": 200\n  }`);
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

  it('runs the demo flock the README starts with `npm start`', () => {
    const r = spawnSync('npm', ['start', '--', '--seconds', '12'], { cwd: ROOT, encoding: 'utf8', timeout: 90_000 });
    expect(r.status, r.stderr).toBe(0);
    const started = r.stdout.split('\n').filter((l) => / due \d\d:\d\d:\d\d\.\d{3} {2}fire \d\d:\d\d:\d\d\.\d{3} {2}start /.test(l));
    expect(started.length).toBeGreaterThanOrEqual(3);
    expect(r.stdout).toMatch(/receiver {2}\/hook ← ping-billing@/);
    expect(r.stdout).toMatch(/done: the receiver got [1-9]\d* calls/);
  });
});
