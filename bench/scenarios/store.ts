/**
 * store scale (issue 19): N stored schedules (runner/store/, written through the library's
 * `flock.schedules.upsert`) followed by R replica processes (`cronflock start` without a path: the stored
 * schedules alone), then a steady rate of changes; next to BullMQ's `upsertJobScheduler` for the same counts
 * and rate on its own redis-server in the same run.
 *
 * Figures: RSS per replica (steady, and peak while loading: VmHWM), Redis memory per schedule (INFO memory
 * used_memory delta / N; for cronflock also with the replicas' published definitions and change log), time from
 * an upsert to every replica applying it (p50/p99: the replicas' `stored schedule changes applied` log line with
 * its version, bench/lib/apply-latency.ts), and per change at the steady rate: Redis CPU, Redis commands and
 * replica CPU (summed over the replicas). The schedules are daily http jobs, at an hour 12 h away: none is due in
 * the run (an http job: a stored `module` job's path is checked by importing it at each upsert, ~0.5 s each here).
 *
 *   --schedules 100000 --replicas 3 --rate 1000 --seconds 10 --settle 5 --schedule-metrics on
 *
 * `--schedule-metrics` is passed to the replicas (`on`: six series per schedule, the default; `top:100`: what the
 * README advises for many schedules). BENCH_DIAG_DIR=<dir> keeps each replica's log lines there.
 */
import { appendFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { connectFlock, type Flock } from '../../runner/library/index.js';
import { appliedMark, applyLatencies, type AppliedMark } from '../lib/apply-latency.js';
import { ProcWatch, ReplicaProc } from '../lib/procs.js';
import { counterDelta, redisCounters, topCommands } from '../lib/redis-stats.js';
import { BenchRedis } from '../lib/redis.js';
import { report } from '../lib/report.js';
import { dist3, Flags, fmt, pct, ratio, sleep, until } from '../lib/util.js';

const NAMESPACE = 'storebench';
/** BENCH_DIAG_DIR=<dir>: each replica's log lines to <dir>/store-<N>-s<i>.log (to look for storms, flapping, errors). */
const DIAG_DIR = process.env.BENCH_DIAG_DIR;
/** Upserts in flight while loading. */
const LOAD_CONCURRENCY = 500;

/** What one system measured. */
interface StoreResult {
  loadS: number;
  /** used_memory delta / N after the writes alone. */
  bytesPerSchedule: number;
  /** cronflock: with the replicas running (published definitions, change log). */
  bytesPerScheduleWithReplicas?: number;
  rssMb?: number[];
  peakRssMb?: number[];
  changes: number;
  changesPerS: number;
  redisCpuUsPerChange: number;
  redisCallsPerChange: number;
  replicaCpuUsPerChange?: number;
  latencies?: number[];
  missing?: number;
  busiest?: string;
  /** Starting the replicas on the stored set: until every replica runs it and `settle` seconds after. */
  start?: StartCost;
  error?: string;
}

/**
 * What starting R replicas on N stored schedules cost, from their start until every replica runs the stored set
 * and `settle` seconds more: the Redis work (a busy replica that drops out of the membership must not make the
 * others re-publish every definition: a storm of Redis work while loading), the membership changes the replicas
 * logged, and how many names of the published definitions changed (`{ns}:defs:version`, one per changed name).
 */
interface StartCost {
  /** Until every replica logged that it runs the stored schedules (s). */
  untilAllRunS: number;
  redisCalls: number;
  redisCpuMs: number;
  busiest: string;
  membershipChanges: number;
  definitionsVersions: number;
  /** Load average (1 min) of the machine at the end of the phase. */
  loadAvg: number;
}

/** A daily cron 12 h away from now, at minute/second spread by `i` (6 fields), changed by `turn`. */
function cronOf(i: number, turn = 0): string {
  const hour = (new Date().getUTCHours() + 12) % 24;
  return `${(i + turn) % 60} ${Math.floor(i / 60) % 60} ${hour} * * *`;
}

async function usedMemory(r: Redis): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(String(await r.call('INFO', 'memory')))?.[1] ?? NaN);
}

/**
 * Sends `rate` changes a second for `seconds` (in 20 slices a second); `change(i, turn)` makes one.
 * @returns each change's send time and version (when the system has versions).
 */
async function steadyChanges(n: number, rate: number, seconds: number, change: (i: number, turn: number) => Promise<number | undefined>): Promise<{ sent: { version: number; sentAtMs: number }[]; count: number; ms: number }> {
  const sent: { version: number; sentAtMs: number }[] = [];
  const perSlice = Math.max(1, Math.round(rate / 20));
  const t0 = Date.now();
  let count = 0;
  let turn = 1;
  for (let slice = 0; slice < seconds * 20; slice++) {
    const wait = t0 + slice * 50 - Date.now();
    if (wait > 0) await sleep(wait);
    const inFlight: Promise<void>[] = [];
    for (let k = 0; k < perSlice; k++) {
      const i = Math.floor(Math.random() * n);
      const t = turn++;
      const sentAtMs = Date.now();
      inFlight.push(
        change(i, t).then((version) => {
          if (version !== undefined) sent.push({ version, sentAtMs });
        }),
      );
      count++;
    }
    await Promise.all(inFlight);
  }
  return { sent, count, ms: Date.now() - t0 };
}

async function cronflockRun(o: { n: number; replicas: number; rate: number; seconds: number; settle: number; scheduleMetrics: string }): Promise<StoreResult> {
  const redis = await BenchRedis.start();
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 3 });
  const procs: ReplicaProc[] = [];
  let flock: Flock | undefined;
  const res: StoreResult = { loadS: NaN, bytesPerSchedule: NaN, changes: 0, changesPerS: NaN, redisCpuUsPerChange: NaN, redisCallsPerChange: NaN };
  try {
    flock = await connectFlock({ redis: redis.url, namespace: NAMESPACE, by: 'bench' });
    const f = flock;
    const def = (i: number, turn = 0) => ({ name: `c-${i}`, cron: cronOf(i, turn), job: { kind: 'http', url: 'http://127.0.0.1:9/never' } });
    const m0 = await usedMemory(probe);
    const t0 = Date.now();
    for (let i = 0; i < o.n; i += LOAD_CONCURRENCY) {
      const rs = await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, o.n - i) }, (_, j) => f.schedules.upsert(def(i + j) as never)));
      const bad = rs.find((r) => !r.ok);
      if (bad && !bad.ok) throw new Error(`upsert refused: ${bad.error.message}`);
      if ((i + LOAD_CONCURRENCY) % 100_000 === 0) process.stdout.write(`store: ${i + LOAD_CONCURRENCY} written, ${fmt((Date.now() - t0) / 1000, 1)} s, load ${fmt(loadavg()[0], 1)}\n`);
    }
    res.loadS = (Date.now() - t0) / 1000;
    res.bytesPerSchedule = ((await usedMemory(probe)) - m0) / o.n;
    process.stdout.write(`store: ${o.n} stored in ${fmt(res.loadS, 1)} s; starting ${o.replicas} replicas …\n`);

    const marks: AppliedMark[][] = Array.from({ length: o.replicas }, () => []);
    const loaded = new Set<number>();
    let membershipChanges = 0;
    const s0 = await redisCounters(probe, redis.runId);
    const v0 = Number((await probe.get(`{${NAMESPACE}}:defs:version`)) ?? 0);
    const startT0 = Date.now();
    let allRunAt = NaN;
    const started = await Promise.allSettled(
      Array.from({ length: o.replicas }, (_, r) =>
        ReplicaProc.start({
          name: `s${r + 1}`,
          schedules: '',
          redisUrl: redis.url,
          namespace: NAMESPACE,
          logLevel: 'info',
          args: ['--schedule-metrics', o.scheduleMetrics],
          readyTimeoutMs: 120_000 + o.n * 3,
          onLine: (line) => {
            if (DIAG_DIR) appendFileSync(join(DIAG_DIR, `store-${o.n}-s${r + 1}.log`), line + '\n');
            if (line.includes('running the stored schedules alone')) {
              loaded.add(r);
              if (loaded.size === o.replicas) allRunAt = Date.now();
            }
            if (line.includes('planning membership changed')) membershipChanges++;
            const m = appliedMark(line);
            if (m) marks[r]!.push(m);
          },
        }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') procs.push(s.value);
    const bad = started.find((s) => s.status === 'rejected');
    if (bad) throw (bad as PromiseRejectedResult).reason;
    await until(() => loaded.size === o.replicas || procs.some((p) => !p.alive), 120_000 + o.n * 3, 'every replica loaded the stored schedules', 200);
    const dead = procs.find((p) => !p.alive);
    if (dead) throw new Error(`replica ${dead.name} exited while loading: ${(dead.stderrTail || dead.stdoutTail).slice(-600)}`);
    await sleep(o.settle * 1000);
    const s1 = await redisCounters(probe, redis.runId);
    const sd = counterDelta(s0, s1);
    res.start = {
      untilAllRunS: (allRunAt - startT0) / 1000,
      redisCalls: sd.calls,
      redisCpuMs: sd.cpuMs,
      busiest: topCommands(sd),
      membershipChanges,
      definitionsVersions: Number((await probe.get(`{${NAMESPACE}}:defs:version`)) ?? 0) - v0,
      loadAvg: loadavg()[0]!,
    };
    process.stdout.write(`store: start: ${JSON.stringify(res.start)}\n`);
    res.bytesPerScheduleWithReplicas = ((await usedMemory(probe)) - m0) / o.n;
    const watch = new ProcWatch(() => procs.map((p) => p.pid)).start(500);

    process.stdout.write(`store: ${o.rate} changes/s for ${o.seconds} s …\n`);
    const c0 = await redisCounters(probe, redis.runId);
    const steady = await steadyChanges(o.n, o.rate, o.seconds, async (i, turn) => {
      const r = await f.schedules.upsert(def(i, turn) as never);
      if (!r.ok) throw new Error(`upsert refused: ${r.error.message}`);
      return r.version;
    });
    // The window ends when every replica has applied the last change (their catch-up is part of the cost).
    const last = Math.max(...steady.sent.map((s) => s.version));
    // A replica that falls behind for good (a loaded machine at 1M) must not cost the figures of the window: the
    // wait ends, the figures cover it until then, and the changes not applied by every replica are counted.
    let behind: string | undefined;
    try {
      await until(() => marks.every((m) => (m[m.length - 1]?.version ?? 0) >= last) || procs.some((p) => !p.alive), 120_000 + o.n / 2, 'every replica applied the last change', 50);
    } catch (err) {
      const applied = marks.map((m, i) => `${procs[i]?.name ?? i}: up to version ${m[m.length - 1]?.version ?? 'none'}`).join(', ');
      behind = `${(err as Error).message} (last change: version ${last}; ${applied}); the figures cover the window until then`;
    }
    const c1 = await redisCounters(probe, redis.runId);
    watch.stop();
    const d = counterDelta(c0, c1);
    res.changes = steady.count;
    res.changesPerS = steady.count / (steady.ms / 1000);
    res.redisCpuUsPerChange = (d.cpuMs * 1000) / steady.count;
    res.redisCallsPerChange = d.calls / steady.count;
    res.busiest = topCommands(d);
    res.replicaCpuUsPerChange = ([...watch.cpuMs().values()].reduce((a, b) => a + b, 0) * 1000) / steady.count;
    res.rssMb = procs.map((p) => (watch.last.get(p.pid!)?.rssKb ?? NaN) / 1024);
    res.peakRssMb = procs.map((p) => (watch.last.get(p.pid!)?.hwmKb ?? NaN) / 1024);
    const l = applyLatencies(steady.sent, marks);
    res.latencies = l.latenciesMs;
    res.missing = l.missing;
    if (behind) res.error = behind;
  } catch (err) {
    res.error = (err as Error).message;
  } finally {
    // Profiled replicas (BENCH_REPLICA_NODE_ARGS) stop gracefully, so that they write their profiles.
    await Promise.all(procs.map((p) => (process.env.BENCH_REPLICA_NODE_ARGS ? p.stop() : p.kill())));
    await flock?.close().catch(() => undefined);
    probe.disconnect();
    await redis.cleanup();
  }
  return res;
}

async function bullmqRun(o: { n: number; rate: number; seconds: number }): Promise<StoreResult> {
  const redis = await BenchRedis.start();
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 3 });
  const conn = new Redis(redis.url, { maxRetriesPerRequest: null });
  conn.on('error', () => undefined);
  const queue = new Queue('bench', { connection: conn, prefix: '{bullstore}' });
  const res: StoreResult = { loadS: NaN, bytesPerSchedule: NaN, changes: 0, changesPerS: NaN, redisCpuUsPerChange: NaN, redisCallsPerChange: NaN };
  const upsert = (i: number, turn = 0) =>
    queue.upsertJobScheduler(`c-${i}`, { pattern: cronOf(i, turn) }, { name: 'noop', data: {}, opts: { removeOnComplete: true, removeOnFail: true } });
  try {
    await queue.waitUntilReady();
    const m0 = await usedMemory(probe);
    const t0 = Date.now();
    for (let i = 0; i < o.n; i += LOAD_CONCURRENCY) await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, o.n - i) }, (_, j) => upsert(i + j)));
    res.loadS = (Date.now() - t0) / 1000;
    res.bytesPerSchedule = ((await usedMemory(probe)) - m0) / o.n;
    process.stdout.write(`store: BullMQ ${o.n} job schedulers in ${fmt(res.loadS, 1)} s; ${o.rate} upserts/s for ${o.seconds} s …\n`);
    const c0 = await redisCounters(probe, redis.runId);
    const steady = await steadyChanges(o.n, o.rate, o.seconds, async (i, turn) => {
      await upsert(i, turn);
      return undefined;
    });
    const c1 = await redisCounters(probe, redis.runId);
    const d = counterDelta(c0, c1);
    res.changes = steady.count;
    res.changesPerS = steady.count / (steady.ms / 1000);
    res.redisCpuUsPerChange = (d.cpuMs * 1000) / steady.count;
    res.redisCallsPerChange = d.calls / steady.count;
    res.busiest = topCommands(d);
  } catch (err) {
    res.error = (err as Error).message;
  } finally {
    await queue.close().catch(() => undefined);
    conn.disconnect();
    probe.disconnect();
    await redis.cleanup();
  }
  return res;
}

export async function store(f: Flags): Promise<void> {
  const n = f.num('schedules', 100_000);
  const replicas = f.num('replicas', 3);
  const rate = f.num('rate', 1000);
  const seconds = f.num('seconds', 10);
  const settle = f.num('settle', 5);
  const scheduleMetrics = f.str('schedule-metrics', 'on');
  process.stdout.write(`store: ${n} stored schedules, ${replicas} replicas, ${rate} changes/s for ${seconds} s …\n`);
  const c = await cronflockRun({ n, replicas, rate, seconds, settle, scheduleMetrics });
  // BENCH_STORE_SKIP_BULLMQ=1: cronflock alone (a diagnosis run: profiles, logs); the BullMQ column stays empty.
  const b = process.env.BENCH_STORE_SKIP_BULLMQ ? ({ loadS: NaN, bytesPerSchedule: NaN, changes: 0, changesPerS: NaN, redisCpuUsPerChange: NaN, redisCallsPerChange: NaN } satisfies StoreResult) : await bullmqRun({ n, rate, seconds });
  const max = (xs: number[] | undefined): number => (xs && xs.length ? Math.max(...xs) : NaN);
  const lat = c.latencies ?? [];
  await report(
    {
      title: `store: ${n} stored schedules (daily, none due), ${replicas} replicas following them${scheduleMetrics === 'on' ? '' : ` (--schedule-metrics ${scheduleMetrics})`}, ${rate} changes/s for ${seconds} s; BullMQ upsertJobScheduler on its own redis-server`,
      header: ['figure', 'cronflock', 'BullMQ', 'cronflock / BullMQ'],
      rows: [
        ['writing N schedules, one client, 500 in flight (s)', fmt(c.loadS, 1), fmt(b.loadS, 1), ratio(c.loadS, b.loadS)],
        ['Redis memory per schedule, writes alone (bytes)', fmt(c.bytesPerSchedule), fmt(b.bytesPerSchedule), ratio(c.bytesPerSchedule, b.bytesPerSchedule)],
        ['Redis memory per schedule, replicas running (bytes)', fmt(c.bytesPerScheduleWithReplicas), '–', ratio(c.bytesPerScheduleWithReplicas, b.bytesPerSchedule)],
        [`starting ${replicas} replicas on the stored set: until all run (s)`, fmt(c.start?.untilAllRunS, 1), '–', '–'],
        [`… Redis commands / Redis CPU (ms) until all run + ${settle} s`, c.start ? `${fmt(c.start.redisCalls)} / ${fmt(c.start.redisCpuMs)}` : '–', '–', '–'],
        ['… membership changes logged / published-definition changes', c.start ? `${c.start.membershipChanges} / ${c.start.definitionsVersions}` : '–', '–', '–'],
        ['RSS per replica, steady / peak (MB)', `${fmt(max(c.rssMb))} / ${fmt(max(c.peakRssMb))}`, '–', '–'],
        ['changes sent (per s)', `${c.changes} (${fmt(c.changesPerS)})`, `${b.changes} (${fmt(b.changesPerS)})`, '–'],
        ['Redis CPU per change (µs)', fmt(c.redisCpuUsPerChange, 1), fmt(b.redisCpuUsPerChange, 1), ratio(c.redisCpuUsPerChange, b.redisCpuUsPerChange)],
        ['Redis commands per change', fmt(c.redisCallsPerChange, 1), fmt(b.redisCallsPerChange, 1), ratio(c.redisCallsPerChange, b.redisCallsPerChange)],
        [`replica CPU per change, all ${replicas} replicas (µs)`, fmt(c.replicaCpuUsPerChange, 1), '–', '–'],
        ['upsert → every replica applied: p50 / p99 / max (ms)', dist3(lat), '– (in Redis at once)', '–'],
      ],
      notes: [
        ...(c.error ? [`cronflock: ${c.error}`] : []),
        ...(b.error ? [`BullMQ: ${b.error}`] : []),
        ...(c.missing ? [`cronflock: ${c.missing} change(s) not seen applied by every replica`] : []),
        ...(c.start ? [`cronflock: busiest Redis commands while starting: ${c.start.busiest}; load average at the end of the start: ${fmt(c.start.loadAvg, 1)}`] : []),
        `cronflock: busiest Redis commands during the changes: ${c.busiest ?? '–'}`,
        `BullMQ: busiest Redis commands during the changes: ${b.busiest ?? '–'}`,
        'cronflock\'s Redis figures include the replicas following the changes (change stream, re-reads, publishing the definitions, their change log); BullMQ\'s workers need no such step (the scheduler lives in Redis).',
      ],
    },
    {
      key: `store ${n} stored, ${replicas} replicas${scheduleMetrics === 'on' ? '' : `, --schedule-metrics ${scheduleMetrics}`}`,
      figures: {
        'cronflock.loadS': c.loadS,
        'cronflock.bytesPerSchedule': c.bytesPerSchedule,
        'cronflock.bytesPerScheduleWithReplicas': c.bytesPerScheduleWithReplicas ?? NaN,
        'cronflock.startUntilAllRunS': c.start?.untilAllRunS ?? NaN,
        'cronflock.startRedisCalls': c.start?.redisCalls ?? NaN,
        'cronflock.startRedisCpuMs': c.start?.redisCpuMs ?? NaN,
        'cronflock.startMembershipChanges': c.start?.membershipChanges ?? NaN,
        'cronflock.startDefinitionsVersions': c.start?.definitionsVersions ?? NaN,
        'cronflock.rssMb': max(c.rssMb),
        'cronflock.peakRssMb': max(c.peakRssMb),
        'cronflock.redisCpuUsPerChange': c.redisCpuUsPerChange,
        'cronflock.redisCallsPerChange': c.redisCallsPerChange,
        'cronflock.replicaCpuUsPerChange': c.replicaCpuUsPerChange ?? NaN,
        'cronflock.applyP50Ms': pct(lat, 50),
        'cronflock.applyP99Ms': pct(lat, 99),
        'bullmq.loadS': b.loadS,
        'bullmq.bytesPerSchedule': b.bytesPerSchedule,
        'bullmq.redisCpuUsPerChange': b.redisCpuUsPerChange,
        'bullmq.redisCallsPerChange': b.redisCallsPerChange,
      },
    },
  );
}
