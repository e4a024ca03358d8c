/** What the engine needs of a schedule; the config loader's compiled schedules satisfy it. */
import type { DueTimes } from '../schedule/cron.js';
import type { DispositionPolicy } from './dispositions.js';
import type { HeartbeatConfig, NotifyConfig, SigningConfig } from '../notify/config.js';
import type { ScheduleWindows } from './windows.js';
import type { GroupLimits, RateLimit } from '../config/groups-schema.js';

/** A compiled schedule as the planner and the executor use it. Durations in ms. */
export interface EngineSchedule extends DispositionPolicy {
  name: string;
  /** Jitter window length; the fire time lies in `[due, due + jitterMs)`. */
  jitterMs: number;
  due: DueTimes;
  /** Overlap across the flock (Kubernetes CronJob semantics); maxConcurrent applies with Allow (null: none). */
  concurrencyPolicy: 'Allow' | 'Forbid' | 'Replace';
  maxConcurrent: number | null;
  /** Longest a run may take (null: no limit). */
  timeoutMs: number | null;
  /** How long after a fire time a success may come before the schedule counts as overdue (absent: the default, runner/records/health.ts). */
  overdueGraceMs?: number | null;
  /** Retries of a failed attempt, with backoff from retryBackoffMs doubling up to retryBackoffMaxMs (jittered). */
  retries: number;
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  /** On `cronflock resume`: skip what was missed while suspended, or run the latest of it. */
  onResume?: 'skip' | 'latest';
  /** Hash of the definition as loaded (published for operators). */
  definitionHash?: string;
  /** Notifications of outcomes and heartbeat pings, through the outbox (runner/outbox/). */
  notify?: NotifyConfig;
  heartbeat?: HeartbeatConfig;
  /** Keys that sign an http job's request body (context.signBody). */
  signing?: SigningConfig;
  /** Calendar and blackout windows (windows.ts); absent: every day, no blackouts. */
  windows?: ScheduleWindows;
  /** The concurrency group the schedule is in, with the group's limits (absent: none). redis/scripts/groups.ts. */
  groupLimits?: GroupLimits;
  /** This schedule's own rate limit (absent: none), besides its group's. */
  rateLimit?: RateLimit;
  /** The job block after validation and compilation (`kind` selects the job kind). */
  job: { kind: string };
}
