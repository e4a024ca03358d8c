/**
 * Pre-checks schedule files in worker threads (runner/config/precheck.ts), so that the YAML parse and zod garbage
 * of a large load (~9 s and ~800 MB of heap per 100,000 schedules) lives in heaps that are thrown away afterwards
 * instead of staying resident in the replica's own heap. Workers take files one at a time from a shared queue;
 * all are terminated when the queue is done. A worker that crashes, or does not answer a file within the timeout,
 * fails that file (the loader refuses it with a clear error) and is replaced; a load never hangs on a worker.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Precheck } from './precheck.js';

/** Why a worker gave no answer for a file (crash, exit, timeout), in words for the load error. */
export interface PrecheckFailure {
  failed: string;
}

/** Options of {@link precheckFiles}. */
export interface PrecheckOptions {
  /** Most workers at once (bounded by the file count); default {@link defaultWorkerCount}. */
  workers?: number;
  /** Longest one file may take in a worker, in ms (default 120,000). */
  timeoutMs?: number;
  /** The worker script (tests point it at a faulty one); default: load-worker.js beside this module. */
  workerUrl?: URL;
}

/** Default longest time for one file in a worker (a 10,000-schedule file takes ~1 s on a busy 2-core machine). */
export const DEFAULT_PRECHECK_TIMEOUT_MS = 120_000;

/** Old-generation limit of a worker, in MB: room for the largest file's positioned document (~25 × its size). */
const MAX_WORKER_OLD_MB = 1024;

const defaultWorkerUrl = new URL('./load-worker.js', import.meta.url);

/**
 * Whether the worker script is there: it is in the built package (dist/); from TypeScript sources (tests run by
 * vitest) it is not, and the loader checks in-process.
 */
export function workersAvailable(url: URL = defaultWorkerUrl): boolean {
  return existsSync(fileURLToPath(url));
}

/** Default worker count: one less than the available cores (the main thread compiles meanwhile), 1 to 3. */
export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(3, availableParallelism() - 1));
}

/**
 * Pre-checks `files` in worker threads.
 * @returns per file (same order) a promise of its {@link Precheck}, or of a {@link PrecheckFailure} when its worker
 * crashed or timed out (never rejected): the caller takes each file's result as it comes and lets it go.
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
      let worker: Worker | undefined;
      let current = -1;
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const finish = (): void => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        if (worker) void worker.terminate();
        done();
      };
      const fail = (why: string): void => {
        // A worker that dies before its first answer fails the next file, so a broken worker cannot loop.
        if (current < 0 && next < files.length) current = next++;
        if (current >= 0 && !results.has(current)) results.set(current, { failed: why });
        current = -1;
        if (timer) clearTimeout(timer);
        const dead = worker;
        worker = undefined;
        if (dead) {
          dead.removeAllListeners();
          dead.on('error', () => {});
          void dead.terminate();
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
        worker.postMessage({ id, file: files[id] });
      };
      const start = (): void => {
        if (next >= files.length) {
          finish();
          return;
        }
        // A small young generation and a bounded old one: the worker collects as it goes instead of growing its
        // heap (and the process's RSS) to hundreds of MB; a file that needs more fails with a clear error.
        const w = new Worker(url, { resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: MAX_WORKER_OLD_MB } });
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
        w.on('exit', (code) => {
          if (w === worker && !settled) fail(`the loader worker exited (code ${code})`);
        });
        send();
      };
      start();
    });

  for (let i = 0; i < count; i++) void runOne();
  return answers.map((a) => a.promise);
}
