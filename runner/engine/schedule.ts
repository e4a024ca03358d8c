/** What the engine needs of a schedule; the config loader's compiled schedules satisfy it. */
import type { DueTimes } from '../schedule/cron.js';
import type { DispositionPolicy } from './dispositions.js';

/** A compiled schedule as the planner and the executor use it. Durations in ms. */
export interface EngineSchedule extends DispositionPolicy {
  name: string;
  /** Jitter window length; the fire time lies in `[due, due + jitterMs)`. */
  jitterMs: number;
  due: DueTimes;
  /** The job block after validation and compilation (`kind` selects the job kind). */
  job: { kind: string };
}
