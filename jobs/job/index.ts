/**
 * `kind: job`, the CronJob replacement: each occurrence creates one Kubernetes batch Job from a CronJob-style
 * `jobTemplate`, named from the schedule and the due time, and waits for it to finish; the schedule's
 * concurrency policy holds against the Jobs that exist (a Job outlives a dead claimant), and the CronJob's
 * history limits delete the oldest finished Jobs. See run.ts for the steps and what a lost claim does.
 */
import path from 'node:path';
import type { JobKind } from '../types.js';
import { runJob, type JobRunReport } from './run.js';
import { checkJobSchedule, jobJobSchema, type JobJobParams } from './schema.js';

export { jobManifest, runJob, clientForJob, JobRunError, FIELD_MANAGER, type JobRunReport } from './run.js';
export { jobNameFor, MAX_JOB_NAME } from './name.js';
export { jobsBeyondHistory, type HistoryLimits } from './history.js';
export { jobOutcome, type BatchJob, type JobOutcome } from './state.js';
export * from './schema.js';

/** The `job` job kind. */
export const jobJob: JobKind<JobJobParams, JobJobParams> = {
  kind: 'job',
  schema: jobJobSchema,
  // A kubeconfig path in a schedule file is relative to that file.
  compile: async (params, ctx) => (params.kubeconfig ? { ...params, kubeconfig: path.resolve(ctx.baseDir, params.kubeconfig) } : params),
  checkSchedule: checkJobSchedule,
  run: (ctx, params): Promise<JobRunReport> => runJob(ctx, params),
};
