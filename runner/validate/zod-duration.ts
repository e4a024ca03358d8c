/**
 * zod types for durations written as strings in schedule files (`250ms`, `90s`, `5m`, `1h30m`). Here, outside
 * runner/config/, so that job kinds (jobs/) use them without importing the config loader that imports them.
 */
import { z } from 'zod';
import { DurationError, parseDurationMs } from '../time/duration.js';

/** A duration string transformed to whole milliseconds; the issue message says how to write one. */
export const durationMs = z.string().transform((text, ctx) => {
  try {
    return parseDurationMs(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof DurationError ? err.message : String(err) });
    return z.NEVER;
  }
});

/** Like {@link durationMs} but must be > 0. */
export const positiveDurationMs = durationMs.refine((ms) => ms > 0, { message: 'must be longer than 0' });

/** Longest duration Node can put on a timer (2^31 − 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A positive duration used as a timer (timeouts, backoffs): at most 24d, or Node would fire it at once. */
export const timerDurationMs = positiveDurationMs.refine((ms) => ms <= MAX_TIMER_MS, {
  message: 'must be at most 24d (longer timers cannot be set)',
});
