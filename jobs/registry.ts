/**
 * The job kinds cronflock knows. The schedule-file schema is built from this list (a discriminated union on
 * `kind`), so adding a kind here is all it takes to make it usable and validated.
 */
import { backupJob } from './backup/index.js';
import { cleanupJob } from './cleanup/index.js';
import { httpJob } from './http.js';
import { moduleJob } from './module.js';
import { restoreJob } from './restore/index.js';
import type { JobKind } from './types.js';

/** Built-in kinds by name. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const jobKinds: readonly JobKind<any, any>[] = [httpJob, moduleJob, cleanupJob, backupJob, restoreJob];

/** Looks a kind up by its `kind` value; undefined when unknown. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function findJobKind(kind: string): JobKind<any, any> | undefined {
  return jobKinds.find((k) => k.kind === kind);
}
