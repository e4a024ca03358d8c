/**
 * What the backup tests share: a JobContext for one occurrence (schedule, due time, fencing token, manual), a
 * logger that keeps its lines and can act on one (to abort mid-run), and the registered kind's schema,
 * `compile` and `run()` — the job's public entry points.
 */
import { findJobKind } from '../../jobs/registry.js';
import type { BackupReport, CompiledBackup } from '../../jobs/backup/index.js';
import type { JobContext } from '../../jobs/types.js';
import { controlPlane } from './harness.js';

/** Occurrence fields a test sets. */
export interface OccurrenceSpec {
  schedule?: string;
  /** Due time, UTC ms (whole seconds unless manual). */
  dueMs?: number;
  fencingToken?: number;
  manual?: boolean;
  /** Called with each log message (e.g. to abort the run at a given step). */
  onLog?: (msg: string, obj: unknown) => void;
}

/** A JobContext for one attempt of an occurrence; `lines` collects what the job logged. */
export function backupContext(o: OccurrenceSpec = {}): JobContext & { lines: { msg?: string; [k: string]: unknown }[]; abort: AbortController } {
  const abort = new AbortController();
  const lines: { msg?: string; [k: string]: unknown }[] = [];
  const log = (obj: object | string, msg?: string): void => {
    const line = typeof obj === 'object' ? { ...obj, msg } : { msg: obj };
    lines.push(line);
    o.onLog?.(line.msg ?? '', line);
  };
  const schedule = o.schedule ?? 'bk';
  const manual = o.manual ?? false;
  const dueMs = o.dueMs ?? Math.floor(Date.now() / 1000) * 1000;
  return {
    occurrence: {
      schedule,
      key: `${schedule}@${new Date(dueMs).toISOString()}${manual ? '~manual' : ''}`,
      dueMs,
      fireMs: dueMs,
      startMs: Date.now(),
      attempt: 1,
      fencingToken: o.fencingToken ?? 1,
      manual,
    },
    signal: abort.signal,
    log: { info: log, warn: log, error: log, debug: log },
    replica: 'test',
    lines,
    abort,
  };
}

/** Validates and compiles `job` (a `job:` block, `kind: backup` added) as the loader does; paths relative to `baseDir`. */
export async function backupParams(job: Record<string, unknown>, baseDir = process.cwd()): Promise<CompiledBackup> {
  const kind = findJobKind('backup');
  if (!kind) throw new Error('backup kind not registered');
  const parsed = kind.schema.parse({ kind: 'backup', kubeconfig: controlPlane().users.admin.kubeconfig, qps: 500, ...job });
  return (await kind.compile!(parsed, { baseDir })) as CompiledBackup;
}

/** Runs the registered backup kind's `run()` with `job` for the occurrence of `ctx`. */
export async function runBackupJob(job: Record<string, unknown>, ctx = backupContext()): Promise<BackupReport> {
  const kind = findJobKind('backup')!;
  return (await kind.run(ctx, await backupParams(job))) as BackupReport;
}
