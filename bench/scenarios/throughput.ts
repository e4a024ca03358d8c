/**
 * throughput: R replicas × S schedules, each schedule `* * * * * *` (S occurrences offered per second), a no-op
 * job, run three times side by side in one cell: cronflock with its jitter window (the occurrences of a second
 * spread over it), cronflock with jitter 0 (the same burst on the second that BullMQ gets), and BullMQ Job
 * Schedulers (`upsertJobScheduler(id, {pattern: '* * * * * *'})`) with R worker processes. One table per cell,
 * with the ratio of each cronflock column to BullMQ's per row.
 *
 *   --replicas 1,3,5 --schedules 1000,10000,100000   the matrix (default 3 × 1000; the full one takes long)
 *   --seconds 15 --warmup 5        measured window and warm-up per cell
 *   --jitter 999ms                 the jittered column's jitter window (BullMQ has none: all S fire on the second)
 *   --concurrency 200              per replica / per worker (the engine's default; 5000 collapses at 10k/s)
 *   --peers cronflock,cronflock0,bullmq   which systems to run (cronflock0: cronflock with jitter 0)
 *   --log-level warn               the replicas' log level (info adds two JSON lines per run)
 *   --no-aof                       Redis without AOF (default: AOF on, as the README asks of production)
 *   --redis-replicas 1             give each system's redis-server this many Redis replicas (`--replicaof`)
 *   --batch-size 50                cronflock's `--batch-size` (occurrences per live-lane queue job); default: the engine's
 *   --redis-wait-replicas 1        cronflock's `--redis-wait-replicas` (WAIT after each claim and final state);
 *                                  compare runs with the same --redis-replicas and 0 or 1 here for its cost
 *
 * Diagnosis (environment): BENCH_DIAG_DIR=<dir> writes each replica's log lines, the states and reasons of every
 * occurrence fired in the window with how long before its fire time it was planned (<system>-<S>-states.json),
 * and a MONITOR of BENCH_MONITOR_SECONDS (default 3) from 2 s into the window, grouped by script with the commands
 * each ran and its calls per occurrence (<system>-<S>-monitor.json; bench/lib/monitor.ts; MONITOR costs Redis
 * time, so that window's figures are not comparable). BENCH_REPLICA_ARGS adds `cronflock start` flags.
 *
 * Each system runs alone on its own redis-server (a fresh process: no state or AOF of the previous system), so
 * that Redis commands and CPU per occurrence are that system's alone: deltas of INFO commandstats / INFO cpu
 * between the start and the end of the measured window, both snapshots checked to be of that server process.
 *
 * Figures per system: occurrences started per second in the window, start lateness after the fire time (cronflock:
 * claim time on the Redis clock − fire time; BullMQ: processor start − `prevMillis`), Redis commands and Redis CPU
 * per occurrence started in the window, replica CPU and peak RSS (/proc), final states of the counted occurrences.
 * Set-up: from the first spawn until every replica answers /readyz with 200 (BullMQ: the upserts, then every worker
 * `waitUntilReady`), in wall time and in CPU time of all processes (the latter hardly moves with other load).
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { monitorFor } from '../lib/monitor.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Keyspace } from '../../runner/redis/keys.js';
import { occurrenceKey } from '../../runner/schedule/occurrence.js';
import { parseDurationMs } from '../../runner/time/duration.js';
import { forkTracked, killAndWait, nextMessage, procSample, ProcWatch, ReplicaProc } from '../lib/procs.js';
import { counterDelta, redisCounters, topCommands, type RedisCounters } from '../lib/redis-stats.js';
import { BenchRedis } from '../lib/redis.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { report, runConditions } from '../lib/report.js';
import { THROUGHPUT_SYSTEMS, type ThroughputSystem } from '../lib/results.js';
import { DIST_BENCH, dist3, Flags, fmt, NOOP_JOB, pct, ratio, sleep } from '../lib/util.js';

/** Diagnostics (replica logs, a MONITOR summary) go here when set; see bench/lib/monitor.ts. */
const DIAG_DIR = process.env.BENCH_DIAG_DIR;

/** What one system achieved in one cell. */
export interface PhaseResult {
  system: ThroughputSystem;
  setupMs: number;
  /**
   * CPU time of the set-up (ms), all processes: each replica / worker until it was found ready, plus, for BullMQ,
   * the bench process's own share (its `upsertJobScheduler` calls). Unlike `setupMs`, hardly changed by other
   * load on the machine.
   */
  setupCpuMs: number;
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
  /** Final states (at the end of the run) of the occurrences counted as started (cronflock), e.g. {succeeded: 990}. */
  states?: Record<string, number>;
  note?: string;
}

/** Runs the cronflock side of a cell. */
async function cronflockPhase(
  system: ThroughputSystem,
  redis: BenchRedis,
  probe: Redis,
  o: { replicas: number; schedules: number; seconds: number; warmup: number; jitter: string; concurrency: number; logLevel: string; args: string[] },
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
          args: ['--concurrency', String(o.concurrency), ...o.args],
          logLevel: o.logLevel,
          probe,
          readyTimeoutMs: 120_000 + o.schedules * 3 * o.replicas,
          // BENCH_DIAG_DIR: every replica's log lines to <dir>/<system>-<schedules>-b<i>.log
          ...(DIAG_DIR ? { onLine: (line: string) => appendFileSync(join(DIAG_DIR, `${system}-${o.schedules}-b${i + 1}.log`), line + '\n') } : {}),
        }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') procs.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const setupMs = Date.now() - t0Setup;
    const setupCpuMs = procs.reduce((a, p) => a + (p.readyCpuMs ?? 0), 0);
    await sleep(o.warmup * 1000);
    const watch = new ProcWatch(() => procs.map((p) => p.pid)).start();
    const c0 = await redisCounters(probe, redis.runId);
    const t0 = Date.now();
    // BENCH_DIAG_DIR: a MONITOR of BENCH_MONITOR_SECONDS (default 3) from 2 s into the window (it costs Redis time)
    const monitoring = DIAG_DIR
      ? sleep(2000).then(() => monitorFor(redis.url, Number(process.env.BENCH_MONITOR_SECONDS ?? 3), join(DIAG_DIR, `${system}-${o.schedules}-monitor.json`)))
      : Promise.resolve();
    await sleep(o.seconds * 1000);
    const t1 = Date.now();
    const c1 = await redisCounters(probe, redis.runId);
    await monitoring;
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
    const states: Record<string, number> = {};
    const diag = { states: {} as Record<string, number>, planLead: [] as number[], plannedBy: {} as Record<string, number> };
    for (let i = 0; i < names.length; i += step * 200) {
      const pipe = probe.pipeline();
      for (let j = i; j < Math.min(names.length, i + step * 200); j += step) {
        for (const d of dues) pipe.hmget(keys.occurrence(occurrenceKey(names[j]!, d)), 'firstStartMs', 'fireMs', 'state', 'reason', 'plannedAt', 'plannedBy');
      }
      for (const [err, v] of (await pipe.exec()) ?? []) {
        if (err) throw err;
        const [first, fire, state, reason, plannedAt, plannedBy] = v as (string | null)[];
        if (DIAG_DIR && fire && Number(fire) >= t0 && Number(fire) < t1) {
          // every occurrence fired in the window: its state, reason and how late it was planned (plannedAt − fire)
          const k = `${state ?? 'none'} ${(reason ?? '').slice(0, 40)}`;
          diag.states[k] = (diag.states[k] ?? 0) + 1;
          if (plannedAt) diag.planLead.push(Number(fire) - Number(plannedAt));
          if (plannedBy) diag.plannedBy[plannedBy] = (diag.plannedBy[plannedBy] ?? 0) + 1;
        }
        if (first && Number(first) >= t0 && Number(first) < t1) {
          count++;
          lateness.push(Number(first) - Number(fire));
          states[state ?? 'none'] = (states[state ?? 'none'] ?? 0) + step;
        } else if (!first && state === 'scheduled' && Number(fire) < t1 - 1000) backlog++;
      }
    }
    if (DIAG_DIR) {
      const lead = diag.planLead.sort((a, b) => a - b);
      const q = (f: number) => lead[Math.min(lead.length - 1, Math.floor(f * lead.length))];
      const summary = { states: diag.states, plannedBy: diag.plannedBy, planLeadMs: { n: lead.length, p1: q(0.01), p10: q(0.1), p50: q(0.5), p90: q(0.9) } };
      writeFileSync(join(DIAG_DIR, `${system}-${o.schedules}-states.json`), JSON.stringify(summary, null, 1));
    }
    return {
      system,
      setupMs,
      setupCpuMs,
      started: count * step,
      windowMs: t1 - t0,
      lateness,
      redis: counterDelta(c0, c1),
      cpuMsByProc,
      peakRssKbByProc,
      backlog: backlog * step,
      sampled: 1 / step,
      states,
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
  const cpu0 = process.cpuUsage();
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
    const workerCpuMs = await Promise.all(workers.map((w) => nextMessage(w, 'ready', 60_000).then(() => procSample(w.pid)?.cpuMs ?? 0)));
    const setupMs = Date.now() - t0Setup;
    const own = process.cpuUsage(cpu0);
    const setupCpuMs = workerCpuMs.reduce((a, b) => a + b, 0) + (own.user + own.system) / 1000;
    await sleep(o.warmup * 1000);
    const watch = new ProcWatch(() => workers.map((w) => (w.exitCode === null ? w.pid : undefined))).start();
    const c0 = await redisCounters(probe, redis.runId);
    const t0 = Date.now();
    await sleep(o.seconds * 1000);
    const t1 = Date.now();
    const c1 = await redisCounters(probe, redis.runId);
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
      system: 'bullmq',
      setupMs,
      setupCpuMs,
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
/** Times Redis woke per occurrence started (its voluntary context switches: bench/lib/redis-stats.ts). */
const wakeupsPerOcc = (r: PhaseResult): number => r.redis.wakeups / Math.max(1, r.started);
const redisCpuPct = (r: PhaseResult): number => (r.redis.cpuMs / r.windowMs) * 100;
const procCpuPct = (r: PhaseResult): number => (r.cpuMsByProc.reduce((a, b) => a + b, 0) / r.windowMs) * 100;
const procCpuMsPerK = (r: PhaseResult): number => (r.cpuMsByProc.reduce((a, b) => a + b, 0) / r.started) * 1000;
const peakRssMb = (r: PhaseResult): number => Math.max(0, ...r.peakRssKbByProc) / 1024;

const latenessP50 = (r: PhaseResult): number => pct(r.lateness, 50);
const latenessP99 = (r: PhaseResult): number => pct(r.lateness, 99);
const latenessMax = (r: PhaseResult): number => r.lateness.reduce((a, b) => Math.max(a, b), -Infinity);

/** The results of one cell, per system (any may be missing: not run, or failed). */
export type CellResults = Partial<Record<ThroughputSystem, PhaseResult>>;

/** Rows of a cell's table, one column per system of {@link THROUGHPUT_SYSTEMS}, then each cronflock column / BullMQ. */
export function compareRows(cell: CellResults, offered: number): string[][] {
  const b = cell.bullmq;
  const cols = THROUGHPUT_SYSTEMS.map((s) => cell[s.id]);
  const row = (name: string, f: (r: PhaseResult) => number, digits = 0, show?: (r: PhaseResult) => string): string[] => [
    name,
    ...cols.map((r) => (r ? (show ? show(r) : fmt(f(r), digits)) : '–')),
    ...[cell.cronflock, cell.cronflock0].map((c) => (c && b ? ratio(f(c), f(b)) : '–')),
  ];
  const states = (r: PhaseResult | undefined): string =>
    !r ? '–' : r.system === 'bullmq' ? 'n/a (jobs removed on completion)' : Object.entries(r.states ?? {}).map(([k, v]) => `${k} ${v}`).join(', ') || '–';
  return [
    ['offered occurrences / s', ...cols.map(() => String(offered)), '1.00×', '1.00×'],
    row('occurrences started / s', perSec, 0),
    row('start lateness after fire p50 / p99 / max (ms); ratio of p99', latenessP99, 0, (r) => dist3(r.lateness)),
    row('Redis commands per occurrence (incl. inside Lua)', cmdsPerOcc, 1),
    row('Redis CPU per occurrence (µs)', redisUsPerOcc, 0),
    row('Redis wake-ups per occurrence (voluntary context switches)', wakeupsPerOcc, 2),
    row('Redis CPU (% of one core)', redisCpuPct, 0),
    row('replica / worker CPU, all processes (% of one core)', procCpuPct, 0),
    row('replica / worker CPU per 1,000 occurrences (ms)', procCpuMsPerK, 0),
    row('peak RSS of one process (MB)', peakRssMb, 0),
    row('set-up until running (s)', (r) => r.setupMs / 1000, 1),
    row('set-up CPU, all processes (s)', (r) => r.setupCpuMs / 1000, 2),
    [
      'open backlog at the end (fired > 1 s ago, not started)',
      ...cols.map((r) => (!r ? '–' : r.system === 'bullmq' ? 'n/a (skips late iterations)' : r.backlog !== undefined ? String(r.backlog) : '–')),
      '–',
      '–',
    ],
    ['final states of the occurrences started in the window', ...cols.map(states), '–', '–'],
  ];
}

/** The figures of a cell by name (`<system>.<figure>`), for bench/current.json and the targets. */
export function cellFigures(cell: CellResults, offered: number, replicas: number): Record<string, number> {
  const out: Record<string, number> = { offeredPerS: offered, replicas };
  for (const [id, r] of Object.entries(cell) as [ThroughputSystem, PhaseResult][]) {
    Object.assign(out, {
      [`${id}.startedPerS`]: perSec(r),
      [`${id}.latenessP50Ms`]: latenessP50(r),
      [`${id}.latenessP99Ms`]: latenessP99(r),
      [`${id}.latenessMaxMs`]: latenessMax(r),
      [`${id}.cmdsPerOcc`]: cmdsPerOcc(r),
      [`${id}.redisUsPerOcc`]: redisUsPerOcc(r),
      [`${id}.wakeupsPerOcc`]: wakeupsPerOcc(r),
      [`${id}.redisCpuPct`]: redisCpuPct(r),
      [`${id}.procCpuPct`]: procCpuPct(r),
      [`${id}.peakRssMb`]: peakRssMb(r),
      [`${id}.setupS`]: r.setupMs / 1000,
      [`${id}.setupCpuS`]: r.setupCpuMs / 1000,
      ...(r.backlog !== undefined ? { [`${id}.backlog`]: r.backlog } : {}),
    });
  }
  return out;
}

/** A Redis replica of the server at `primaryUrl` (`--replicaof`), once its link to the primary is up. */
async function startFollower(primaryUrl: string, aof: boolean): Promise<RedisServerProcess> {
  const { hostname, port } = new URL(primaryUrl);
  const r = await RedisServerProcess.start({ appendOnly: aof, args: ['--replicaof', hostname, port] });
  const c = new Redis(r.url, { maxRetriesPerRequest: 3 });
  try {
    for (let i = 0; !/master_link_status:up/.test(await c.info('replication')); i++) {
      if (i > 200) throw new Error(`the Redis replica on ${r.url} did not link to ${primaryUrl} within 10 s`);
      await sleep(50);
    }
  } finally {
    c.disconnect();
  }
  return r;
}

export async function throughput(f: Flags): Promise<void> {
  const replicasList = f.nums('replicas', [3]);
  const schedulesList = f.nums('schedules', [1000]);
  const seconds = f.num('seconds', 15);
  const warmup = f.num('warmup', 5);
  const jitter = f.str('jitter', '999ms');
  const concurrency = f.num('concurrency', 200);
  const peers = f.list('peers', THROUGHPUT_SYSTEMS.map((s) => s.id));
  for (const p of peers) {
    if (!THROUGHPUT_SYSTEMS.some((s) => s.id === p)) throw new Error(`--peers: unknown system "${p}"; choose from ${THROUGHPUT_SYSTEMS.map((s) => s.id).join(', ')}`);
  }
  const logLevel = f.str('log-level', 'warn');
  const aof = !f.bool('no-aof');
  const redisReplicas = f.num('redis-replicas', 0);
  const waitReplicas = f.num('redis-wait-replicas', 0);
  const batchSizeFlag = f.num('batch-size', 0);
  const batchSize = batchSizeFlag > 0 ? batchSizeFlag : undefined;
  if (waitReplicas > redisReplicas) throw new Error(`--redis-wait-replicas ${waitReplicas} needs --redis-replicas ${waitReplicas} or more (got ${redisReplicas}): WAIT would time out on every claim`);
  const label = (id: ThroughputSystem): string => (id === 'cronflock' ? `cronflock (jitter ${jitter})` : THROUGHPUT_SYSTEMS.find((s) => s.id === id)!.label);
  for (const schedules of schedulesList) {
    for (const replicas of replicasList) {
      process.stdout.write(`\nthroughput: ${replicas} replicas × ${schedules} schedules …\n`);
      const conditions = await runConditions();
      const cell: CellResults = {};
      const notes: string[] = [];
      for (const { id } of THROUGHPUT_SYSTEMS) {
        if (!peers.includes(id)) continue;
        // Its own redis-server: the counters are this system's alone, and nothing is left over from the last.
        const redis = await BenchRedis.start({ appendOnly: aof });
        const probe = new Redis(redis.url, { maxRetriesPerRequest: 3 });
        const followers: RedisServerProcess[] = [];
        try {
          for (let i = 0; i < redisReplicas; i++) followers.push(await startFollower(redis.url, aof));
          const r =
            id === 'bullmq'
              ? await bullmqPhase(redis, probe, { replicas, schedules, seconds, warmup, concurrency })
              : await cronflockPhase(id, redis, probe, {
                  replicas,
                  schedules,
                  seconds,
                  warmup,
                  jitter: id === 'cronflock' ? jitter : '0s',
                  concurrency,
                  logLevel,
                  args: [
                    ...(waitReplicas > 0 ? ['--redis-wait-replicas', String(waitReplicas)] : []),
                    ...(batchSize !== undefined ? ['--batch-size', String(batchSize)] : []),
                    // BENCH_REPLICA_ARGS: more `cronflock start` flags for a diagnosis run (e.g. "--lookahead 10s")
                    ...(process.env.BENCH_REPLICA_ARGS ? process.env.BENCH_REPLICA_ARGS.split(/\s+/).filter(Boolean) : []),
                  ],
                });
          cell[id] = r;
          notes.push(`${label(id)}: busiest Redis commands ${topCommands(r.redis)}${r.sampled !== undefined && r.sampled < 1 ? `; starts counted on ${(r.sampled * 100).toFixed(0)} % of the schedules and scaled` : ''}`);
        } catch (err) {
          notes.push(`${label(id)} failed: ${(err as Error).message.slice(0, 300)}`);
        } finally {
          probe.disconnect();
          for (const r of followers) await r.cleanup();
          await redis.cleanup();
        }
        await sleep(1000);
      }
      await report(
        {
          title: `throughput: ${replicas} replicas / workers, ${schedules} schedules every second, ${seconds} s window after ${warmup} s warm-up`,
          header: ['figure', ...THROUGHPUT_SYSTEMS.map((s) => label(s.id)), 'jittered / BullMQ', 'jitter 0 / BullMQ'],
          rows: compareRows(cell, schedules),
          notes: [
            `Each system alone on its own redis-server (AOF ${aof ? 'on' : 'off'}, otherwise default settings), one after the other. cronflock: --concurrency ${concurrency}${batchSize !== undefined ? ` --batch-size ${batchSize}` : ''}, log level ${logLevel}; jittered: jitter ${jitter} (the occurrences of a second spread over it); jitter 0: every occurrence fires on the second, as BullMQ's. BullMQ: concurrency ${concurrency} per worker, removeOnComplete.`,
            ...(redisReplicas > 0 ? [`Each redis-server has ${redisReplicas} Redis replica(s) on this machine; cronflock --redis-wait-replicas ${waitReplicas}${waitReplicas > 0 ? ' (WAIT after each claim and final state)' : ' (no WAIT)'}.`] : []),
            ...notes,
          ],
        },
        { key: `throughput ${replicas}×${schedules}${redisReplicas > 0 ? `, ${redisReplicas} Redis replica(s), wait ${waitReplicas}` : ''}`, figures: cellFigures(cell, schedules, replicas), conditions },
      );
    }
  }
}
