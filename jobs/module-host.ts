/**
 * The sandbox a module job's code runs in: a child process (`isolation: process`, the default, and every load-time
 * check) or a worker thread (`isolation: thread`), started fresh for one check or one attempt by ./module-sandbox.ts.
 * Whatever the module does — throw from a timer, leave a rejection unhandled, call process.exit(), loop forever,
 * allocate without end — ends this process or thread only.
 *
 * Messages: in `{type: 'start', task}` (first), `{type: 'abort', reason}`; out `{type: 'loaded'}` once the module
 * is imported, then (to run) `{type: 'log' | 'done' | 'error', …}`. The host exits after its answer.
 *
 * As a child process it keeps a watchdog thread (it runs even while the module's code blocks the main thread): when
 * the replica is gone the host kills itself, and while the replica is stopped (SIGSTOP) the host stops itself, so a
 * job never runs on behind a replica that no longer holds, or cannot renew, its claim (the replica resumes it).
 */
import { parentPort, Worker } from 'node:worker_threads';
import { importUserJob, UserModuleError } from './module-import.js';
import type { JobContext, JobLogger, OccurrenceInfo, TraceContext } from './types.js';

/** What the host is asked to do. */
export interface HostTask {
  /** `check`: import the module and answer `loaded` (or an error); `run`: then run one attempt. */
  mode: 'check' | 'run';
  /** Absolute path of the module. */
  file: string;
  params?: Record<string, unknown>;
  occurrence?: OccurrenceInfo;
  replica?: string;
  /** The attempt's trace context when the replica traces (`--otel`), given to the job as `context.trace`. */
  trace?: TraceContext;
}

/** Messages to the host. */
export type ToHost = { type: 'start'; task: HostTask } | { type: 'abort'; reason: string };

/** Messages from the host. `phase` says whether an error came while loading or while running. */
export type FromHost =
  | { type: 'loaded' }
  | { type: 'log'; level: keyof JobLogger; obj: unknown; msg?: string }
  | { type: 'done'; value: unknown }
  | { type: 'error'; phase: 'load' | 'run'; code?: string; message: string };

interface Port {
  send(m: FromHost): Promise<void>;
  onMessage(f: (m: ToHost) => void): void;
}

const port: Port = parentPort
  ? {
      send: async (m) => parentPort!.postMessage(m),
      onMessage: (f) => parentPort!.on('message', f),
    }
  : {
      send: (m) => new Promise<void>((resolve) => process.send!(m, undefined, {}, () => resolve())),
      onMessage: (f) => process.on('message', (m) => f(m as ToHost)),
    };

const cloneable = (v: unknown): unknown => {
  try {
    return structuredClone(v);
  } catch {
    return String(v);
  }
};

let phase: 'load' | 'run' = 'load';
let ending = false;
/** Sends the last message and ends this process or thread. */
async function end(m: FromHost | undefined, code: number): Promise<never> {
  if (!ending) {
    ending = true;
    if (m) await port.send(m).catch(() => undefined);
  }
  process.exit(code);
}

const crashed = (what: unknown): void => {
  const message = (what as Error)?.message ?? String(what);
  void end({ type: 'error', phase, message: `job crashed: ${message}` }, 1);
};
process.on('uncaughtException', crashed);
process.on('unhandledRejection', crashed);

if (!parentPort) startWatchdog();

const ac = new AbortController();
port.onMessage((m) => {
  if (m.type === 'abort') ac.abort(new Error(m.reason));
  else if (m.type === 'start') void start(m.task);
});

async function start(task: HostTask): Promise<void> {
  let job;
  try {
    job = await importUserJob(task.file);
  } catch (err) {
    const code = err instanceof UserModuleError ? err.code : undefined;
    return void (await end({ type: 'error', phase: 'load', ...(code ? { code } : {}), message: (err as Error)?.message ?? String(err) }, 0));
  }
  await port.send({ type: 'loaded' });
  if (task.mode === 'check') return void (await end(undefined, 0));
  phase = 'run';
  const level =
    (name: keyof JobLogger) =>
    (obj: object | string, msg?: string): void =>
      void port.send({ type: 'log', level: name, obj: cloneable(obj), ...(msg === undefined ? {} : { msg }) });
  const log: JobLogger = { info: level('info'), warn: level('warn'), error: level('error'), debug: level('debug') };
  const ctx: JobContext = {
    occurrence: task.occurrence!,
    signal: ac.signal,
    log,
    replica: task.replica ?? '',
    ...(task.trace ? { trace: task.trace } : {}),
  };
  try {
    const value = await job.run(ctx, task.params ?? {});
    await end({ type: 'done', value: cloneable(value) }, 0);
  } catch (err) {
    await end({ type: 'error', phase: 'run', message: (err as Error)?.message ?? String(err) }, 0);
  }
}

/**
 * A thread that watches the replica (this process's parent) every 100 ms: gone (re-parented) → SIGKILL this
 * process; stopped (state T/t in /proc, Linux) → SIGSTOP this process (the replica sends SIGCONT once it runs again).
 */
function startWatchdog(): void {
  const code = `
    const { workerData } = require('node:worker_threads');
    const { readFileSync } = require('node:fs');
    setInterval(() => {
      if (process.ppid !== workerData.ppid) process.kill(process.pid, 'SIGKILL');
      let stat;
      try { stat = readFileSync('/proc/' + workerData.ppid + '/stat', 'utf8'); } catch { return; }
      const state = stat.charAt(stat.lastIndexOf(')') + 2);
      if (state === 'T' || state === 't') process.kill(process.pid, 'SIGSTOP');
    }, 100);`;
  // Small limits: a worker's isolate otherwise reserves a 512 MiB code range (Node 24), which RLIMIT_DATA counts.
  const resourceLimits = { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4, codeRangeSizeMb: 8, stackSizeMb: 1 };
  const w = new Worker(code, { eval: true, workerData: { ppid: process.ppid }, stdout: false, stderr: false, resourceLimits });
  w.unref();
}
