/**
 * burst: S schedules all due at the same instant once an hour (`<s> <m> * * * *`, the 6-field equivalent of
 * `0 * * * *` placed a little after start-up), with jitter 0 and with a 60 s jitter window: time until every
 * occurrence started, lateness after the fire time, and the largest per-second start rate over the mean one.
 *
 *   --schedules 100000 --replicas 3 --jitters 0,60s --max-wait 300 (s, after the due time)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Keyspace } from '../../runner/redis/keys.js';
import { occurrenceKey } from '../../runner/schedule/occurrence.js';
import { parseDurationMs } from '../../runner/time/duration.js';
import { ProcWatch, ReplicaProc } from '../lib/procs.js';
import { counterDelta, redisCounters } from '../lib/redis-stats.js';
import { BenchRedis } from '../lib/redis.js';
import { report } from '../lib/report.js';
import { dist3, Flags, fmt, NOOP_JOB, pct, ratio, sleep } from '../lib/util.js';

interface BurstResult {
  jitter: string;
  n: number;
  started: number;
  final: number;
  readyBeforeDueMs: number;
  allStartedAfterDueMs: number;
  lateness: number[];
  maxRate: number;
  meanRate: number;
  redisCpuMs: number;
  redisCalls: number;
  cpuMs: number;
  peakRssMb: number;
  error?: string;
}

async function burstOnce(redis: BenchRedis, probe: Redis, o: { schedules: number; replicas: number; jitter: string; maxWaitS: number }): Promise<BurstResult> {
  const jitterMs = o.jitter === '0' ? 0 : parseDurationMs(o.jitter);
  // Start-up: loading costs about 0.5 ms of CPU per schedule and replica (measured), on 2 shared cores.
  const leadMs = 40_000 + o.schedules * o.replicas * 0.35;
  const dueMs = Math.ceil((Date.now() + leadMs) / 1000) * 1000;
  const d = new Date(dueMs);
  const cron = `${d.getUTCSeconds()} ${d.getUTCMinutes()} * * * *`;
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-burst-'));
  const file = join(dir, 'burst.yaml');
  const names: string[] = [];
  let yaml = 'schedules:\n';
  for (let i = 0; i < o.schedules; i++) {
    names.push(`h${i}`);
    yaml += `  - {name: h${i}, cron: "${cron}"${jitterMs ? `, jitter: ${o.jitter}` : ''}, job: {kind: module, path: ${NOOP_JOB}, isolation: none}}\n`;
  }
  writeFileSync(file, yaml);
  const procs: ReplicaProc[] = [];
  const res: BurstResult = {
    jitter: o.jitter,
    n: o.schedules,
    started: 0,
    final: 0,
    readyBeforeDueMs: 0,
    allStartedAfterDueMs: NaN,
    lateness: [],
    maxRate: NaN,
    meanRate: NaN,
    redisCpuMs: 0,
    redisCalls: 0,
    cpuMs: 0,
    peakRssMb: 0,
  };
  try {
    const started = await Promise.allSettled(
      Array.from({ length: o.replicas }, (_, i) =>
        ReplicaProc.start({ name: `h${i + 1}`, schedules: file, redisUrl: redis.url, args: ['--concurrency', '5000'], probe, readyTimeoutMs: leadMs + 60_000 }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') procs.push(s.value);
    const bad = started.find((s) => s.status === 'rejected');
    if (bad) throw (bad as PromiseRejectedResult).reason;
    res.readyBeforeDueMs = dueMs - Date.now();
    if (res.readyBeforeDueMs < 3000) throw new Error(`replicas ready only ${res.readyBeforeDueMs} ms before the due time`);
    const watch = new ProcWatch(() => procs.map((p) => p.pid)).start(250);
    await sleep(Math.max(0, dueMs - 4000 - Date.now())); // planning starts lookahead (3 s) before
    const c0 = await redisCounters(probe, redis.runId);
    const keys = new Keyspace();
    // Done when nothing is open any more (every occurrence recorded and final) after the window, or max-wait.
    await sleep(Math.max(0, dueMs + jitterMs - Date.now()));
    const end = dueMs + o.maxWaitS * 1000;
    while (Date.now() < end) {
      await sleep(1000);
      const [pending, recorded] = await Promise.all([probe.zcard(keys.pending), probe.dbsize()]);
      if (pending === 0 && recorded > o.schedules) break;
    }
    const c1 = await redisCounters(probe, redis.runId);
    watch.stop();
    const dlt = counterDelta(c0, c1);
    res.redisCpuMs = dlt.cpuMs;
    res.redisCalls = dlt.calls;
    res.cpuMs = [...watch.cpuMs().values()].reduce((a, b) => a + b, 0);
    res.peakRssMb = Math.max(0, ...watch.maxRssKb.values()) / 1024;
    await Promise.all(procs.map((p) => p.kill()));
    const starts: number[] = [];
    for (let i = 0; i < names.length; i += 5000) {
      const pipe = probe.pipeline();
      for (const n of names.slice(i, i + 5000)) pipe.hmget(keys.occurrence(occurrenceKey(n, dueMs)), 'firstStartMs', 'fireMs', 'state');
      for (const [err, v] of (await pipe.exec()) ?? []) {
        if (err) throw err;
        const [first, fire, state] = v as (string | null)[];
        if (state && state !== 'scheduled' && state !== 'running') res.final++;
        if (first) {
          starts.push(Number(first));
          res.lateness.push(Number(first) - Number(fire));
        }
      }
    }
    res.started = starts.length;
    if (starts.length > 0) {
      const last = starts.reduce((a, b) => Math.max(a, b), -Infinity);
      res.allStartedAfterDueMs = last - dueMs;
      const perSec = new Map<number, number>();
      for (const s of starts) perSec.set(Math.floor((s - dueMs) / 1000), (perSec.get(Math.floor((s - dueMs) / 1000)) ?? 0) + 1);
      res.maxRate = Math.max(...perSec.values());
      res.meanRate = starts.length / Math.max(1, Math.ceil((last - dueMs) / 1000));
    }
  } catch (err) {
    res.error = (err as Error).message;
  } finally {
    await Promise.all(procs.map((p) => p.kill()));
    await probe.flushall();
    rmSync(dir, { recursive: true, force: true });
  }
  return res;
}

export async function burst(f: Flags): Promise<void> {
  const schedules = f.num('schedules', 100_000);
  const replicas = f.num('replicas', 3);
  const jitters = f.list('jitters', ['0', '60s']);
  const maxWaitS = f.num('max-wait', 300);
  const redis = await BenchRedis.start();
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 3 });
  const results: BurstResult[] = [];
  try {
    for (const jitter of jitters) {
      process.stdout.write(`burst: ${schedules} schedules, jitter ${jitter} …\n`);
      results.push(await burstOnce(redis, probe, { schedules, replicas, jitter, maxWaitS }));
    }
  } finally {
    probe.disconnect();
    await redis.cleanup();
  }
  const rows: [string, (r: BurstResult) => string, ((r: BurstResult) => number)?][] = [
    ['occurrences started / final', (r) => `${r.started} / ${r.final}`],
    ['time until all started, after the due time (s)', (r) => fmt(r.allStartedAfterDueMs / 1000, 1), (r) => r.allStartedAfterDueMs],
    ['start lateness after fire p50 / p99 / max (ms); ratio of p99', (r) => dist3(r.lateness), (r) => pct(r.lateness, 99)],
    ['largest per-second start rate / mean rate', (r) => `${fmt(r.maxRate)} / ${fmt(r.meanRate)} = ${fmt(r.maxRate / r.meanRate, 1)}`, (r) => r.maxRate / r.meanRate],
    ['Redis CPU per occurrence (µs)', (r) => fmt((r.redisCpuMs * 1000) / r.started), (r) => (r.redisCpuMs * 1000) / r.started],
    ['Redis commands per occurrence', (r) => fmt(r.redisCalls / r.started, 1), (r) => r.redisCalls / r.started],
    ['replica CPU, all replicas, from 4 s before the due time to the end (s)', (r) => fmt(r.cpuMs / 1000, 1), (r) => r.cpuMs],
    ['peak RSS of one replica (MB)', (r) => fmt(r.peakRssMb), (r) => r.peakRssMb],
    ['replicas ready before the due time (s)', (r) => fmt(r.readyBeforeDueMs / 1000, 1)],
  ];
  const [a, b] = results;
  await report({
    title: `burst: ${schedules} schedules due at the same instant (hourly, 6-field), ${replicas} replicas`,
    header: ['figure', ...results.map((r) => `jitter ${r.jitter}`), ...(b ? [`jitter ${b.jitter} / jitter ${a!.jitter}`] : [])],
    rows: rows.map(([name, cell, num]) => [name, ...results.map(cell), ...(b ? [num ? ratio(num(b), num(a!)) : '–'] : [])]),
    notes: results.filter((r) => r.error).map((r) => `jitter ${r.jitter}: ${r.error}`),
  }, { key: `burst ${replicas}×${schedules}` });
}
