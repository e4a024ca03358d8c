/**
 * What `cronflock start` does before it runs, and what it leaves for later (issue 16, "set-up until running"):
 * the schedule files are read and compiled once, also when the stored schedules are combined with them, and a
 * replica that needs no dashboard, e-mail, Kubernetes, S3 or tracing does not import their libraries.
 * Not timings: what is loaded and how often.
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Flock, until } from '../support/flock.js';
import { ReplicaProcess } from '../support/replica.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { freePort, RedisServerProcess } from '../../runner/redis/server-process.js';

/** Packages a replica of http and module jobs must not import at start (each a lazy import somewhere). */
const NOT_AT_START = ['nodemailer', 'hono', '@hono/node-server', 'cronstrue', '@kubernetes/client-node', '@aws-sdk/client-s3', '@opentelemetry/sdk-trace-base'];

describe('cronflock start: set-up', () => {
  let flock: Flock;
  let dir: string;
  let hook: string;
  beforeAll(async () => {
    flock = await Flock.start();
    dir = mkdtempSync(join(tmpdir(), 'cronflock-start-cost-'));
    // An ESM resolve hook in the replica reports every bare package it resolves.
    writeFileSync(
      join(dir, 'resolve.mjs'),
      `export async function resolve(s, c, next) {
  if (!s.startsWith('.') && !s.startsWith('/') && !s.startsWith('node:') && !s.startsWith('file:')) process.stderr.write('RESOLVED ' + s + '\\n');
  const r = await next(s, c);
  const cli = /\\/dist\\/runner\\/cli\\/([a-z-]+\\.js)$/.exec(r.url);
  if (cli) process.stderr.write('CLI ' + cli[1] + '\\n');
  return r;
}\n`,
    );
    hook = join(dir, 'hook.mjs');
    writeFileSync(hook, `import { register } from 'node:module';\nregister('./resolve.mjs', import.meta.url);\n`);
  });
  afterAll(() => flock?.close());

  it('checks each module job once at start, although the stored schedules are combined with the files after Redis answers', async () => {
    // The module's top level appends a line each time it is imported: the load-time check (a fresh child process)
    // is the only import before its first run, which is hours away.
    const marker = join(dir, 'imports.txt');
    const job = join(dir, 'job.mjs');
    writeFileSync(job, `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(marker)}, 'imported\\n');\nexport default { run() {} };\n`);
    const file = flock.writeSchedules(`schedules:\n  - { name: m, cron: "0 3 * * *", job: { kind: module, path: ${job}, isolation: none } }\n`, 'module-once.yaml');
    const r = await flock.startReplica({ name: 'once', schedules: file });
    expect(r.lines.some((l) => l.msg === 'replica running')).toBe(true);
    expect(existsSync(marker)).toBe(true);
    expect(readFileSync(marker, 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
    await r.stop();
  });

  it('still reads a schedule file edited while the replica waited for Redis (the files are reused only when unchanged)', async () => {
    const file = flock.writeSchedules('schedules:\n  - { name: before, cron: "0 3 * * *", job: { kind: http, url: "http://127.0.0.1:9/x" } }\n', 'edited.yaml');
    const port = await freePort();
    const r = await ReplicaProcess.start({ name: 'edited', schedules: file, redisUrl: `redis://127.0.0.1:${port}`, waitFor: 'nothing' });
    flock.replicas.push(r);
    await r.waitForLog((l) => String(l.msg).startsWith('cannot reach Redis yet'), 15_000, 'waiting for Redis');
    flock.writeSchedules('schedules:\n  - { name: after-the-edit, cron: "0 3 * * *", job: { kind: http, url: "http://127.0.0.1:9/x" } }\n', 'edited.yaml');
    const late = await RedisServerProcess.start({ port });
    try {
      await r.waitForLog((l) => l.msg === 'replica running', 30_000, 'start once Redis is there');
      const redis = new Redis(late.url);
      try {
        // What it published is what it runs: the edited file.
        await until(async () => (await redis.hkeys(new Keyspace().definitions)).length > 0, 10_000, 'definitions published');
        expect(await redis.hkeys(new Keyspace().definitions)).toEqual(['after-the-edit']);
      } finally {
        redis.disconnect();
      }
    } finally {
      await r.stop();
      await late.cleanup();
    }
  });

  it('is ready (/readyz 200) when it says it runs: readiness does not wait for the next PING of the admin loop', async () => {
    // The admin loop's first PING goes out before the commands connection is ready and fails at once; its next
    // turn is a second later. The clock sync of the start is Redis answering on that connection: it counts.
    const file = flock.writeSchedules('schedules:\n  - { name: r, cron: "0 3 * * *", job: { kind: http, url: "http://127.0.0.1:9/x" } }\n', 'ready.yaml');
    const r = await flock.startReplica({ name: 'ready', schedules: file });
    const res = await fetch(`${r.adminUrl}/readyz`);
    const body = await res.text();
    expect(body).toContain('"ready":true');
    expect(res.status).toBe(200);
    await r.stop();
  });

  it('imports no dashboard server, e-mail, Kubernetes, S3 or tracing library, nor the other commands, for a replica of http and module jobs', async () => {
    const job = join(dir, 'noop.mjs');
    writeFileSync(job, 'export default { run() {} };\n');
    const file = flock.writeSchedules(
      `schedules:\n  - { name: h, cron: "0 3 * * *", job: { kind: http, url: "http://127.0.0.1:9/x" } }\n  - { name: n, cron: "0 3 * * *", job: { kind: module, path: ${job}, isolation: none } }\n`,
      'light.yaml',
    );
    const r = await flock.startReplica({ name: 'light', schedules: file, env: { NODE_OPTIONS: `--import ${hook}` } });
    const resolved = new Set([...r.stderr.join('').matchAll(/^RESOLVED (\S+)$/gm)].map((m) => m[1]!));
    // The hook works: the packages every replica needs are seen.
    expect(resolved).toContain('bullmq');
    expect(resolved).toContain('ioredis');
    for (const p of NOT_AT_START) expect([...resolved].filter((s) => s === p || s.startsWith(`${p}/`)), p).toEqual([]);
    // …nor the modules of the other commands (main.ts registers only `start` for a replica).
    const cli = new Set([...r.stderr.join('').matchAll(/^CLI (\S+)$/gm)].map((m) => m[1]!));
    expect(cli).toContain('start-command.js');
    const others = ['status-command.js', 'runs-command.js', 'control-commands.js', 'store-commands.js', 'rbac-command.js', 'restore-command.js', 'convert-command.js', 'audit-command.js', 'alert-rules-command.js'];
    expect(others.filter((m) => cli.has(m))).toEqual([]);
    await r.stop();
  });
});
