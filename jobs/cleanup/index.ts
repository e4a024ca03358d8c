/**
 * `kind: cleanup`: deletes, scales to zero, labels or reports Kubernetes objects selected by kind (any
 * built-in or CRD kind, through discovery), namespace, labels, fields, name and age (from creation or from
 * when the object finished), or by preset (finished Jobs, finished Pods) and TTL annotations.
 *
 * Safety is on by default: protected namespaces, the `cronflock.io/protect: "true"` mark, objects being deleted
 * and objects with a controller owner are skipped; a blast-radius limit aborts before any write; deletes carry
 * `uid` + `resourceVersion` preconditions from the scan, so a re-created object of the same name survives.
 * A preflight SelfSubjectAccessReview for every permission the run needs fails the run with one message per
 * missing permission. The run's report (counts and the first objects) is its result in the run record.
 */
import path from 'node:path';
import type { JobKind } from '../types.js';
import type { CleanupReport } from './report.js';
import { runCleanup, type CompiledCleanup } from './run.js';
import { cleanupJobSchema, type CleanupParams } from './schema.js';

export { CleanupError, preflight, runCleanup, clientForJob, type CompiledCleanup } from './run.js';
export type { CleanupReport, ObjectLine } from './report.js';
export { cleanupJobSchema, type CleanupParams, type CleanupSelector } from './schema.js';

/** The `cleanup` job kind. */
export const cleanupJob: JobKind<CleanupParams, CompiledCleanup> = {
  kind: 'cleanup',
  schema: cleanupJobSchema,
  // A kubeconfig path in a schedule file is relative to that file.
  compile: async (params, ctx) => (params.kubeconfig ? { ...params, kubeconfig: path.resolve(ctx.baseDir, params.kubeconfig) } : params),
  // Notifications are the schedule's (runner/notify/): the job-level `notify` block is read as the
  // schedule-level one at load (a deprecated alias), and the outbox sends them, once, from the run's outcome.
  run: (ctx, params): Promise<CleanupReport> => runCleanup(ctx, params),
};
