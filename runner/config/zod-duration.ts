/** zod types for durations written as strings in schedule files (`250ms`, `90s`, `5m`, `1h30m`). */
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
