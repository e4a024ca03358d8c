/**
 * idle scale: N registered schedules of which only a few are due (daily crons at an hour 12 h away, spread over
 * its minutes and seconds) plus K schedules due every second, in files of 10k schedules; RSS and CPU per replica
 * while idle, compared with
 * the same flock holding only the K due schedules. Planning must cost what is due, not what is registered.
 *
 *   --schedules 1000000 --due 10 --replicas 1 --seconds 30 --settle 10
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ProcWatch, ReplicaProc } from '../lib/procs.js';
import { counterDelta, redisCounters, topCommands } from '../lib/redis-stats.js';
import { BenchRedis } from '../lib/redis.js';
import { report } from '../lib/report.js';
import { Flags, fmt, NOOP_JOB, ratio, sleep } from '../lib/util.js';

/** Schedules per generated file. */
const FILE_SCHEDULES = 10_000;

interface IdleResult {
  registered: number;
  loadS: number;
  cpuPct: number[];
  rssMb: number[];
  hwmMb: number[];
  redisCpuPct: number;
  redisCallsPerS: number;
  /** The busiest Redis commands of the idle window. */
  busiest?: string;
  error?: string;
}

async function idleOnce(redis: BenchRedis, probe: Redis, o: { registered: number; due: number; replicas: number; seconds: number; settle: number }): Promise<IdleResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-idle-'));
  // A directory of files of at most FILE_SCHEDULES schedules each, as a user with this many would keep them
  // (and as a ConfigMap per team would mount them): the loader then holds one file's YAML document at a time.
  const file = dir;
  const hour = (new Date().getUTCHours() + 12) % 24;
  let parts: string[] = ['schedules:\n'];
  for (let i = 0; i < o.due; i++) parts.push(`  - {name: due-${i}, cron: "* * * * * *", jitter: 999ms, job: {kind: module, path: ${NOOP_JOB}, isolation: none}}\n`);
  for (let i = 0; i < o.registered; i++) {
    parts.push(`  - {name: reg-${i}, cron: "${i % 60} ${Math.floor(i / 60) % 60} ${hour} * * *", job: {kind: module, path: ${NOOP_JOB}, isolation: none}}\n`);
    if (parts.length > FILE_SCHEDULES) {
      writeFileSync(join(dir, `idle-${String(i).padStart(8, '0')}.yaml`), parts.join(''));
      parts = ['schedules:\n'];
    }
  }
  if (parts.length > 1) writeFileSync(join(dir, 'idle-last.yaml'), parts.join(''));
  const procs: ReplicaProc[] = [];
  const res: IdleResult = { registered: o.registered, loadS: NaN, cpuPct: [], rssMb: [], hwmMb: [], redisCpuPct: NaN, redisCallsPerS: NaN };
  const t0 = Date.now();
  try {
    const started = await Promise.allSettled(
      Array.from({ length: o.replicas }, (_, i) =>
        ReplicaProc.start({ name: `i${i + 1}`, schedules: file, redisUrl: redis.url, probe, readyTimeoutMs: 120_000 + o.registered * 2 * o.replicas }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') procs.push(s.value);
    const bad = started.find((s) => s.status === 'rejected');
    if (bad) throw (bad as PromiseRejectedResult).reason;
    res.loadS = (Date.now() - t0) / 1000;
    await sleep(o.settle * 1000);
    const watch = new ProcWatch(() => procs.map((p) => p.pid)).start(1000);
    const c0 = await redisCounters(probe, redis.runId);
    const w0 = Date.now();
    await sleep(o.seconds * 1000);
    const c1 = await redisCounters(probe, redis.runId);
    const wMs = Date.now() - w0;
    watch.stop();
    const dead = procs.filter((p) => !p.alive);
    if (dead.length > 0) {
      const e = await dead[0]!.exited;
      throw new Error(`replica ${dead[0]!.name} exited (${e.code ?? e.signal}) while idle: ${(dead[0]!.stderrTail || dead[0]!.stdoutTail).slice(-600)}`);
    }
    const d = counterDelta(c0, c1);
    res.redisCpuPct = (d.cpuMs / wMs) * 100;
    res.redisCallsPerS = d.calls / (wMs / 1000);
    res.busiest = topCommands(d);
    for (const [pid, ms] of watch.cpuMs()) {
      res.cpuPct.push((ms / wMs) * 100);
      res.rssMb.push((watch.last.get(pid)?.rssKb ?? 0) / 1024);
      res.hwmMb.push((watch.last.get(pid)?.hwmKb ?? 0) / 1024);
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

export async function idle(f: Flags): Promise<void> {
  const registered = f.nums('schedules', [1_000_000]);
  const due = f.num('due', 10);
  const replicas = f.num('replicas', 1);
  const seconds = f.num('seconds', 30);
  const settle = f.num('settle', 10);
  const redis = await BenchRedis.start();
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 3 });
  const results: IdleResult[] = [];
  try {
    for (const n of [0, ...registered]) {
      process.stdout.write(`idle: ${n} registered + ${due} due every second, ${replicas} replicas …\n`);
      results.push(await idleOnce(redis, probe, { registered: n, due, replicas, seconds, settle }));
    }
  } finally {
    probe.disconnect();
    await redis.cleanup();
  }
  const base = results[0]!;
  const avg = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
  const max = (xs: number[]): number => (xs.length ? Math.max(...xs) : NaN);
  await report({
    title: `idle scale: registered schedules (daily, none due) + ${due} schedules due every second, ${replicas} replica(s), ${seconds} s idle window`,
    header: ['registered schedules', 'start-up until running (s)', 'CPU per replica (% of a core)', 'ratio to 0 registered', 'RSS per replica (MB)', 'peak RSS (MB)', 'Redis CPU (%)', 'Redis commands / s'],
    rows: results.map((r) => [
      String(r.registered),
      fmt(r.loadS, 1),
      fmt(avg(r.cpuPct), 2),
      r === base ? '1.00×' : ratio(avg(r.cpuPct), avg(base.cpuPct)),
      fmt(max(r.rssMb)),
      fmt(max(r.hwmMb)),
      fmt(r.redisCpuPct, 2),
      fmt(r.redisCallsPerS),
    ]),
    notes: [
      ...results.filter((r) => r.error).map((r) => `${r.registered} registered: ${r.error}`),
      ...results.filter((r) => r.busiest).map((r) => `${r.registered} registered: busiest Redis commands in the window: ${r.busiest}`),
    ],
  }, {
    key: `idle ${registered.join(',')} registered`,
    // Per registered count n: n.loadS, n.cpuPct (per replica, % of a core), n.rssMb (steady), n.peakRssMb.
    figures: Object.fromEntries(
      results.flatMap((r) => [
        [`${r.registered}.loadS`, r.loadS],
        [`${r.registered}.cpuPct`, avg(r.cpuPct)],
        [`${r.registered}.rssMb`, max(r.rssMb)],
        [`${r.registered}.peakRssMb`, max(r.hwmMb)],
      ]),
    ),
  });
}
