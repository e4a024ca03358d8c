/**
 * Pre-checks schedule files in loader child processes (runner/config/precheck.ts), so that the YAML parse and zod
 * garbage of a large load (per 10,000 schedules ~105 MB allocated by the YAML parse, ~75 MB by zod, ~55 MB by the
 * definition hashes) lives in processes that exit afterwards instead of in the replica's own heap.
 *
 * Processes, not worker threads: V8 keeps the pages a heap once used mapped and resident after they are freed
 * (measured on Node 24: a worker that built ~400 MB and was terminated left the process's RSS at ~430 MB; on Node
 * 20 it went back to ~65 MB), so a worker thread's garbage stays in the replica's RSS; a process's is returned to
 * the system when it exits. Children take files one at a time from a shared queue and are killed when the queue is
 * done. A child that crashes, or does not answer a file within the timeout, fails that file (the loader refuses it
 * with a clear error) and is replaced; a load never hangs on a child.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { fork, type ChildProcess } from 'node:child_process';
import type { Precheck } from './precheck.js';

/** Why a loader process gave no answer for a file (crash, exit, timeout), in words for the load error. */
export interface PrecheckFailure {
  failed: string;
}

/** Options of {@link precheckFiles}. */
export interface PrecheckOptions {
  /** Most loader processes at once (bounded by the file count); default {@link defaultWorkerCount}. */
  workers?: number;
  /** Longest one file may take in a loader process, in ms (default 120,000). */
  timeoutMs?: number;
  /** The loader process's script (tests point it at a faulty one); default: load-worker.js beside this module. */
  workerUrl?: URL;
}

/** Default longest time for one file in a loader process (a 10,000-schedule file takes 2–5 s on a busy 2-core machine). */
export const DEFAULT_PRECHECK_TIMEOUT_MS = 120_000;

/** Old-generation limit of a loader process, in MB: room for the largest file's positioned document (~25 × its size). */
const MAX_WORKER_OLD_MB = 1024;

const defaultWorkerUrl = new URL('./load-worker.js', import.meta.url);

/**
 * Whether the loader process's script is there: it is in the built package (dist/); from TypeScript sources (tests
 * run by vitest) it is not, and the loader checks in-process.
 */
export function workersAvailable(url: URL = defaultWorkerUrl): boolean {
  return existsSync(fileURLToPath(url));
}

/** Default loader process count: one less than the available cores (the replica compiles meanwhile), 1 to 3. */
export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(3, availableParallelism() - 1));
}

/**
 * Pre-checks `files` in loader child processes (Node's `fork`, structured-clone messages).
 * @returns per file (same order) a promise of its {@link Precheck}, or of a {@link PrecheckFailure} when its loader
 * process crashed or timed out (never rejected): the caller takes each file's result as it comes and lets it go.
 */
export function precheckFiles(files: readonly string[], opts: PrecheckOptions = {}): Promise<Precheck | PrecheckFailure>[] {
  const answers = files.map(() => {
    let settle!: (r: Precheck | PrecheckFailure) => void;
    const promise = new Promise<Precheck | PrecheckFailure>((res) => (settle = res));
    return { promise, settle, done: false };
  });
  const results = {
    set(i: number, r: Precheck | PrecheckFailure): void {
      const a = answers[i]!;
      if (a.done) return;
      a.done = true;
      a.settle(r);
    },
    has: (i: number): boolean => answers[i]!.done,
  };
  if (files.length === 0) return [];
  const url = opts.workerUrl ?? defaultWorkerUrl;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PRECHECK_TIMEOUT_MS;
  const count = Math.max(1, Math.min(opts.workers ?? defaultWorkerCount(), files.length));
  let next = 0;

  const runOne = (): Promise<void> =>
    new Promise<void>((done) => {
      let worker: ChildProcess | undefined;
      let current = -1;
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const finish = (): void => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        if (worker) worker.kill();
        done();
      };
      const fail = (why: string): void => {
        // A child that dies before its first answer fails the next file, so a broken child cannot loop.
        if (current < 0 && next < files.length) current = next++;
        if (current >= 0 && !results.has(current)) results.set(current, { failed: why });
        current = -1;
        if (timer) clearTimeout(timer);
        const dead = worker;
        worker = undefined;
        if (dead) {
          dead.removeAllListeners();
          dead.on('error', () => {});
          dead.kill('SIGKILL');
        }
        start();
      };
      const send = (): void => {
        if (!worker) return;
        if (next >= files.length) {
          finish();
          return;
        }
        current = next++;
        const id = current;
        timer = setTimeout(() => fail(`the loader worker did not answer within ${timeoutMs} ms`), timeoutMs);
        worker.send({ id, file: files[id] });
      };
      const start = (): void => {
        if (next >= files.length) {
          finish();
          return;
        }
        // A small young generation and a bounded old one: the child collects as it goes; a file that needs more
        // fails with a clear error. Its stdout is not the replica's (a log line there would interleave).
        const w = fork(fileURLToPath(url), [], {
          serialization: 'advanced',
          execArgv: [`--max-old-space-size=${MAX_WORKER_OLD_MB}`, '--max-semi-space-size=8'],
          stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
        });
        worker = w;
        w.on('message', (msg: { id: number; result?: Precheck; failure?: string }) => {
          if (w !== worker || msg.id !== current) return;
          if (timer) clearTimeout(timer);
          results.set(msg.id, msg.result ?? { failed: `the loader worker failed: ${msg.failure ?? 'no result'}` });
          current = -1;
          send();
        });
        w.on('error', (err) => {
          if (w === worker) fail(`the loader worker crashed: ${err.message}`);
        });
        w.on('exit', (code, signal) => {
          if (w === worker && !settled) fail(`the loader worker exited (${code !== null ? `code ${code}` : `signal ${signal}`})`);
        });
        send();
      };
      start();
    });

  for (let i = 0; i < count; i++) void runOne();
  return answers.map((a) => a.promise);
}
