/**
 * The job kinds cronflock knows. The schedule-file schema is built from this list (a discriminated union on
 * `kind`), so adding a kind here is all it takes to make it usable and validated.
 */
import { backupJobSchema } from './backup/schema.js';
import { cleanupJobSchema } from './cleanup/schema.js';
import { handlerJob } from './handler.js';
import { httpJob } from './http.js';
import { checkJobSchedule, jobJobSchema } from './job/schema.js';
import { lazyKind } from './lazy.js';
import { moduleJob } from './module.js';
import { restoreJobSchema } from './restore/schema.js';
import type { JobKind } from './types.js';

// The Kubernetes kinds load their implementation (the Kubernetes client, the AWS SDK) on first use.
const cleanupJob = lazyKind('cleanup', cleanupJobSchema, async () => (await import('./cleanup/index.js')).cleanupJob);
const backupJob = lazyKind('backup', backupJobSchema, async () => (await import('./backup/index.js')).backupJob);
const restoreJob = lazyKind('restore', restoreJobSchema, async () => (await import('./restore/index.js')).restoreJob);
const jobJob = { ...lazyKind('job', jobJobSchema, async () => (await import('./job/index.js')).jobJob), checkSchedule: checkJobSchedule };

/** Built-in kinds by name. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const jobKinds: readonly JobKind<any, any>[] = [httpJob, moduleJob, cleanupJob, backupJob, restoreJob, jobJob, handlerJob];

/** Looks a kind up by its `kind` value; undefined when unknown. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function findJobKind(kind: string): JobKind<any, any> | undefined {
  return jobKinds.find((k) => k.kind === kind);
}
