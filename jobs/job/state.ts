/**
 * Reading a batch Job's state the way the CronJob controller does: a Job is finished when it has a `Complete`
 * or `Failed` condition with status `True` (k8s.io/kubernetes pkg/controller/cronjob `IsJobFinished`); until
 * then it is running, whatever its pods do (a `FailureTarget` or `SuccessCriteriaMet` condition means its pods
 * are still being terminated).
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { SCHEDULED_TIME_ANNOTATION } from './schema.js';

/** The parts of a `batch/v1` Job this kind reads. */
export interface BatchJob {
  apiVersion?: string;
  kind?: string;
  /** Timestamps are RFC 3339 strings in JSON, whatever client-node's type says (Date). */
  metadata?: V1ObjectMeta;
  spec?: Record<string, unknown>;
  status?: {
    conditions?: { type?: string; status?: string; reason?: string; message?: string; lastTransitionTime?: string }[];
    startTime?: string;
    completionTime?: string;
    active?: number;
    succeeded?: number;
    failed?: number;
  };
}

/** A Job's outcome: `running` until a Complete or Failed condition is True. */
export type JobOutcome =
  | { state: 'running' }
  | { state: 'succeeded' }
  | { state: 'failed'; reason: string; message: string };

/** See {@link JobOutcome}. Pure. */
export function jobOutcome(job: BatchJob): JobOutcome {
  for (const c of job.status?.conditions ?? []) {
    if (c.status !== 'True') continue;
    if (c.type === 'Complete') return { state: 'succeeded' };
    if (c.type === 'Failed') return { state: 'failed', reason: c.reason ?? 'Failed', message: c.message ?? '' };
  }
  return { state: 'running' };
}

/** The Job's scheduled time (its due time) in UTC ms, from its annotation, else its creation; NaN when neither. */
export function scheduledTimeMs(job: BatchJob): number {
  return Date.parse(job.metadata?.annotations?.[SCHEDULED_TIME_ANNOTATION] ?? String(job.metadata?.creationTimestamp ?? ''));
}
