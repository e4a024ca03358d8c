/**
 * `npm run bench -- <scenario> [flags]`: figures for the leaderless core, measured on this machine with real
 * replica processes and a real redis-server (the peers of issue 4 come later).
 *
 *   throughput  --replicas 3 --schedules 1000 --seconds 20   every schedule `* * * * * *` with a 1 s jitter window
 *   failover    --trials 10 --lock 4s                        SIGKILL the claimant of a long run; time to re-claim
 *
 * Each run prints a table and appends it to bench/RESULTS.md with date, machine, Node, Redis and versions.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Keyspace } from '../runner/redis/keys.js';
import { RedisServerProcess } from '../runner/redis/server-process.js';
import { listRuns, type RunRecord } from '../runner/records/runs.js';
import { parseDurationMs } from '../runner/time/duration.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/cronflock.js');
const NOOP = join(ROOT, 'bench/noop.mjs');
const SLOW = join(ROOT, 'test/fixtures/jobs/slow.mjs');

function flag(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

interface Proc {
  child: ChildProcess;
  name: string;
  out: string;
}

function startReplica(name: string, file: string, redisUrl: string, args: string[] = []): Promise<Proc> {
  const child = spawn(process.execPath, [BIN, 'start', file, '--redis', redisUrl, '--replica', name, ...args], {
    cwd: ROOT,
    env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const p: Proc = { child, name, out: '' };
  child.stdout!.on('data', (b: Buffer) => (p.out = (p.out + b.toString()).slice(-20_000)));
  // Ready when the first clock sync happened: give it a moment, then check it is alive.
  return sleep(1500).then(() => {
    if (child.exitCode !== null) throw new Error(`replica ${name} exited: ${p.out}`);
    return p;
  });
}

async function stopAll(ps: Proc[]): Promise<void> {
  await Promise.all(
    ps.map(
      (p) =>
        new Promise((r) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return r(undefined);
          p.child.once('exit', r);
          p.child.kill('SIGKILL');
        }),
    ),
  );
}

/** Redis counters: all commands (those run inside Lua scripts included), script calls, CPU (user+sys, ms). */
async function commandStats(redis: Redis): Promise<{ calls: number; scripts: number; cpuMs: number }> {
  const stats = await redis.info('commandstats');
  let calls = 0;
  let scripts = 0;
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info') calls += Number(m[2]);
    if (m[1] === 'evalsha' || m[1] === 'eval') scripts += Number(m[2]);
  }
  const cpu = await redis.info('cpu');
  const get = (k: string): number => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return { calls, scripts, cpuMs: (get('used_cpu_sys') + get('used_cpu_user')) * 1000 };
}

function versions(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const redis = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.match(/v=(\S+)/)?.[1];
  const deps = ['bullmq', 'ioredis', 'cron-parser'].map((d) => `${d} ${pkg.dependencies[d]}`).join(', ');
  return `${new Date().toISOString()} · ${hostname()} (${cpus().length} × ${cpus()[0]?.model.trim()}) · Node ${process.version} · Redis ${redis} · ${deps}`;
}

function report(title: string, rows: [string, string][]): void {
  const w = Math.max(...rows.map(([k]) => k.length));
  const table = [`### ${title}`, '', `_${versions()}_`, '', '| figure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k.padEnd(w)} | ${v} |`), ''].join('\n');
  process.stdout.write(`${table}\n`);
  appendFileSync(join(ROOT, 'bench/RESULTS.md'), `${table}\n`);
}

async function throughput(): Promise<void> {
  const replicas = Number(flag('replicas', '3'));
  const schedules = Number(flag('schedules', '1000'));
  const seconds = Number(flag('seconds', '20'));
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-bench-'));
  const file = join(dir, 'schedules.yaml');
  let yaml = 'schedules:\n';
  for (let i = 0; i < schedules; i++) yaml += `  - {name: b${i}, cron: "* * * * * *", jitter: 999ms, job: {kind: module, path: ${NOOP}}}\n`;
  writeFileSync(file, yaml);
  const redis = await RedisServerProcess.start();
  const client = new Redis(redis.url);
  const procs: Proc[] = [];
  try {
    for (let i = 1; i <= replicas; i++) procs.push(await startReplica(`b${i}`, file, redis.url, ['--concurrency', '5000']));
    await sleep(3000); // warm up
    const s0 = await commandStats(client);
    const t0 = Date.now();
    await sleep(seconds * 1000);
    const t1 = Date.now();
    const s1 = await commandStats(client);
    if (process.env.BENCH_DEBUG) process.stderr.write((await client.info('commandstats')).split('\n').filter((l) => /calls=\d{4,}/.test(l)).join('\n') + '\n');
    const runs: RunRecord[] = await listRuns(client, new Keyspace(), { limit: 1_000_000, fromMs: t0 - 2000, toMs: t1 });
    const started = runs.filter((r) => r.firstStartMs !== undefined && r.firstStartMs >= t0 && r.firstStartMs < t1);
    const due = runs.filter((r) => r.fireMs >= t0 && r.fireMs < t1 - 1000);
    const late = started.map((r) => r.latenessMs!).filter((x) => Number.isFinite(x));
    const byState: Record<string, number> = {};
    for (const r of due) byState[r.state] = (byState[r.state] ?? 0) + 1;
    const n = started.length;
    report(`throughput: ${replicas} replicas, ${schedules} schedules every second (jitter 999 ms), ${seconds} s`, [
      ['occurrences started / s', (n / ((t1 - t0) / 1000)).toFixed(0)],
      ['offered / s', String(schedules)],
      ['start lateness after fire p50 / p99 / max (ms)', `${pct(late, 50)} / ${pct(late, 99)} / ${Math.max(...late)}`],
      ['Redis commands per occurrence (incl. inside Lua)', ((s1.calls - s0.calls) / n).toFixed(1)],
      ['Lua script calls per occurrence', ((s1.scripts - s0.scripts) / n).toFixed(1)],
      ['Redis CPU per occurrence (µs)', (((s1.cpuMs - s0.cpuMs) * 1000) / n).toFixed(0)],
      ['final states of occurrences fired in the window', JSON.stringify(byState)],
    ]);
  } finally {
    await stopAll(procs);
    client.disconnect();
    await redis.cleanup();
  }
}

async function failover(): Promise<void> {
  const trials = Number(flag('trials', '10'));
  const lock = flag('lock', '4s');
  const lockMs = parseDurationMs(lock);
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-bench-'));
  const redis = await RedisServerProcess.start();
  const client = new Redis(redis.url);
  const times: number[] = [];
  try {
    for (let t = 0; t < trials; t++) {
      const events = join(dir, `events-${t}.jsonl`);
      const name = `f${t}`;
      const file = join(dir, `f${t}.yaml`);
      // Every second, a 60 s job: the first occurrence runs; the benchmark kills its claimant.
      writeFileSync(file, `schedules:\n  - {name: ${name}, cron: "* * * * * *", job: {kind: module, path: ${SLOW}, params: {ms: 60000, events: ${events}}}}\n`);
      const procs: Proc[] = [];
      for (let i = 1; i <= 3; i++) procs.push(await startReplica(`${name}-r${i}`, file, redis.url, ['--lock', lock]));
      try {
        let first: { key: string; replica: string } | undefined;
        for (let i = 0; i < 200 && !first; i++) {
          await sleep(50);
          try {
            first = JSON.parse(readFileSync(events, 'utf8').split('\n')[0]!) as { key: string; replica: string };
          } catch {
            /* not yet */
          }
        }
        if (!first) throw new Error('no run started');
        const victim = procs.find((p) => p.name === first!.replica)!;
        const killedAt = Date.now();
        victim.child.kill('SIGKILL');
        let reclaimAt: number | undefined;
        for (let i = 0; i < 600 && reclaimAt === undefined; i++) {
          await sleep(20);
          const rec = await client.hgetall(new Keyspace().occurrence(first.key));
          if (Number(rec.token) >= 2) reclaimAt = Number(rec.startMs);
        }
        if (reclaimAt === undefined) throw new Error('not re-claimed within 12 s');
        times.push(reclaimAt - killedAt);
      } finally {
        await stopAll(procs);
        await client.flushall();
      }
    }
    report(`failover: SIGKILL the claimant, ${trials} trials, --lock ${lock} (stall check every ${lockMs / 2} ms)`, [
      ['re-claim after SIGKILL p50 / p99 / max (ms)', `${pct(times, 50)} / ${pct(times, 99)} / ${Math.max(...times)}`],
      ['all trials (ms)', times.join(', ')],
    ]);
  } finally {
    client.disconnect();
    await redis.cleanup();
  }
}

const scenario = process.argv[2] ?? 'throughput';
const scenarios: Record<string, () => Promise<void>> = { throughput, failover };
if (!scenarios[scenario]) {
  process.stderr.write(`unknown scenario "${scenario}"; choose one of: ${Object.keys(scenarios).join(', ')}\n`);
  process.exit(2);
}
scenarios[scenario]!().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
