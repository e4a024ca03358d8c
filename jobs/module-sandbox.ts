/**
 * Where a module job's code runs, seen from the replica: a fresh child process or worker thread per load-time check
 * and per attempt (the host side is ./module-host.ts), with a time limit for loading and a memory limit.
 *
 * Why a child process by default: only a process can be bounded as a whole and always be stopped. A worker thread's
 * `resourceLimits` bound its V8 heap, but ArrayBuffer/Buffer memory lies outside that heap (a job holding 3 GB of
 * Buffers took a replica to 3.2 GB RSS), and a thread blocked in a native call cannot be terminated. A child
 * process gets the kernel's data-segment limit (RLIMIT_DATA, set with `ulimit -d` by /bin/sh before exec; it counts
 * the V8 heap, Buffers and native allocations alike) plus a V8 heap limit, and SIGKILL ends it whatever it does.
 * RLIMIT_DATA also counts address space V8 only reserves: a fresh Node 24 process holds ~560 MiB of it before any
 * code runs (Node 20: ~50 MiB), so the limit is that reservation, measured once per replica, plus `memoryLimitMb`.
 * Cost measured here (Node 20, a busy 2-core machine, median of 8): starting a process and importing a small .mjs
 * took 83 ms, a thread 32 ms; with a .ts module 0.3–0.6 s either way (loading tsx dominates).
 *
 * A child process never outlives the lease its replica can prove: with each successful renewal of the claim the
 * replica writes the lease's end (shared monotonic clock, minus {@link leaseMargins}) to the process's fd 4, and a
 * heartbeat every {@link HEARTBEAT_MS}. While heartbeats come the replica answers and ends the job itself, as for
 * any kind; once they are {@link HEARTBEAT_STALE_MS} old (a stopped or hung replica) the process's own watchdog
 * thread fires the job's signal before the lease end and ends the process before the lease can lapse on Redis
 * (module-host.ts). A worker thread stops and resumes with its replica's process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { formatDurationMs } from '../runner/time/duration.js';
import { HEARTBEAT_MS, HEARTBEAT_STALE_MS } from './module-heartbeat.js';
import type { FromHost, HostTask, ToHost } from './module-host.js';
import type { JobContext } from './types.js';

/** Limits of one sandbox. */
export interface SandboxLimits {
  /** How long importing the module may take, from the start of the process or thread (ms). */
  loadTimeoutMs: number;
  /** Memory of the process (RLIMIT_DATA and V8 heap) or the thread (V8 old-generation heap only), in MiB. */
  memoryLimitMb: number;
}

/** Where a sandbox runs: a child process (bounded as a whole) or a worker thread (heap bounded). */
export type SandboxKind = 'process' | 'thread';

/** Why a sandboxed check or attempt failed. `phase` says whether the module had loaded. */
export class SandboxError extends Error {
  constructor(
    message: string,
    readonly phase: 'load' | 'run',
  ) {
    super(message);
    this.name = 'SandboxError';
  }
}

/** How long a job may go on after its signal fired before its process or thread is ended. */
export const ABORT_GRACE_MS = 5_000;

/**
 * How far before the claim's lease end a job process whose replica does not answer is stopped: its signal fires
 * at `lease end − marginMs − graceMs`, and it kills itself at `lease end − marginMs`. The process only acts once its
 * heartbeats are {@link HEARTBEAT_STALE_MS} old, and a heartbeat sent after `lease end − marginMs` does not count
 * (a replica that answers but has not renewed by then is no proof of a live lease), so it is dead by `lease end −
 * marginMs + HEARTBEAT_STALE_MS` at the latest: the margin exceeds the staleness bound by 200 ms, for the
 * watchdog's timer running late on a busy host, the kill itself, and clock rate (ppm). The grace lets a job that
 * honours its signal stop cleanly. Renewals come every lockMs/3, so a healthy lease never gets near either, and
 * while its replica answers the process never acts before `lease end − marginMs + HEARTBEAT_STALE_MS`.
 * lock 2 s: margin 500 ms, grace 400 ms; lock 6 s: 500 ms, 1.2 s; lock 30 s: 1.5 s, 5 s.
 */
export function leaseMargins(lockMs: number): { marginMs: number; graceMs: number } {
  const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, Math.round(v)));
  return {
    marginMs: clamp(lockMs * 0.05, HEARTBEAT_STALE_MS + 200, 5_000),
    graceMs: clamp(lockMs * 0.2, 100, ABORT_GRACE_MS),
  };
}

/** Now on the monotonic clock all processes of this host share (CLOCK_MONOTONIC via process.hrtime), ms. */
const sharedMonoMs = (): number => Number(process.hrtime.bigint() / 1000n) / 1000;

/** Checks at once (each is a process); a directory of modules is checked a few at a time. */
const MAX_PARALLEL_CHECKS = Math.max(1, Math.min(4, availableParallelism()));

/**
 * Imports `file` in a fresh child process under `limits` and answers whether it loads: a default export with
 * `run()`, within the load time limit, inside the memory limit, without ending its process. Nothing of the module
 * runs in the caller's process.
 * @throws SandboxError (phase `load`) saying why of the module without naming it, e.g. `did not finish loading
 *   within 10s …`, `failed to load: <its error> (at <file>:<line>:<col>)`, `its process exited with code 5 while loading`.
 */
export async function checkModule(file: string, limits: SandboxLimits): Promise<void> {
  await checkSlots.acquire();
  try {
    if (hasSh) await measureReservedDataKb(hostEntry().execArgv); // without blocking the event loop (a load goes on)
    await session('process', { mode: 'check', file }, limits);
  } finally {
    checkSlots.release();
  }
}

/**
 * Starts measuring what a bare Node reserves (once per replica; {@link checkModule} and the process sandbox wait
 * for it) without waiting: the loader calls it (the module kind's `prepare`) when a file it is about to parse may
 * hold module jobs, so the measuring process runs beside the parse and validation rather than before the first
 * module check (a Node start-up of wall time, ~0.1–0.3 s of a replica's start). Nothing when already measured.
 */
export function prepareModuleChecks(): void {
  if (hasSh) void measureReservedDataKb(hostEntry().execArgv);
}

/**
 * Runs one attempt of the module `task.file` in a fresh child process or worker thread: `ctx.signal` is passed on
 * (the job sees it fire), and the sandbox is ended {@link ABORT_GRACE_MS} after it fired if the job has not
 * finished by then. Logs go to `ctx.log`.
 * @returns what the job's run() returned (structured-cloned; a value that cannot be cloned becomes its String()).
 * @throws SandboxError when the module does not load in time, the job throws, crashes, exits or runs out of memory.
 */
export async function runSandboxed(kind: SandboxKind, ctx: JobContext, task: Omit<HostTask, 'mode'>, limits: SandboxLimits): Promise<unknown> {
  if (kind === 'process' && hasSh) await measureReservedDataKb(hostEntry().execArgv); // once per replica; cached after
  return session(kind, { ...task, mode: 'run' }, limits, ctx);
}

/** One sandbox from start to end; settles once, and always ends the process or thread. */
function session(kind: SandboxKind, task: HostTask, limits: SandboxLimits, ctx?: JobContext): Promise<unknown> {
  return new Promise<unknown>((resolve, reject) => {
    let host: Host;
    try {
      host = kind === 'process' ? startProcess(limits) : startThread(limits);
    } catch (err) {
      reject(new SandboxError(`cannot start a sandbox ${kind}: ${(err as Error).message}`, 'load'));
      return;
    }
    let loaded = false;
    let settled = false;
    /** Why we ended the sandbox ourselves, if we did. */
    let endedBecause: string | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const finish = (err: SandboxError | undefined, value?: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(loadTimer);
      if (killTimer) clearTimeout(killTimer);
      ctx?.signal.removeEventListener('abort', onAbort);
      host.end();
      if (err) reject(err);
      else resolve(value);
    };
    const loadTimer = setTimeout(() => {
      endedBecause =
        `did not finish loading within ${formatDurationMs(limits.loadTimeoutMs)} (loadTimeout): its top-level code ` +
        'still runs, or waits for something that never settles';
      host.end();
    }, limits.loadTimeoutMs);
    const onAbort = (): void => {
      host.send({ type: 'abort', reason: String((ctx!.signal.reason as Error)?.message ?? ctx!.signal.reason ?? 'aborted') });
      killTimer = setTimeout(() => {
        endedBecause = `did not stop within ${formatDurationMs(ABORT_GRACE_MS)} after its signal fired; ended`;
        host.end();
      }, ABORT_GRACE_MS);
    };
    host.onMessage((m) => {
      if (m.type === 'loaded') {
        loaded = true;
        clearTimeout(loadTimer);
        if (task.mode === 'check') finish(undefined);
      } else if (m.type === 'log') {
        ctx?.log[m.level]((m.obj ?? {}) as object, m.msg);
      } else if (m.type === 'done') {
        finish(undefined, m.value);
      } else if (m.type === 'error') {
        // An allocation refused by the limits: say which limit (V8's words differ: Node 20 'Array buffer
        // allocation failed', Node 24 'Failed to allocate memory').
        const oom = kind === 'process' && ALLOCATION_FAILED.test(m.message);
        finish(new SandboxError(oom ? `${m.message} (memoryLimitMb: ${limits.memoryLimitMb} reached)` : m.message, m.phase));
      }
    });
    host.onEnd((why) =>
      finish(
        new SandboxError(
          endedBecause ??
            (loaded
              ? `job ${kind} ${why}${why.startsWith('ended itself') ? '' : ' before finishing'}`
              : `its ${kind} ${why} while loading${/exited with code/.test(why) ? ' (process.exit() in its top-level code?)' : ''}`),
          loaded ? 'run' : 'load',
        ),
      ),
    );
    if (ctx) {
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    }
    // The claim's lease deadlines, now and after each renewal, and a heartbeat every HEARTBEAT_MS, to the process's
    // watchdog: it applies the deadlines only while the heartbeats are stale (a thread ends with our process).
    const lease = kind === 'process' && task.mode === 'run' ? ctx?.lease : undefined;
    if (lease && host.tellLease) {
      const { marginMs, graceMs } = leaseMargins(lease.ttlMs);
      let killAt = 0;
      const tell = (untilMono: number): void => {
        killAt = sharedMonoMs() + (untilMono - performance.now()) - marginMs;
        host.tellLease!(killAt - graceMs, killAt);
      };
      tell(lease.untilMono);
      const off = lease.onRenewed(tell);
      const beat = setInterval(() => host.tellLease!(killAt - graceMs, killAt), HEARTBEAT_MS);
      beat.unref();
      void host.ended.then(() => {
        off();
        clearInterval(beat);
      });
    }
    host.send({ type: 'start', task });
  });
}

/** A started sandbox, whatever its kind. */
interface Host {
  send(m: ToHost): void;
  onMessage(f: (m: FromHost) => void): void;
  /** Called once when the sandbox ended on its own or was ended, with a reason in words. */
  onEnd(f: (why: string) => void): void;
  /** Ends it now (SIGKILL / terminate); idempotent. */
  end(): void;
  /** Resolves when it has ended. */
  ended: Promise<string>;
  /**
   * Process only: a heartbeat carrying the lease deadlines for its watchdog, ms of {@link sharedMonoMs}; the line
   * holds its own send time too (`<sentAt> <abortAt> <killAt>`).
   */
  tellLease?(abortAtMs: number, killAtMs: number): void;
}

/** The host script: the built .js beside this file, or (running from the TypeScript sources, in tests) the .ts via tsx. */
function hostEntry(): { file: string; execArgv: string[] } {
  const self = fileURLToPath(import.meta.url);
  return self.endsWith('.ts')
    ? { file: fileURLToPath(new URL('./module-host.ts', import.meta.url)), execArgv: ['--import', 'tsx'] }
    : { file: fileURLToPath(new URL('./module-host.js', import.meta.url)), execArgv: [] };
}

/** V8's errors for an allocation the process's limits refused. */
const ALLOCATION_FAILED = /Array buffer allocation failed|Failed to allocate memory|allocation failed/i;

const SH = '/bin/sh';
const hasSh = process.platform !== 'win32' && existsSync(SH);

/** A Node program that prints its own VmData (KiB). */
const VMDATA_PROBE = `process.stdout.write(String(/VmData:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0))`;

/** Measured reservations per set of Node flags (one set per replica in practice). */
const reservedDataKb = new Map<string, number>();

/**
 * The data segment (KiB, VmData in /proc) a fresh Node process with these flags holds before running any code:
 * mostly address space V8 reserves and never touches. Measured once (one short process, ~50 ms), then cached;
 * 0 where /proc cannot tell.
 */
function nodeReservedDataKb(execArgv: string[]): number {
  // measureReservedDataKb (asynchronous) has normally measured it already; this is the fallback.
  const key = execArgv.join('\u0000');
  const known = reservedDataKb.get(key);
  if (known !== undefined) return known;
  const r = spawnSync(process.execPath, [...execArgv, '-e', VMDATA_PROBE], { encoding: 'utf8', timeout: 30_000 });
  const kb = Number(r.stdout);
  const measured = Number.isFinite(kb) && kb > 0 ? kb : 0;
  reservedDataKb.set(key, measured);
  return measured;
}

/** Probes of {@link nodeReservedDataKb} in flight or done, per set of Node flags. */
const reservedDataProbes = new Map<string, Promise<number>>();

/**
 * {@link nodeReservedDataKb} measured in a child process without blocking the event loop (the synchronous
 * probe held a replica's load up by a Node start-up, ~50 ms of CPU and more on a busy host); concurrent callers
 * share one probe, and the result goes to the cache the synchronous one reads. Never rejects: 0 where /proc
 * cannot tell or the probe fails.
 */
function measureReservedDataKb(execArgv: string[]): Promise<number> {
  const key = execArgv.join('\u0000');
  const known = reservedDataKb.get(key);
  if (known !== undefined) return Promise.resolve(known);
  let probe = reservedDataProbes.get(key);
  if (!probe) {
    probe = new Promise<number>((resolve) => {
      let out = '';
      const child = spawn(process.execPath, [...execArgv, '-e', VMDATA_PROBE], { stdio: ['ignore', 'pipe', 'ignore'], timeout: 30_000 });
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.once('error', () => resolve(0));
      child.once('close', () => {
        const kb = Number(out);
        resolve(Number.isFinite(kb) && kb > 0 ? kb : 0);
      });
    }).then((kb) => {
      if (!reservedDataKb.has(key)) reservedDataKb.set(key, kb);
      return reservedDataKb.get(key)!;
    });
    reservedDataProbes.set(key, probe);
  }
  return probe;
}

function startProcess(limits: SandboxLimits): Host {
  const entry = hostEntry();
  // fd 4: where the lease deadlines go (module-host.ts reads it in its watchdog thread).
  const nodeArgs = [...entry.execArgv, `--max-old-space-size=${limits.memoryLimitMb}`, entry.file, '--lease-fd=4'];
  // `ulimit -d` (KiB) sets RLIMIT_DATA for the node that `exec` puts in the shell's place (same pid, same IPC fd).
  const dataKb = hasSh ? nodeReservedDataKb(entry.execArgv) + limits.memoryLimitMb * 1024 : 0;
  const child: ChildProcess = hasSh
    ? spawn(SH, ['-c', `ulimit -d ${dataKb} 2>/dev/null; exec "$0" "$@"`, process.execPath, ...nodeArgs], {
        stdio: ['ignore', 'inherit', 'pipe', 'ipc', 'pipe'],
        serialization: 'advanced',
      })
    : spawn(process.execPath, nodeArgs, { stdio: ['ignore', 'inherit', 'pipe', 'ipc', 'pipe'], serialization: 'advanced' });
  const leasePipe = child.stdio[4] as NodeJS.WritableStream & { destroyed: boolean; on(e: 'error', f: () => void): unknown };
  leasePipe.on('error', () => undefined); // the process has ended: its exit says why
  // The host's stderr goes on to ours; its tail tells an out-of-memory death from others.
  let tail = '';
  child.stderr!.on('data', (b: Buffer) => {
    process.stderr.write(b);
    tail = (tail + b.toString()).slice(-4096);
  });
  const ended = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not start: ${err.message}`));
    child.once('exit', (code, signal) => {
      // Let the stderr pipe drain (if it has not yet), so the tail holds the last words.
      const done = (): void => resolve(describeExit(code, signal, tail, limits));
      if (child.stderr!.readableEnded) return done();
      child.stderr!.once('end', done);
      setTimeout(done, 200);
    });
  });
  return {
    ended,
    tellLease: (abortAtMs, killAtMs) => {
      if (!leasePipe.destroyed) leasePipe.write(`${sharedMonoMs().toFixed(3)} ${abortAtMs.toFixed(3)} ${killAtMs.toFixed(3)}\n`);
    },
    send: (m) => {
      if (child.connected) child.send(m, (err) => void err); // a closed channel: the exit says why
    },
    onMessage: (f) => child.on('message', (m) => f(m as FromHost)),
    onEnd: (f) => void ended.then(f),
    end: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

function startThread(limits: SandboxLimits): Host {
  const entry = hostEntry();
  if (entry.execArgv.length > 0) throw new Error('isolation: thread needs the built package (dist/), not the TypeScript sources');
  const worker = new Worker(entry.file, { resourceLimits: { maxOldGenerationSizeMb: limits.memoryLimitMb, stackSizeMb: 4 } });
  let oom = false;
  let crash: string | undefined;
  worker.on('error', (err: Error & { code?: string }) => {
    if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') oom = true;
    else crash ??= err.message;
  });
  const ended = new Promise<string>((resolve) => {
    worker.once('exit', (code) =>
      resolve(
        oom
          ? `ran out of memory (memoryLimitMb: ${limits.memoryLimitMb}, V8 heap)`
          : crash !== undefined
            ? `crashed: ${crash}`
            : `exited with code ${code}`,
      ),
    );
  });
  return {
    ended,
    send: (m) => worker.postMessage(m),
    onMessage: (f) => worker.on('message', f),
    onEnd: (f) => void ended.then(f),
    end: () => void worker.terminate(),
  };
}

/** The exit of a host process in words; an out-of-memory death is named so, whatever signal or code it took. */
function describeExit(code: number | null, signal: NodeJS.Signals | null, stderrTail: string, limits: SandboxLimits): string {
  if (/heap out of memory|std::bad_alloc|Array buffer allocation failed|allocation failed|out of memory/i.test(stderrTail)) {
    return `ran out of memory (memoryLimitMb: ${limits.memoryLimitMb})`;
  }
  if (/cronflock: lease end reached/.test(stderrTail)) {
    return "ended itself at the claim's lease end (the replica had not renewed it in time): the job did not stop after its signal fired";
  }
  if (signal) return `was killed by ${signal}${signal === 'SIGKILL' ? ' (by the kernel when memory ran out, or by someone else)' : ''}`;
  return `exited with code ${code}`;
}

/** A counting semaphore. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((r) => this.waiting.push(r));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
const checkSlots = new Slots(MAX_PARALLEL_CHECKS);
