/** What the engine needs of a schedule; the config loader's compiled schedules satisfy it. */
import type { DueTimes } from '../schedule/cron.js';
import type { PlanPolicy } from '../redis/store.js';

/** A compiled schedule as the planner and the executor use it. Durations in ms. */
export interface EngineSchedule extends PlanPolicy {
  name: string;
  /** Jitter window length; the fire time lies in `[due, due + jitterMs)`. */
  jitterMs: number;
  due: DueTimes;
  /** Overlap across the flock (Kubernetes CronJob semantics); maxConcurrent applies with Allow (null: none). */
  concurrencyPolicy: 'Allow' | 'Forbid' | 'Replace';
  maxConcurrent: number | null;
  /** Longest a run may take (null: no limit). */
  timeoutMs: number | null;
  /** Retries of a failed attempt, with backoff from retryBackoffMs doubling up to retryBackoffMaxMs (jittered). */
  retries: number;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  /** On `cronflock resume`: skip what was missed while suspended, or run the latest of it. */
  onResume?: 'skip' | 'latest';
  /** Hash of the definition as loaded (published for operators). */
  definitionHash?: string;
  /** The job block after validation and compilation (`kind` selects the job kind). */
  job: { kind: string };
}
