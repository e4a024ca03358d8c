/**
 * Parsers of CLI option values (commander's argParser): each returns the value in the unit its name says, or
 * throws commander's InvalidArgumentError with what a valid value looks like (commander then names the option).
 */
import { parseInstant } from '../time/instant.js';
import { InvalidArgumentError } from 'commander';
import { DurationError, parseDurationMs } from '../time/duration.js';

/** A duration such as `500ms`, `4s`, `1h` → ms. */
export const durationArg = (v: string): number => {
  try {
    return parseDurationMs(v);
  } catch (e) {
    throw new InvalidArgumentError((e as DurationError).message);
  }
};

/** A whole number ≥ 1. */
export const positiveIntArg = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number ≥ 1');
  return n;
};

/**
 * A whole number from 1 to `max`, for counts whose output grows with them (`next -n`): above `max` the error says
 * the cap and how to see further (`hint`).
 */
export const boundedIntArg =
  (max: number, hint: string) =>
  (v: string): number => {
    const n = positiveIntArg(v);
    if (n > max) throw new InvalidArgumentError(`must be at most ${max.toLocaleString('en-US')}, got ${v}; ${hint}`);
    return n;
  };

/** A whole number ≥ 0. */
export const nonNegativeIntArg = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number ≥ 0');
  return n;
};

/** A number > 0 (fractions allowed, e.g. requests per second). */
/**
 * Seconds for a timer: a number > 0 and at most one day (Node's timers hold at most 2^31 − 1 ms, ~24.8 days; a
 * longer one fires at once, so a huge value must be refused, not passed on).
 */
export const timerSecondsArg = (v: string): number => {
  const n = positiveNumberArg(v);
  if (n > 86_400) throw new InvalidArgumentError('must be at most 86400 (one day)');
  return n;
};

export const positiveNumberArg = (v: string): number => {
  const n = Number(v);
  if (!(n > 0)) throw new InvalidArgumentError('must be a number > 0');
  return n;
};

/** An ISO 8601 time → UTC ms. */
export const isoTimeArg = (v: string): number => {
  // Not Date.parse alone: it reads -5 or 1.5 as days of 2001 (runner/time/instant.ts).
  const ms = parseInstant(v, { ms: false });
  if (ms === undefined) throw new InvalidArgumentError('must be an ISO 8601 time, e.g. 2026-01-01T00:00:00Z');
  return ms;
};
