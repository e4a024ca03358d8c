/**
 * The sandbox a module job's code runs in: a child process (`isolation: process`, the default, and every load-time
 * check) or a worker thread (`isolation: thread`), started fresh for one check or one attempt by ./module-sandbox.ts.
 * Whatever the module does — throw from a timer, leave a rejection unhandled, call process.exit(), loop forever,
 * allocate without end — ends this process or thread only.
 *
 * Messages: in `{type: 'start', task}` (first), `{type: 'abort', reason}`; out `{type: 'loaded'}` once the module
 * is imported, then (to run) `{type: 'log' | 'done' | 'error', …}`. The host exits after its answer.
 *
 * As a child process it keeps a watchdog thread (it runs even while the module's code blocks the main thread, and
 * whatever the replica does): when the replica is gone the host kills itself; and it holds the claim's lease end as
 * the replica last proved it. The replica writes `<sentAt> <abortAt> <killAt>\n` (ms of the shared monotonic clock,
 * `process.hrtime`) to fd 4 after every successful renewal and every 100 ms as a heartbeat. While heartbeats come,
 * the replica answers and ends the job itself when its lease really lapses. Once they are stale (300 ms, or sent
 * after `killAt`), at `abortAt` the watchdog fires the job's signal, at `killAt` (still before the lease can lapse
 * on Redis) it ends this process with SIGKILL. So a job never runs on past a lease its replica cannot prove live —
 * a stopped (SIGSTOP) or hung replica cannot keep it alive — and a replica that answers, whose renewal is only
 * delayed (a short Redis outage), keeps its job until its lease end.
 */
import { parentPort, Worker } from 'node:worker_threads';
import { importUserJob, UserModuleError } from './module-import.js';
import { HEARTBEAT_STALE_MS } from './module-heartbeat.js';
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

/** The fd the replica writes lease deadlines to (module-sandbox.ts), from `--lease-fd=N`; none: no deadline. */
const LEASE_FD = /^--lease-fd=(\d+)$/.exec(process.argv[2] ?? '')?.[1];

const ac = new AbortController();
/** Why the watchdog fired the signal at the lease's end, if it did: the attempt then fails with it. */
let leaseEnded: string | undefined;
if (!parentPort) startWatchdog();

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
    // Stopped at the lease's end: whatever it returned, it did not run to its end under a live claim.
    if (leaseEnded !== undefined) return void (await end({ type: 'error', phase: 'run', message: leaseEnded }, 0));
    await end({ type: 'done', value: cloneable(value) }, 0);
  } catch (err) {
    await end({ type: 'error', phase: 'run', message: leaseEnded ?? (err as Error)?.message ?? String(err) }, 0);
  }
}

/**
 * A thread that watches the replica (this process's parent) and the claim's lease: parent gone (re-parented) →
 * SIGKILL this process. The replica writes `<sentAt> <abortAt> <killAt>` lines to the lease fd: one after each
 * renewal and one every HEARTBEAT_MS as a heartbeat (module-sandbox.ts). While a heartbeat sent before `killAt` is
 * at most `staleMs` old the replica answers, and it alone ends the job (its signal fires when the lease really
 * lapses, exactly as without this thread). Once heartbeats are stale (the replica is stopped, hung, or did not
 * renew by `killAt`): `abortAt` passed → the job's signal fires (message to the main thread); `killAt` passed → a
 * line on stderr (the replica names the cause from it) and SIGKILL. Checks at most every 50 ms and at each deadline.
 */
function startWatchdog(): void {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    const { writeSync } = require('node:fs');
    const now = () => Number(process.hrtime.bigint() / 1000n) / 1000;
    const staleMs = workerData.staleMs;
    let abortAt = Infinity, killAt = Infinity, lastBeat = -Infinity, fired = false, timer;
    // confirmed: the decision to act is taken again after one turn of the event loop (setImmediate runs after the
    // poll phase), so heartbeats already in the pipe are read first: after this thread was not scheduled for a
    // while (a busy host), a timer runs before pending I/O and would see stale beats that are not.
    const check = (confirmed) => {
      clearTimeout(timer);
      if (process.ppid !== workerData.ppid) process.kill(process.pid, 'SIGKILL');
      const t = now();
      // The replica answers: the deadlines are its to apply, not ours.
      const answersUntil = lastBeat + staleMs;
      const acts = t > answersUntil && (t >= killAt || (t >= abortAt && !fired));
      if (acts && !confirmed) {
        setImmediate(check, true);
        return;
      }
      if (acts) {
        if (t >= killAt) {
          try { writeSync(2, 'cronflock: lease end reached; the job ignored its signal, ending its process\\n'); } catch {}
          process.kill(process.pid, 'SIGKILL');
        }
        if (t >= abortAt && !fired) { fired = true; parentPort.postMessage({ type: 'lease-ended' }); }
      }
      const next = Math.max(answersUntil, fired ? killAt : abortAt);
      timer = setTimeout(check, Math.max(1, Math.min(50, next - t + 1)), false);
    };
    if (workerData.leaseFd !== undefined) {
      const s = new (require('node:net').Socket)({ fd: workerData.leaseFd, readable: true, writable: false });
      let buf = '';
      s.on('error', () => undefined);
      s.on('data', (b) => {
        buf += b;
        for (let i; (i = buf.indexOf('\\n')) >= 0; buf = buf.slice(i + 1)) {
          const [sent, a, k] = buf.slice(0, i).split(' ').map(Number);
          if (Number.isFinite(sent) && Number.isFinite(a) && Number.isFinite(k)) {
            abortAt = abortAt === Infinity ? a : Math.max(abortAt, a);
            killAt = killAt === Infinity ? k : Math.max(killAt, k);
            // A beat sent once killAt passed proves nothing: the replica answers but cannot prove the lease.
            if (sent < killAt) lastBeat = Math.max(lastBeat, sent);
          }
        }
        check(false);
      });
    }
    check(false);`;
  // Small limits: a worker's isolate otherwise reserves a 512 MiB code range (Node 24), which RLIMIT_DATA counts.
  const resourceLimits = { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4, codeRangeSizeMb: 8, stackSizeMb: 1 };
  const workerData = { ppid: process.ppid, staleMs: HEARTBEAT_STALE_MS, ...(LEASE_FD !== undefined ? { leaseFd: Number(LEASE_FD) } : {}) };
  const w = new Worker(code, { eval: true, workerData, stdout: false, stderr: false, resourceLimits });
  w.on('message', (m: { type?: string }) => {
    if (m?.type !== 'lease-ended' || ac.signal.aborted) return;
    leaseEnded =
      "the claim's lease ends: the replica stopped answering (stopped, hung) or did not renew it in time; " +
      'the job was stopped before another replica may claim the occurrence';
    ac.abort(new Error(leaseEnded));
  });
  w.unref();
}
