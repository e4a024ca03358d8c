/**
 * Replicas of one flock that register different handlers (applications whose services share a namespace, or a
 * rollout adding a handler): a delivery that reaches a replica without the job's handler is handed to a live
 * replica that registered it (runner/engine/handoffs.ts), so runs keep their times. Given back to the shared
 * queue alone, it went to a replica without the handler again as often as those asked first (two of three here),
 * a second late each time. Real replica processes (the library's startReplica) on a real redis-server.
 *
 * Also: a replica whose membership lapsed (its process stopped past the membership TTL, as a starved one on a
 * loaded CI host) gets hand-offs again once it is back. Its capabilities were removed with its membership and,
 * published only when they changed, never came back: CI saw rare-job without a run for 26 s in a row.
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CAPABILITIES_READ_EVERY_MS } from '../../runner/engine/handoffs.js';
import { connectFlock, type Flock } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { sleep, until } from '../support/flock.js';
import { startAppReplica } from '../support/app-replica.js';

const NS = 'hand';
const keys = new Keyspace(NS);
const ALL_CAPABILITIES = { 'has-rare': 'handler:common handler:rare', 'common-1': 'handler:common', 'common-2': 'handler:common' };

let server: RedisServerProcess;
let redis: Redis;
let flock: Flock;
const procs = new Map<string, ChildProcess>();

/** One run as replica-app.mjs records it. */
interface Call {
  s: string;
  due: number;
  fire: number;
  start: number;
  r: string;
}

async function calls(): Promise<Call[]> {
  return (await redis.lrange('{acc}:calls', 0, -1)).map((l) => JSON.parse(l) as Call);
}

/**
 * The runs of `schedule` due from `fromMs` to `toMs`, and the due times (ISO) among them without one, once every
 * due time has a run or `waitMs` has passed: a run is written when it ends, so one read at once on a loaded host
 * counted runs that had started but not yet been written as missing.
 */
async function runsOf(schedule: string, fromMs: number, toMs: number, waitMs = 10_000): Promise<{ runs: Call[]; gaps: string[]; all: Call[] }> {
  const end = Date.now() + waitMs;
  for (;;) {
    const all = await calls();
    const runs = all.filter((c) => c.s === schedule && c.due >= fromMs && c.due <= toMs);
    const dues = new Set(runs.map((c) => c.due));
    const gaps: string[] = [];
    for (let t = Math.ceil(fromMs / 1000) * 1000; t <= toMs; t += 1000) if (!dues.has(t)) gaps.push(new Date(t).toISOString());
    if (gaps.length === 0 || Date.now() > end) return { runs, gaps, all };
    await sleep(200);
  }
}

/** Runs of `runs` that started 1.4 s or more after their fire time. */
function lateOf(runs: Call[]): string[] {
  return runs.filter((c) => c.start - c.fire > 1_400).map((c) => `${new Date(c.due).toISOString()}: ${c.start - c.fire} ms`);
}

beforeAll(async () => {
  server = await RedisServerProcess.start();
  redis = new Redis(server.url);
  flock = await connectFlock({ redis: server.url, namespace: NS, by: 'test' });
  for (const [name, handlers] of [['has-rare', 'rare,common'], ['common-1', 'common'], ['common-2', 'common']] as const) {
    procs.set(name, await startAppReplica(server.url, name, NS, handlers));
  }
  for (const [name, handler] of [['rare-job', 'rare'], ['common-job', 'common']]) {
    expect((await flock.schedules.upsert({ name: name!, cron: '* * * * * *', job: { kind: 'handler', handler: handler!, params: { v: 1 } } })).ok).toBe(true);
  }
  // Every replica has heartbeated with its capabilities (on a loaded host, its first tick may come late).
  await until(async () => Object.keys(await redis.hgetall(keys.replicaCapabilities)).length === 3, 20_000, 'the three replicas published their capabilities');
});
afterAll(async () => {
  for (const p of procs.values()) {
    if (p.exitCode === null) {
      p.kill('SIGCONT');
      p.kill('SIGKILL');
    }
  }
  await flock.close();
  redis.disconnect();
  await server.cleanup();
});

it('hands a delivery to a replica that registered its handler: every run of a handler one replica in three has starts on time', async () => {
  const from = Date.now() + 4_000; // stored schedules applied everywhere
  await sleep(14_500);
  const to = Date.now() - 1_000;
  const { runs: rare, gaps, all } = await runsOf('rare-job', from, to);
  expect(gaps, 'due times of rare-job without a run').toEqual([]);
  expect(rare.every((c) => c.r === 'has-rare')).toBe(true);
  expect(lateOf(rare), 'runs of rare-job that started 1.4 s or more after their fire time').toEqual([]);
  // Each occurrence ran once, and the common handler's schedule ran on every replica's share as before.
  const occurrences = all.map((c) => `${c.s}@${c.due}`);
  expect(occurrences.length - new Set(occurrences).size).toBe(0);
  expect(all.filter((c) => c.s === 'common-job' && c.due >= from && c.due <= to).length).toBeGreaterThanOrEqual(Math.floor((to - from) / 1000));
  // The replicas without the handler published nothing; the one with it published both.
  expect(await redis.hgetall(keys.replicaCapabilities)).toEqual(ALL_CAPABILITIES);
}, 60_000);

it('gets hand-offs again after its membership lapsed: a replica stopped past the membership TTL (a starved process) publishes its handlers at its next heartbeat, and the runs keep their times', async () => {
  const hasRare = procs.get('has-rare')!;
  hasRare.kill('SIGSTOP');
  try {
    // Past the membership TTL (2 s), another replica's heartbeat drops it, and its capabilities with it.
    await until(
      async () => (await redis.zscore(keys.replicas, 'has-rare')) === null && (await redis.hexists(keys.replicaCapabilities, 'has-rare')) === 0,
      20_000,
      'has-rare dropped from the membership',
    );
  } finally {
    hasRare.kill('SIGCONT');
  }
  // Back, its next heartbeat (one tick) renews the membership and writes its capabilities with it. Published only
  // when they changed, they never came back.
  await until(async () => (await redis.hexists(keys.replicaCapabilities, 'has-rare')) === 1, 10_000, "has-rare's capabilities published again");
  expect(await redis.hgetall(keys.replicaCapabilities)).toEqual(ALL_CAPABILITIES);
  // From when every replica's read of the capabilities (at most CAPABILITIES_READ_EVERY_MS old) is newer.
  const from = Date.now() + CAPABILITIES_READ_EVERY_MS + 1_000;
  await sleep(CAPABILITIES_READ_EVERY_MS + 9_000);
  const to = Date.now() - 1_000;
  const { runs: rare, gaps } = await runsOf('rare-job', from, to);
  expect(gaps, 'due times of rare-job without a run after has-rare came back').toEqual([]);
  expect(rare.every((c) => c.r === 'has-rare')).toBe(true);
  expect(lateOf(rare), 'runs of rare-job that started 1.4 s or more after their fire time').toEqual([]);
}, 90_000);
