/**
 * A change of the store sent to a Redis that then does not answer (a real redis-server paused with SIGSTOP: it
 * takes the command and runs it when it wakes) MAY have taken effect, and every writer says so — as the API's
 * `503 REDIS_OUTCOME_UNKNOWN` does (test/dashboard/redis-away-writes.test.ts) — instead of a plain failure:
 * - `cronflock apply -f` and `cronflock delete` (the built CLI, from dist/: `npm run build` first), with
 *   `--redis-timeout 1`: exit 2, the message says it may have been applied and how to read it back; after SIGCONT
 *   the change did take effect. The CLI connects through a small TCP relay that pauses Redis (SIGSTOP) just
 *   before it forwards the store's write script, so the CLI's reads before it are answered and the write is the
 *   command without an answer.
 * - the library's `schedules.upsert` / `schedules.remove` (`redisTimeoutMs: 1000`): a RedisOutcomeUnknownError
 *   (code REDIS_OUTCOME_UNKNOWN) naming the schedule; after SIGCONT the change did take effect.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectFlock, RedisOutcomeUnknownError } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { loadScript } from '../../runner/redis/script-loader.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { ScheduleStore } from '../../runner/store/store.js';
import { BIN, ROOT } from '../support/replica.js';

let srv: RedisServerProcess;
let redis: Redis;
let dir: string;
let relay: Server;
let relayUrl: string;
const sockets = new Set<Socket>();
/** What the relay pauses Redis on when a chunk holds one of them: a script's EVALSHA or EVAL (undefined: forward everything). */
let pauseOn: string[] | undefined;
let paused = false;
const keys = new Keyspace();
/** A script as it goes over the wire: its sha (EVALSHA) or, on a connection's first use of it, its source (EVAL: ioredis). */
const sent = (name: 'store-upsert' | 'store-remove'): string[] => {
  const lua = loadScript(name).lua;
  return [createHash('sha1').update(lua).digest('hex'), lua.slice(0, 60)];
};

function pause(): void {
  process.kill(srv.pid!, 'SIGSTOP');
  paused = true;
}
function resume(): void {
  if (paused) process.kill(srv.pid!, 'SIGCONT');
  paused = false;
}

/** Runs the CLI through the relay; resolves with its exit code and output. */
function cli(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args, '--redis', relayUrl, '--redis-timeout', '1'], { cwd: ROOT, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const stored = (name: string) => new ScheduleStore(redis, keys).get(name);
async function until(f: () => Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + 20_000;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  srv = await RedisServerProcess.start();
  redis = new Redis(srv.url);
  dir = mkdtempSync(join(tmpdir(), 'cronflock-unknown-'));
  const port = Number(new URL(srv.url).port);
  relay = createServer((down) => {
    const up = connect(port, '127.0.0.1');
    sockets.add(down).add(up);
    down.on('data', (chunk: Buffer) => {
      if (pauseOn !== undefined && !paused && pauseOn.some((m) => chunk.includes(m))) pause(); // before Redis can read it
      up.write(chunk);
    });
    up.pipe(down);
    const close = (): void => {
      down.destroy();
      up.destroy();
    };
    down.on('error', close).on('close', close);
    up.on('error', close).on('close', close);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  relayUrl = `redis://127.0.0.1:${(relay.address() as AddressInfo).port}`;
});
afterAll(async () => {
  resume();
  for (const s of sockets) s.destroy();
  relay?.close();
  redis?.disconnect();
  await srv?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a store change Redis does not answer in time', () => {
  it('cronflock apply -f and cronflock delete say it may have taken effect (read it back, then retry), and it did', async () => {
    const file = join(dir, 'a.yaml');
    writeFileSync(file, 'schedules:\n  - {name: warm, cron: "0 3 * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n');
    expect((await cli('apply', '-f', file)).status).toBe(0); // the scripts are in Redis' cache from here on
    writeFileSync(file, 'schedules:\n  - {name: paused-apply, cron: "0 4 * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n');
    pauseOn = sent('store-upsert');
    let r: Awaited<ReturnType<typeof cli>>;
    try {
      r = await cli('apply', '-f', file);
    } finally {
      pauseOn = undefined;
      resume();
    }
    expect(r.status, r.stdout).toBe(2);
    expect(r.stderr).toMatch(/Redis did not answer this change in time \(no answer within 1 s/);
    expect(r.stderr).toMatch(/it may have been applied, or may still be when Redis answers/);
    expect(r.stderr).toMatch(/Read it back before retrying \(cronflock list --prefix paused-apply/);
    expect(r.stderr).not.toMatch(/cannot store schedules in/); // not the plain failure
    await until(async () => (await stored('paused-apply')) !== undefined, 'the apply stored');
    expect((await stored('paused-apply'))?.definition.cron).toBe('0 4 * * *');

    pauseOn = sent('store-remove');
    try {
      r = await cli('delete', 'warm');
    } finally {
      pauseOn = undefined;
      resume();
    }
    expect(r.status, r.stdout).toBe(2);
    expect(r.stderr).toMatch(/warm: Redis did not answer this change in time .*it may have been applied/);
    expect(r.stderr).not.toMatch(/cannot remove schedules from/);
    await until(async () => (await stored('warm')) === undefined, 'the delete applied');
  }, 60_000);

  it('the library\'s schedules.upsert and schedules.remove throw RedisOutcomeUnknownError, and the change took effect', async () => {
    const flock = await connectFlock({ redis: srv.url, redisTimeoutMs: 1_000, by: 'app' });
    try {
      const def = (name: string) => ({ name, cron: '0 5 * * *', job: { kind: 'http' as const, url: 'http://127.0.0.1:1/x' } });
      expect((await flock.schedules.upsert(def('lib-warm'))).ok).toBe(true);
      let err: unknown;
      pause();
      try {
        err = await flock.schedules.upsert(def('lib-paused')).then(() => undefined, (e: unknown) => e);
      } finally {
        resume();
      }
      expect(err).toBeInstanceOf(RedisOutcomeUnknownError);
      expect(err).toMatchObject({ code: 'REDIS_OUTCOME_UNKNOWN', schedule: 'lib-paused' });
      expect((err as Error).message).toMatch(/schedules\.upsert\("lib-paused"\): Redis did not answer this change in time .*may have been applied.*schedules\.get/);
      await until(async () => (await flock.schedules.get('lib-paused')) !== undefined, 'the upsert stored');

      pause();
      try {
        err = await flock.schedules.remove('lib-warm').then(() => undefined, (e: unknown) => e);
      } finally {
        resume();
      }
      expect(err).toBeInstanceOf(RedisOutcomeUnknownError);
      expect(err).toMatchObject({ code: 'REDIS_OUTCOME_UNKNOWN', schedule: 'lib-warm' });
      await until(async () => (await flock.schedules.get('lib-warm')) === undefined, 'the remove applied');
    } finally {
      resume();
      await flock.close();
    }
  }, 60_000);
});
