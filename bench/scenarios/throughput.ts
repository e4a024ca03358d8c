/**
 * throughput: R replicas × S schedules, each schedule `* * * * * *` (S occurrences offered per second), a no-op
 * job; then the same with BullMQ Job Schedulers (`upsertJobScheduler(id, {pattern: '* * * * * *'})`) and R
 * worker processes, on the same Redis, in the same run.
 *
 *   --replicas 1,3,5 --schedules 1000,10000,100000   the matrix (default 3 × 1000; the full one takes long)
 *   --seconds 15 --warmup 5        measured window and warm-up per cell
 *   --jitter 999ms                 cronflock's jitter window (BullMQ has none: all S fire on the second)
 *   --concurrency 200              per replica / per worker (the engine's default; 5000 collapses at 10k/s)
 *   --peers cronflock,bullmq       which systems to run
 *   --log-level warn               the replicas' log level (info adds two JSON lines per run)
 *
 * Figures per system: occurrences started per second in the window, start lateness after the fire time (cronflock:
 * claim time on the Redis clock − fire time; BullMQ: processor start − `prevMillis`), Redis commands and Redis CPU
 * per started occurrence (INFO commandstats / INFO cpu deltas), replica CPU and peak RSS (/proc).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Keyspace } from '../../runner/redis/keys.js';
import { occurrenceKey } from '../../runner/schedule/occurrence.js';
import { parseDurationMs } from '../../runner/time/duration.js';
import { forkTracked, killAndWait, nextMessage, ProcWatch, ReplicaProc } from '../lib/procs.js';
import { counterDelta, redisCounters, topCommands, type RedisCounters } from '../lib/redis-stats.js';
import { BenchRedis } from '../lib/redis.js';
import { report } from '../lib/report.js';
import { DIST_BENCH, dist3, Flags, fmt, NOOP_JOB, pct, ratio, sleep } from '../lib/util.js';

/** What one system achieved in one cell. */
export interface PhaseResult {
  system: string;
  setupMs: number;
  started: number;
  windowMs: number;
  lateness: number[];
  redis: RedisCounters;
  cpuMsByProc: number[];
  peakRssKbByProc: number[];
  /** Occurrences whose fire time passed more than 1 s before the window's end without a start (cronflock). */
  backlog?: number;
  /** Fraction of schedules sampled to count starts (1 = all). */
  sampled?: number;
  note?: string;
}

/** Runs the cronflock side of a cell. */
async function cronflockPhase(
  redis: BenchRedis,
  probe: Redis,
  o: { replicas: number; schedules: number; seconds: number; warmup: number; jitter: string; concurrency: number; logLevel: string },
): Promise<PhaseResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-bench-'));
  const file = join(dir, 'schedules.yaml');
  const names: string[] = [];
  let yaml = 'schedules:\n';
  for (let i = 0; i < o.schedules; i++) {
    names.push(`b${i}`);
    yaml += `  - {name: b${i}, cron: "* * * * * *", jitter: ${o.jitter}, job: {kind: module, path: ${NOOP_JOB}, isolation: none}}\n`;
  }
  writeFileSync(file, yaml);
  const jitterMs = parseDurationMs(o.jitter);
  const procs: ReplicaProc[] = [];
  const t0Setup = Date.now();
  try {
    const started = await Promise.allSettled(
      Array.from({ length: o.replicas }, (_, i) =>
        ReplicaProc.start({
          name: `b${i + 1}`,
          schedules: file,
          redisUrl: redis.url,
          args: ['--concurrency', String(o.concurrency)],
          logLevel: o.logLevel,
          probe,
          readyTimeoutMs: 120_000 + o.schedules * 3 * o.replicas,
        }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') procs.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const setupMs = Date.now() - t0Setup;
    await sleep(o.warmup * 1000);
    const watch = new ProcWatch(() => procs.map((p) => p.pid)).start();
    const c0 = await redisCounters(probe);
    const t0 = Date.now();
    await sleep(o.seconds * 1000);
    const t1 = Date.now();
    const c1 = await redisCounters(probe);
    watch.stop();
    const cpuMsByProc = [...watch.cpuMs().values()];
    const peakRssKbByProc = [...watch.maxRssKb.values()];
    // Stop the replicas before counting, so that counting does not compete with them (and vice versa).
    await Promise.all(procs.map((p) => p.kill()));

    // Count starts from the run records: every occurrence due since the replicas were spawned (a backlog may
    // start long after its due time); sample schedules when there are very many.
    const keys = new Keyspace();
    const dues: number[] = [];
    for (let d = Math.floor((t0Setup - jitterMs - 2000) / 1000) * 1000; d <= t1; d += 1000) dues.push(d);
    const step = Math.max(1, Math.ceil((names.length * dues.length) / 600_000));
    const lateness: number[] = [];
    let count = 0;
    let backlog = 0;
    for (let i = 0; i < names.length; i += step * 200) {
      const pipe = probe.pipeline();
      for (let j = i; j < Math.min(names.length, i + step * 200); j += step) {
        for (const d of dues) pipe.hmget(keys.occurrence(occurrenceKey(names[j]!, d)), 'firstStartMs', 'fireMs', 'state');
      }
      for (const [err, v] of (await pipe.exec()) ?? []) {
        if (err) throw err;
        const [first, fire, state] = v as (string | null)[];
        if (first && Number(first) >= t0 && Number(first) < t1) {
          count++;
          lateness.push(Number(first) - Number(fire));
        } else if (!first && state === 'scheduled' && Number(fire) < t1 - 1000) backlog++;
      }
    }
    return {
      system: 'cronflock',
      setupMs,
      started: count * step,
      windowMs: t1 - t0,
      lateness,
      redis: counterDelta(c0, c1),
      cpuMsByProc,
      peakRssKbByProc,
      backlog: backlog * step,
      sampled: 1 / step,
    };
  } finally {
    await Promise.all(procs.map((p) => p.kill()));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the BullMQ Job Schedulers side of a cell. */
async function bullmqPhase(
  redis: BenchRedis,
  probe: Redis,
  o: { replicas: number; schedules: number; seconds: number; warmup: number; concurrency: number },
): Promise<PhaseResult> {
  const prefix = '{bullbench}';
  const conn = new Redis(redis.url, { maxRetriesPerRequest: null });
  conn.on('error', () => undefined);
  const queue = new Queue('bench', { connection: conn, prefix });
  const workers: ReturnType<typeof forkTracked>[] = [];
  const t0Setup = Date.now();
  try {
    for (let i = 0; i < o.schedules; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, o.schedules - i) }, (_, j) =>
          queue.upsertJobScheduler(`s${i + j}`, { pattern: '* * * * * *' }, { name: 'noop', data: {}, opts: { removeOnComplete: true, removeOnFail: true } }),
        ),
      );
    }
    for (let i = 0; i < o.replicas; i++) {
      workers.push(
        forkTracked(join(DIST_BENCH, 'peers/bullmq-worker.js'), {
          BENCH_REDIS_URL: redis.url,
          BENCH_PREFIX: prefix,
          BENCH_QUEUE: 'bench',
          BENCH_CONCURRENCY: String(o.concurrency),
        }),
      );
    }
    await Promise.all(workers.map((w) => nextMessage(w, 'ready', 60_000)));
    const setupMs = Date.now() - t0Setup;
    await sleep(o.warmup * 1000);
    const watch = new ProcWatch(() => workers.map((w) => (w.exitCode === null ? w.pid : undefined))).start();
    const c0 = await redisCounters(probe);
    const t0 = Date.now();
    await sleep(o.seconds * 1000);
    const t1 = Date.now();
    const c1 = await redisCounters(probe);
    watch.stop();
    const reports = await Promise.all(
      workers.map((w) => {
        const p = nextMessage<{ count: number; lateness: number[] }>(w, 'report', 60_000);
        w.send({ cmd: 'report', fromMs: t0, toMs: t1 });
        return p;
      }),
    );
    const lateness = reports.flatMap((r) => r.lateness);
    return {
      system: 'BullMQ Job Schedulers',
      setupMs,
      started: reports.reduce((a, r) => a + r.count, 0),
      windowMs: t1 - t0,
      lateness,
      redis: counterDelta(c0, c1),
      cpuMsByProc: [...watch.cpuMs().values()],
      peakRssKbByProc: [...watch.maxRssKb.values()],
    };
  } finally {
    await Promise.all(workers.map((w) => killAndWait(w)));
    await queue.close().catch(() => undefined);
    conn.disconnect();
  }
}

const perSec = (r: PhaseResult): number => r.started / (r.windowMs / 1000);
const cmdsPerOcc = (r: PhaseResult): number => r.redis.calls / r.started;
const redisUsPerOcc = (r: PhaseResult): number => (r.redis.cpuMs * 1000) / r.started;
const redisCpuPct = (r: PhaseResult): number => (r.redis.cpuMs / r.windowMs) * 100;
const procCpuPct = (r: PhaseResult): number => (r.cpuMsByProc.reduce((a, b) => a + b, 0) / r.windowMs) * 100;
const procCpuMsPerK = (r: PhaseResult): number => (r.cpuMsByProc.reduce((a, b) => a + b, 0) / r.started) * 1000;
const peakRssMb = (r: PhaseResult): number => Math.max(0, ...r.peakRssKbByProc) / 1024;

/** Rows comparing cronflock with its peer (either may be missing). */
export function compareRows(c: PhaseResult | undefined, b: PhaseResult | undefined, offered: number): string[][] {
  const row = (name: string, f: (r: PhaseResult) => number, digits = 0, cell?: (r: PhaseResult) => string): string[] => [
    name,
    c ? (cell ? cell(c) : fmt(f(c), digits)) : '–',
    b ? (cell ? cell(b) : fmt(f(b), digits)) : '–',
    c && b ? ratio(f(c), f(b)) : '–',
  ];
  return [
    ['offered occurrences / s', String(offered), String(offered), '1.00×'],
    row('occurrences started / s', perSec, 0),
    row('start lateness after fire p50 / p99 / max (ms); ratio of p99', (r) => pct(r.lateness, 99), 0, (r) => dist3(r.lateness)),
    row('Redis commands per occurrence (incl. inside Lua)', cmdsPerOcc, 1),
    row('Redis CPU per occurrence (µs)', redisUsPerOcc, 0),
    row('Redis CPU (% of one core)', redisCpuPct, 0),
    row('replica / worker CPU, all processes (% of one core)', procCpuPct, 0),
    row('replica / worker CPU per 1,000 occurrences (ms)', procCpuMsPerK, 0),
    row('peak RSS of one process (MB)', peakRssMb, 0),
    row('set-up until running (s)', (r) => r.setupMs / 1000, 1),
    ['open backlog at the end (fired > 1 s ago, not started)', c?.backlog !== undefined ? String(c.backlog) : '–', 'n/a (skips late iterations)', '–'],
  ];
}

export async function throughput(f: Flags): Promise<void> {
  const replicasList = f.nums('replicas', [3]);
  const schedulesList = f.nums('schedules', [1000]);
  const seconds = f.num('seconds', 15);
  const warmup = f.num('warmup', 5);
  const jitter = f.str('jitter', '999ms');
  const concurrency = f.num('concurrency', 200);
  const peers = f.list('peers', ['cronflock', 'bullmq']);
  const logLevel = f.str('log-level', 'warn');
  const redis = await BenchRedis.start({ appendOnly: !f.bool('no-aof') });
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 3 });
  try {
    for (const schedules of schedulesList) {
      for (const replicas of replicasList) {
        process.stdout.write(`\nthroughput: ${replicas} replicas × ${schedules} schedules …\n`);
        let c: PhaseResult | undefined;
        let b: PhaseResult | undefined;
        const notes: string[] = [];
        if (peers.includes('cronflock')) {
          try {
            c = await cronflockPhase(redis, probe, { replicas, schedules, seconds, warmup, jitter, concurrency, logLevel });
            notes.push(`cronflock: busiest Redis commands ${topCommands(c.redis)}${c.sampled !== undefined && c.sampled < 1 ? `; starts counted on ${(c.sampled * 100).toFixed(0)} % of the schedules and scaled` : ''}`);
          } catch (err) {
            notes.push(`cronflock failed: ${(err as Error).message.slice(0, 300)}`);
          }
          await probe.flushall();
          await sleep(1000);
        }
        if (peers.includes('bullmq')) {
          try {
            b = await bullmqPhase(redis, probe, { replicas, schedules, seconds, warmup, concurrency });
            notes.push(`BullMQ: busiest Redis commands ${topCommands(b.redis)}`);
          } catch (err) {
            notes.push(`BullMQ failed: ${(err as Error).message.slice(0, 300)}`);
          }
          await probe.flushall();
          await sleep(1000);
        }
        report({
          title: `throughput: ${replicas} replicas / workers, ${schedules} schedules every second, ${seconds} s window after ${warmup} s warm-up`,
          header: ['figure', 'cronflock', 'BullMQ Job Schedulers', 'cronflock / BullMQ'],
          rows: compareRows(c, b, schedules),
          notes: [
            `Same redis-server (AOF ${f.bool('no-aof') ? 'off' : 'on'}, otherwise default settings), one system after the other. cronflock: jitter ${jitter}, --concurrency ${concurrency}, log level ${logLevel}; BullMQ: concurrency ${concurrency} per worker, removeOnComplete, no jitter (every iteration fires on the second).`,
            ...notes,
          ],
        });
      }
    }
  } finally {
    probe.disconnect();
    await redis.cleanup();
  }
}
