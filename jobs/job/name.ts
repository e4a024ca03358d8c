/**
 * The name of an occurrence's batch Job: deterministic from the schedule and the due time, so every claimant
 * of the occurrence (a re-claim after a crash, a hand-over) arrives at the same name, and the API server's name
 * uniqueness is a second fence: a Job is created once, later claimants adopt it.
 *
 * Like the CronJob controller's `<cronjob name>-<scheduled time in unix minutes>`, but in seconds, since
 * cronflock's cron has seconds: `<schedule>-<due time in unix seconds>`, e.g. `nightly-1767225600`. An
 * occurrence the cron did not produce carries its key's tag (`cronflock trigger`: `~manual`; after resume:
 * `~resume`) and its due time may have milliseconds: `<schedule>-<unix ms>-manual`. A due time in whole seconds
 * gives 10 digits (until 2286) and one with milliseconds 13, so the two never collide.
 *
 * The result is a DNS-1123 label of at most 63 characters (the Job controller puts the Job name in the
 * `batch.kubernetes.io/job-name` label of its pods, whose values are limited to 63). When `<schedule>-<stamp>`
 * would be longer, the schedule part is cut and the first 8 hex digits of the SHA-256 of the occurrence key are
 * put before the stamp, so two long names that share a prefix stay distinct: `<cut schedule>-<hash>-<stamp>`.
 */
import { createHash } from 'node:crypto';

/** Longest Job name (a label value: 63 characters). */
export const MAX_JOB_NAME = 63;

/** What the name is made of: the occurrence's schedule, key and due time (UTC ms). */
export interface OccurrenceName {
  schedule: string;
  key: string;
  dueMs: number;
}

/** The Job name of an occurrence (see the module docs). Pure. */
export function jobNameFor(o: OccurrenceName): string {
  const tilde = o.key.lastIndexOf('~');
  const tag = tilde >= 0 ? o.key.slice(tilde + 1).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') : '';
  const stamp = o.dueMs % 1000 === 0 ? String(o.dueMs / 1000) : String(o.dueMs);
  const suffix = `-${stamp}${tag ? `-${tag}` : ''}`;
  const plain = `${o.schedule}${suffix}`;
  if (plain.length <= MAX_JOB_NAME) return plain;
  const hash = createHash('sha256').update(o.key).digest('hex').slice(0, 8);
  const keep = MAX_JOB_NAME - suffix.length - hash.length - 1;
  return `${o.schedule.slice(0, keep)}-${hash}${suffix}`;
}
