/**
 * health: what the per-schedule health metrics cost a replica with many schedules — the admin cache's passes
 * (HSCAN of last successes, last results and suspensions), the health update (runner/admin/schedule-health.ts),
 * the text of the series, and one rendering of /metrics — with the real classes on a real redis-server, in this
 * process (a replica's start-up with 100,000 schedules would only add noise).
 *
 *   --schedules 100000 --modes on,top:100 --passes 5
 *
 * Schedules: a quarter each every minute, every 5 minutes, hourly and daily (minutes and hours spread), each with
 * a last success and a last result on record (every tenth failing 3 times in a row), every thousandth suspended.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import { FlockWideCache } from '../../runner/admin/flock-wide-cache.js';
import { Metrics } from '../../runner/admin/metrics.js';
import { feedScheduleHealth, parseScheduleMetricsMode, type ScheduleHealthBoard } from '../../runner/admin/schedule-health.js';
import type { CompiledSchedule } from '../../runner/config/load.js';
import { RedisClock } from '../../runner/redis/clock.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { compileCron } from '../../runner/schedule/cron.js';
import { counterDelta, redisCounters } from '../lib/redis-stats.js';
import { BenchRedis } from '../lib/redis.js';
import { report } from '../lib/report.js';
import { Flags, fmt, sleep } from '../lib/util.js';

function schedules(n: number): CompiledSchedule[] {
  const out: CompiledSchedule[] = [];
  for (let i = 0; i < n; i++) {
    const m = i % 60;
    const cron = [`* * * * *`, `*/5 * * * *`, `${m} * * * *`, `${m} ${Math.floor(i / 60) % 24} * * *`][i % 4]!;
    out.push({
      name: `s-${i}`,
      jitterMs: 0,
      due: compileCron(cron, 'UTC', { hashSeed: `s-${i}` }),
      concurrencyPolicy: 'Allow',
      maxConcurrent: null,
      timeoutMs: null,
      retries: 0,
      retryBackoffMs: 1000,
      retryBackoffMaxMs: 300_000,
      suspend: false,
      startingDeadlineMs: null,
      catchUp: 'latest',
      maxCatchUpRuns: 10,
      job: { kind: 'http' },
    } as CompiledSchedule);
  }
  return out;
}

interface ModeResult {
  mode: string;
  firstPassMs: number;
  passMs: number[];
  updateMs: number[];
  recomputed: number[];
  callsPerPass: number;
  byCommand: string;
  loopMaxMs: number;
  loopP99Ms: number;
  /** The same measure over as long a time with no pass running: what the machine itself adds. */
  idleLoopMaxMs: number;
  idleLoopP99Ms: number;
  renderMs: number;
  bodyBytes: number;
  gzipBytes: number;
  series: number;
}

async function measure(redisUrl: string, list: CompiledSchedule[], modeText: string, passes: number): Promise<ModeResult> {
  const redis = new Redis(redisUrl);
  const probe = new Redis(redisUrl);
  const keys = new Keyspace();
  const clock = new RedisClock(redis, undefined, keys.ns);
  await clock.sync();
  const sinceMs = clock.now() - 86_400_000; // the published definitions' load time: fixed
  const names = new Set(list.map((s) => s.name));
  const cache = new FlockWideCache(redis, keys, () => names, { refreshEveryMs: 0, budgetMs: 60_000 });
  const metrics = new Metrics({ clock, activeRuns: () => 0, replica: 'bench' });
  const board: ScheduleHealthBoard = feedScheduleHealth({
    cache,
    metrics,
    mode: parseScheduleMetricsMode(modeText),
    schedules: () => list,
    sinceMs: () => sinceMs,
    nowMs: () => clock.now(),
  });
  const inner = cache.onPass!;
  const ends: number[] = [];
  const readMs: number[] = [];
  const updateMs: number[] = [];
  const recomputed: number[] = [];
  cache.onPass = async (v) => {
    readMs.push(cache.lastPassMs);
    const t = performance.now();
    await inner(v);
    updateMs.push(performance.now() - t);
    recomputed.push(board.recomputed);
    ends.push(performance.now());
  };
  const loop = monitorEventLoopDelay({ resolution: 5 });
  const t0 = performance.now();
  cache.start();
  while (ends.length < 1) await sleep(20);
  const c0 = await redisCounters(probe);
  loop.enable();
  const loopStart = performance.now();
  while (ends.length < passes + 1) await sleep(20);
  loop.disable();
  const loopMs = performance.now() - loopStart;
  const c1 = await redisCounters(probe);
  await cache.stop();
  const idle = monitorEventLoopDelay({ resolution: 5 });
  idle.enable();
  await sleep(loopMs);
  idle.disable();
  const d = counterDelta(c0, c1);
  const renderStart = performance.now();
  const { body } = await metrics.render();
  const renderMs = performance.now() - renderStart;
  metrics.close();
  redis.disconnect();
  probe.disconnect();
  const passMs = readMs.slice(1);
  return {
    mode: modeText,
    firstPassMs: ends[0]! - t0,
    passMs,
    updateMs: updateMs.slice(1),
    recomputed: recomputed.slice(1),
    callsPerPass: d.calls / passes,
    byCommand: [...d.byCommand].filter(([k, v]) => v > 0 && k !== 'info').map(([k, v]) => `${k} ${fmt(v / passes, 0)}`).join(', '),
    loopMaxMs: loop.max / 1e6,
    loopP99Ms: loop.percentile(99) / 1e6,
    idleLoopMaxMs: idle.max / 1e6,
    idleLoopP99Ms: idle.percentile(99) / 1e6,
    renderMs,
    bodyBytes: body.length,
    gzipBytes: gzipSync(body).length,
    series: body.toString().split('\n').filter((l) => l.startsWith('cronflock_schedule_')).length,
  };
}

export async function health(flags: Flags): Promise<number> {
  const n = flags.num('schedules', 100_000);
  const modes = flags.list('modes', ['on', 'top:100']);
  const passes = flags.num('passes', 5);
  const redis = await BenchRedis.start({ appendOnly: false });
  const client = new Redis(redis.url);
  try {
    const keys = new Keyspace();
    const [s, us] = await client.time();
    const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    for (let i = 0; i < n; i += 5000) {
      const ok: string[] = [];
      const last: string[] = [];
      for (let j = i; j < Math.min(n, i + 5000); j++) {
        ok.push(`s-${j}`, String(now - (j % 3600) * 1000));
        last.push(`s-${j}`, j % 10 === 0 ? `3|failed|${now - 60_000}|${now - 59_000}|job failed` : `0|succeeded|${now - 60_000}|${now - 59_000}|`);
      }
      await client.hset(keys.lastSuccess, ...ok);
      await client.hset(keys.lastResult, ...last);
    }
    for (let j = 0; j < n; j += 1000) await client.hset(keys.suspended, `s-${j}`, JSON.stringify({ sinceMs: now, by: 'bench' }));
    const tc = performance.now();
    const list = schedules(n);
    const compileMs = performance.now() - tc;
    const results: ModeResult[] = [];
    for (const m of modes) results.push(await measure(redis.url, list, m, passes));
    const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    await report({
      title: `health: per-schedule health metrics, ${n.toLocaleString('en')} schedules, ${passes} passes after the first`,
      header: ['--schedule-metrics', 'first pass (ms)', 'pass: read (ms, median)', 'pass: health + text (ms, median)', 'recomputed / pass', 'Redis calls / pass', 'event loop delay p99 / max (ms)', 'idle: p99 / max (ms)', 'render (ms)', 'body (MB)', 'gzipped (kB)', 'series'],
      rows: results.map((r) => [
        r.mode,
        fmt(r.firstPassMs, 0),
        fmt(med(r.passMs), 0),
        fmt(med(r.updateMs), 0),
        fmt(med(r.recomputed), 0),
        `${fmt(r.callsPerPass, 0)} (${r.byCommand})`,
        `${fmt(r.loopP99Ms, 0)} / ${fmt(r.loopMaxMs, 0)}`,
        `${fmt(r.idleLoopP99Ms, 0)} / ${fmt(r.idleLoopMaxMs, 0)}`,
        fmt(r.renderMs, 0),
        fmt(r.bodyBytes / 1e6, 1),
        fmt(r.gzipBytes / 1e3, 0),
        String(r.series),
      ]),
      notes: [
        `first pass: start to the first complete pass, with every schedule's health computed (cron look-ups); later passes recompute only schedules whose inputs changed or whose next fire time or overdue instant passed`,
        `event loop delay: while the passes ran (resolution 5 ms), and over as long with no pass running ("idle"): the difference is what the passes cost the event loop, the rest is the machine`,
        `compiling the ${n.toLocaleString('en')} cron expressions (not part of a pass): ${fmt(compileMs, 0)} ms`,
        `pass: read is the HSCAN pages of the three hashes (with the event loop free between pages); the admin cache starts a pass every max(2 s, 10 × the last pass's read), so a read of 1 s means one every 10 s`,
      ],
    }, { key: `health ${n}` });
    return 0;
  } finally {
    client.disconnect();
    await redis.stop();
  }
}
