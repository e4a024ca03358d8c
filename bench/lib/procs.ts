/**
 * Child processes of the benchmarks: cronflock replicas (the built CLI, as users run it), peer processes, and
 * the bookkeeping that guarantees none outlives a run: every child is registered, and a crash, Ctrl-C or a normal
 * exit of the driver kills what is left (SIGCONT first, so that a stopped process can die).
 */
import { fork, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { freePort } from '../../runner/redis/server-process.js';
import { BIN, ROOT, sleep } from './util.js';

const live = new Set<ChildProcess>();
const extraPids = new Set<number>();

/** Spawns a child and registers it for cleanup. */
export function spawnTracked(cmd: string, args: string[], opts: SpawnOptions): ChildProcess {
  const child = spawn(cmd, args, opts);
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Forks a compiled module of dist/bench with IPC and registers it for cleanup. */
export function forkTracked(modulePath: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = fork(modulePath, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Waits for the first IPC message of `type` from a child. */
export function nextMessage<T = Record<string, unknown>>(child: ChildProcess, type: string, timeoutMs = 60_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => done(new Error(`no "${type}" message from pid ${child.pid} within ${timeoutMs} ms`)), timeoutMs);
    const onMsg = (m: { type?: string }): void => {
      if (m?.type === type) done(undefined, m as T);
    };
    const onExit = (code: number | null): void => done(new Error(`pid ${child.pid} exited (${code}) before "${type}"`));
    function done(err?: Error, v?: T): void {
      clearTimeout(t);
      child.off('message', onMsg);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(v!);
    }
    child.on('message', onMsg);
    child.once('exit', onExit);
  });
}

/** Registers a pid we did not spawn with {@link spawnTracked} (e.g. a redis-server) for cleanup. */
export function trackPid(pid: number | undefined): void {
  if (pid) extraPids.add(pid);
}
export function untrackPid(pid: number | undefined): void {
  if (pid) extraPids.delete(pid);
}

/** Kills every registered child now (synchronous: usable in an 'exit' handler). */
export function killAllChildren(): void {
  for (const c of live) {
    try {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
  for (const pid of extraPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

let installed = false;
/** Kills children when the driver exits, is interrupted, or crashes. For CLI entry points. */
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killAllChildren);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(`\n${sig}: stopping every child process\n`);
      killAllChildren();
      process.exit(130);
    });
  }
}

/** Sends SIGCONT + SIGKILL and waits for the exit. */
export async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGCONT');
  child.kill('SIGKILL');
  await exited;
}

// ---------------------------------------------------------------------------------------------------------
// /proc figures

const CLK_TCK = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

/** CPU time (user + system, ms) and memory (kB) of a process, from /proc; undefined once it is gone. */
export interface ProcSample {
  cpuMs: number;
  rssKb: number;
  /** Peak resident set size (VmHWM). */
  hwmKb: number;
}

export function procSample(pid: number | undefined): ProcSample | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(f[11]);
    const stime = Number(f[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { cpuMs: ((utime + stime) * 1000) / CLK_TCK, rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

/**
 * Samples a set of processes every `everyMs`, keeping the latest CPU time and the largest RSS seen of each
 * (VmHWM is per process lifetime; the sampled max covers a window).
 */
export class ProcWatch {
  private timer: NodeJS.Timeout | undefined;
  readonly first = new Map<number, ProcSample>();
  readonly last = new Map<number, ProcSample>();
  readonly maxRssKb = new Map<number, number>();

  constructor(private readonly pids: () => (number | undefined)[]) {}

  start(everyMs = 500): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
    return this;
  }

  sample(): void {
    for (const pid of this.pids()) {
      const s = procSample(pid);
      if (!s || !pid) continue;
      if (!this.first.has(pid)) this.first.set(pid, s);
      this.last.set(pid, s);
      this.maxRssKb.set(pid, Math.max(this.maxRssKb.get(pid) ?? 0, s.rssKb));
    }
  }

  stop(): void {
    this.sample();
    if (this.timer) clearInterval(this.timer);
  }

  /** CPU ms used by each process between start and stop. */
  cpuMs(): Map<number, number> {
    const out = new Map<number, number>();
    for (const [pid, s] of this.last) out.set(pid, s.cpuMs - (this.first.get(pid)?.cpuMs ?? s.cpuMs));
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------------
// cronflock replicas

const SKEW_CLOCK = join(ROOT, 'test/support/skew-clock.mjs');

/** Options of a replica process. */
export interface ReplicaOptions {
  name: string;
  /** The schedule path; empty: none (the replica runs the stored schedules alone). */
  schedules: string;
  redisUrl: string;
  /** Extra CLI flags, e.g. `['--lock', '1s']`. */
  args?: string[];
  namespace?: string;
  /** `warn` keeps logging out of throughput figures; `info` is needed to see runs (the soak). */
  logLevel?: string;
  /** Simulated host clock offset (ms), through test/support/skew-clock.mjs. */
  clockOffsetMs?: number;
  /** Called with every complete stdout line (JSON log lines). */
  onLine?: (line: string) => void;
  /** How long to wait for readiness. */
  readyTimeoutMs?: number;
  /** A client on the same Redis, to see the replica connect when its log level hides "replica running". */
  probe?: Redis;
}

/** Whether a replica's admin server at 127.0.0.1:`port` answers /readyz with 200 (false: not yet, or no answer). */
async function readyzOk(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1_000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** A running `cronflock start` process. */
export class ReplicaProc {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly startedAtMs = Date.now();
  readyAtMs: number | undefined;
  /** Last 20 kB of stderr and of stdout, for error messages. */
  stderrTail = '';
  stdoutTail = '';
  /** Set before we signal it on purpose, so that its exit is not taken for a crash. */
  expectedExit = false;
  private running = false;
  /** The admin server's port this replica was given (undefined: `args` chose it). */
  adminPort: number | undefined;
  /** CPU time (user + system, ms) the process had used when it was found ready. */
  readyCpuMs: number | undefined;

  private constructor(
    readonly o: ReplicaOptions,
    readonly child: ChildProcess,
  ) {
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      const s = b.toString();
      this.stdoutTail = (this.stdoutTail + s).slice(-20_000);
      buf += s;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!this.running && line.includes('"msg":"replica running"')) this.running = true;
        o.onLine?.(line);
      }
    });
    child.stderr!.on('data', (b: Buffer) => (this.stderrTail = (this.stderrTail + b.toString()).slice(-20_000)));
    this.exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  }

  get name(): string {
    return this.o.name;
  }
  get pid(): number | undefined {
    return this.alive ? this.child.pid : undefined;
  }
  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Spawns the replica and waits until it runs: its "replica running" log line (info logs), else its `/readyz`
   * answering 200 (the replica's own readiness: it runs once `Replica.start` returned; an admin server on a port
   * picked here, unless `args` set `--admin`), else its Redis connection seen by `probe` plus a second.
   */
  static async start(o: ReplicaOptions): Promise<ReplicaProc> {
    const env: NodeJS.ProcessEnv = { ...process.env, CRONFLOCK_LOG_LEVEL: o.logLevel ?? 'warn' };
    delete env.REDIS_URL;
    // BENCH_REPLICA_NODE_ARGS: Node flags for every replica of a bench (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`
    // to profile where a replica's time goes; written when the replica stops).
    const nodeArgs: string[] = (process.env.BENCH_REPLICA_NODE_ARGS ?? '').split(/\s+/).filter((a) => a !== '');
    if (o.clockOffsetMs) {
      nodeArgs.push('--import', SKEW_CLOCK);
      env.CRONFLOCK_TEST_CLOCK_OFFSET_MS = String(o.clockOffsetMs);
    } else delete env.CRONFLOCK_TEST_CLOCK_OFFSET_MS;
    // /readyz tells when the replica runs, with no fixed wait; every replica had an admin server before too (the
    // default port, then a free one for the second replica on the host).
    const adminPort = (o.args ?? []).includes('--admin') ? undefined : await freePort();
    const args = [...nodeArgs, BIN, 'start', ...(o.schedules ? [o.schedules] : []), '--redis', o.redisUrl, '--replica', o.name, ...(adminPort ? ['--admin', `127.0.0.1:${adminPort}`] : []), ...(o.args ?? [])];
    if (o.namespace) args.push('--namespace', o.namespace);
    const child = spawnTracked(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const r = new ReplicaProc(o, child);
    r.adminPort = adminPort;
    await r.waitReady(o.readyTimeoutMs ?? 60_000);
    return r;
  }

  private async waitReady(timeoutMs: number): Promise<void> {
    const infoLogs = ['info', 'debug', 'trace'].includes(this.o.logLevel ?? 'warn');
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (!this.alive) throw new Error(`replica ${this.name} exited during start: ${this.stderrTail || this.stdoutTail}`);
      if (infoLogs && this.running) break;
      if (!infoLogs && this.adminPort !== undefined) {
        if (await readyzOk(this.adminPort)) break;
      } else if (!infoLogs) {
        if (this.o.probe) {
          const list = await this.o.probe.client('LIST');
          if (String(list).includes(`${this.name}:worker`) || String(list).includes(`name=cronflock:${this.name} `)) {
            await sleep(1000); // connections come first; planning starts right after
            break;
          }
        } else if (Date.now() - this.startedAtMs > 2000) break;
      }
      if (Date.now() > end) throw new Error(`replica ${this.name} not ready after ${timeoutMs} ms`);
      await sleep(50);
    }
    this.readyAtMs = Date.now();
    this.readyCpuMs = procSample(this.child.pid)?.cpuMs;
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.alive) return;
    if (sig === 'SIGKILL' || sig === 'SIGTERM' || sig === 'SIGINT') this.expectedExit = true;
    this.child.kill(sig);
  }

  /** SIGKILL (after SIGCONT) and wait. */
  async kill(): Promise<void> {
    this.expectedExit = true;
    await killAndWait(this.child);
  }

  /** SIGTERM (graceful hand-over) and wait; SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = process.env.BENCH_REPLICA_NODE_ARGS ? 180_000 : 20_000): Promise<void> {
    if (!this.alive) return;
    this.expectedExit = true;
    this.child.kill('SIGCONT');
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
}
