/**
 * The thread a module job runs in (`isolation: thread`, the default). A job that throws from a timer, leaves a
 * rejection unhandled, or calls process.exit() ends this thread only: the attempt fails, and the replica and
 * its other runs go on. Messages: in `{type: 'abort', reason}`; out `{type: 'log'|'done'|'error', …}`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { JobContext, JobLogger, OccurrenceInfo, TraceContext } from './types.js';
import { importUserJob } from './module.js';

interface Input {
  file: string;
  params: Record<string, unknown>;
  occurrence: OccurrenceInfo;
  replica: string;
  trace?: TraceContext;
}

const port = parentPort!;
const input = workerData as Input;
const ac = new AbortController();
port.on('message', (m: { type: string; reason?: string }) => {
  if (m.type === 'abort') ac.abort(new Error(m.reason ?? 'aborted'));
});

const cloneable = (v: unknown): unknown => {
  try {
    return structuredClone(v);
  } catch {
    return String(v);
  }
};
const level =
  (name: keyof JobLogger) =>
  (obj: object | string, msg?: string): void =>
    port.postMessage({ type: 'log', level: name, obj: cloneable(obj), msg });
const log: JobLogger = { info: level('info'), warn: level('warn'), error: level('error'), debug: level('debug') };

try {
  const job = await importUserJob(input.file);
  const ctx: JobContext = { occurrence: input.occurrence, signal: ac.signal, log, replica: input.replica, ...(input.trace ? { trace: input.trace } : {}) };
  const value = await job.run(ctx, input.params);
  port.postMessage({ type: 'done', value: cloneable(value) });
} catch (err) {
  port.postMessage({ type: 'error', message: (err as Error)?.message ?? String(err), name: (err as Error)?.name });
}
