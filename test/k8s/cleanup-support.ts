/**
 * What the cleanup tests share: a JobContext like the engine's (an AbortController's signal, a logger that
 * keeps its lines), and the job's public entry point: the registered kind's schema and `run()`.
 */
import { findJobKind } from '../../jobs/registry.js';
import type { CleanupReport, CompiledCleanup } from '../../jobs/cleanup/index.js';
import type { JobContext } from '../../jobs/types.js';
import { controlPlane } from './harness.js';

/** A JobContext for one run; `lines` collects what the job logged. */
export function jobContext(schedule = 'cleanup-test'): JobContext & { lines: unknown[]; abort: AbortController } {
  const abort = new AbortController();
  const lines: unknown[] = [];
  const log = (obj: object | string, msg?: string): void => void lines.push(msg === undefined ? obj : { ...(typeof obj === 'object' ? obj : { obj }), msg });
  const now = Date.now();
  return {
    occurrence: { schedule, key: `${schedule}@${new Date(now).toISOString()}`, dueMs: now, fireMs: now, startMs: now, attempt: 1, fencingToken: 1, manual: true },
    signal: abort.signal,
    log: { info: log, warn: log, error: log, debug: log },
    replica: 'test',
    lines,
    abort,
  };
}

/** Validates `job` (a schedule file's `job:` block, `kind: cleanup` added) as the loader does. */
export function cleanupParams(job: Record<string, unknown>, who: 'admin' | 'restricted' = 'admin'): CompiledCleanup {
  const kind = findJobKind('cleanup');
  if (!kind) throw new Error('cleanup kind not registered');
  return kind.schema.parse({ kind: 'cleanup', kubeconfig: controlPlane().users[who].kubeconfig, qps: 200, ...job }) as CompiledCleanup;
}

/** Runs the registered cleanup kind's `run()` with `job` and returns its report. */
export async function runCleanupJob(job: Record<string, unknown>, who: 'admin' | 'restricted' = 'admin', ctx = jobContext()): Promise<CleanupReport> {
  const kind = findJobKind('cleanup')!;
  return (await kind.run(ctx, cleanupParams(job, who))) as CleanupReport;
}
