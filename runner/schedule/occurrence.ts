/**
 * Occurrences and their fire times.
 *
 * An occurrence is one (schedule, due time) pair, named `<schedule>@<due ISO 8601 UTC>`. Its fire time is the
 * due time plus an offset inside the jitter window `[due, due + jitter)`, taken from a hash of the occurrence
 * key, so every replica computes the same fire time without talking to the others, and a flock of schedules
 * due at the same instant spreads its starts over the window (the k8s-cleaner idea, made deterministic).
 */
import { createHash } from 'node:crypto';

/**
 * Key of an occurrence, `<schedule>@<due ISO>`, e.g. `ping-billing@2026-01-01T00:00:02.000Z`. Occurrences that
 * the cron expression did not produce (`cronflock trigger`, the run after `resume`) carry a tag:
 * `<schedule>@<ISO>~manual`, so they never collide with a scheduled occurrence of the same instant.
 */
export function occurrenceKey(schedule: string, dueMs: number, tag?: string): string {
  return `${schedule}@${new Date(dueMs).toISOString()}${tag ? `~${tag}` : ''}`;
}

/** The schedule name of an occurrence key `<schedule>@<due>[~tag]` (names never contain '@'). */
export function scheduleOfKey(key: string): string {
  return key.slice(0, key.lastIndexOf('@'));
}

/** Splits an occurrence key (tagged or not) back into schedule name and due time (UTC ms); null when it is not one. */
export function parseOccurrenceKey(key: string): { schedule: string; dueMs: number } | null {
  const at = key.lastIndexOf('@');
  if (at <= 0) return null;
  const tag = key.indexOf('~', at);
  const dueMs = Date.parse(key.slice(at + 1, tag < 0 ? undefined : tag));
  return Number.isFinite(dueMs) ? { schedule: scheduleOfKey(key), dueMs } : null;
}

const TWO_POW_53 = 2 ** 53;

/**
 * Offset of the fire time inside the jitter window: `floor(u * jitterMs)` where `u ∈ [0, 1)` comes from the
 * first 53 bits of SHA-256 of the occurrence key. Uniform over `[0, jitterMs)`, identical on every replica.
 * @param key occurrence key (see {@link occurrenceKey}).
 * @param jitterMs window length in ms; 0 means no jitter.
 * @returns offset in ms, an integer in `[0, jitterMs)` (0 when `jitterMs` is 0).
 */
export function fireOffsetMs(key: string, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  const digest = createHash('sha256').update(key).digest();
  // 53 bits: the high 21 bits of the first word and the 32 bits of the second.
  const u = ((digest.readUInt32BE(0) >>> 11) * 2 ** 32 + digest.readUInt32BE(4)) / TWO_POW_53;
  return Math.floor(u * jitterMs);
}

/** Fire time (UTC ms) of the occurrence of `schedule` due at `dueMs` with a window of `jitterMs`. */
export function fireTimeMs(schedule: string, dueMs: number, jitterMs: number): number {
  return dueMs + fireOffsetMs(occurrenceKey(schedule, dueMs), jitterMs);
}
