/**
 * Replicas of one flock that register different handlers (applications whose services share a namespace, or a
 * rollout adding a handler): a delivery that reaches a replica without the job's handler is handed to a live
 * replica that registered it (runner/engine/handoffs.ts), so runs keep their times. Given back to the shared
 * queue alone, it went to a replica without the handler again as often as those asked first (two of three here),
 * a second late each time. Real replica processes (the library's startReplica) on a real redis-server.
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectFlock, type Flock } from '../../runner/library/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { sleep } from '../support/flock.js';
import { startAppReplica } from '../support/app-replica.js';

const NS = 'hand';

let server: RedisServerProcess;
let redis: Redis;
let flock: Flock;
const procs: ChildProcess[] = [];

async function startApp(name: string, handlers: string): Promise<ChildProcess> {
  const p = await startAppReplica(server.url, name, NS, handlers);
  procs.push(p);
  return p;
}

beforeAll(async () => {
  server = await RedisServerProcess.start();
  redis = new Redis(server.url);
  flock = await connectFlock({ redis: server.url, namespace: NS, by: 'test' });
});
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await flock.close();
  redis.disconnect();
  await server.cleanup();
});

it('hands a delivery to a replica that registered its handler: every run of a handler one replica in three has starts on time', async () => {
  for (const [name, handlers] of [['has-rare', 'rare,common'], ['common-1', 'common'], ['common-2', 'common']] as const) await startApp(name, handlers);
  for (const [name, handler] of [['rare-job', 'rare'], ['common-job', 'common']]) {
    expect((await flock.schedules.upsert({ name: name!, cron: '* * * * * *', job: { kind: 'handler', handler: handler!, params: { v: 1 } } })).ok).toBe(true);
  }
  const from = Date.now() + 4_000; // applied everywhere, capabilities published
  await sleep(16_000);
  const to = Date.now() - 2_500;
  const calls = (await redis.lrange('{acc}:calls', 0, -1)).map((l) => JSON.parse(l) as { s: string; due: number; fire: number; start: number; r: string });
  const rare = calls.filter((c) => c.s === 'rare-job' && c.due >= from && c.due <= to);
  const dues = new Set(rare.map((c) => c.due));
  const gaps: string[] = [];
  for (let t = Math.ceil(from / 1000) * 1000; t <= to; t += 1000) if (!dues.has(t)) gaps.push(new Date(t).toISOString());
  expect(gaps, 'due times of rare-job without a run').toEqual([]);
  expect(rare.every((c) => c.r === 'has-rare')).toBe(true);
  const late = rare.filter((c) => c.start - c.fire > 1_400).map((c) => `${new Date(c.due).toISOString()}: ${c.start - c.fire} ms`);
  expect(late, 'runs of rare-job that started 1.4 s or more after their fire time').toEqual([]);
  // Each occurrence ran once, and the common handler's schedule ran on every replica's share as before.
  const keys = calls.map((c) => `${c.s}@${c.due}`);
  expect(keys.length - new Set(keys).size).toBe(0);
  expect(calls.filter((c) => c.s === 'common-job' && c.due >= from && c.due <= to).length).toBeGreaterThanOrEqual(Math.floor((to - from) / 1000));
  // The replicas without the handler published nothing; the one with it published both.
  expect(await redis.hgetall(`{${NS}}:replicas:can`)).toEqual({ 'has-rare': 'handler:common handler:rare', 'common-1': 'handler:common', 'common-2': 'handler:common' });
}, 60_000);
