/**
 * Durations as written in schedule files and on the command line: a sequence of `<integer><unit>` parts,
 * units `ms`, `s`, `m`, `h`, `d`, largest first, each at most once (`250ms`, `90s`, `5m`, `1h30m`, `2d`).
 * The same grammar as Go's `time.ParseDuration` (which Kubernetes and Prometheus users know), restricted to
 * whole numbers so that every value is an exact number of milliseconds.
 */

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
type Unit = keyof typeof UNIT_MS;
const ORDER: readonly Unit[] = ['d', 'h', 'm', 's', 'ms'];
const PART = /(\d+)(ms|d|h|m|s)/y;

/** Longest duration that is an exact whole number of ms (Number.MAX_SAFE_INTEGER). */
export const MAX_DURATION_MS = Number.MAX_SAFE_INTEGER;

/** Why a duration string was refused; `message` says how to write it. */
export class DurationError extends Error {
  readonly code = 'DURATION_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

/**
 * Parses a duration such as `1h30m` into milliseconds.
 * @param text the duration as written; `0` alone is accepted and means zero.
 * @returns whole milliseconds, ≥ 0.
 * @throws DurationError when the text is empty, has an unknown unit, repeats a unit or orders units wrongly, or
 *   is longer than {@link MAX_DURATION_MS} (the message says the maximum).
 */
export function parseDurationMs(text: string): number {
  const s = text.trim();
  if (s === '0') return 0;
  if (s === '') throw new DurationError('empty duration; write e.g. 250ms, 90s, 5m or 1h30m');
  let total = 0;
  let lastRank = -1;
  PART.lastIndex = 0;
  let pos = 0;
  while (pos < s.length) {
    PART.lastIndex = pos;
    const m = PART.exec(s);
    if (!m) {
      throw new DurationError(
        `"${text}" is not a duration; write whole numbers with units ms, s, m, h, d, largest first (e.g. 250ms, 90s, 5m, 1h30m)`,
      );
    }
    const unit = m[2] as Unit;
    const rank = ORDER.indexOf(unit);
    if (rank <= lastRank) {
      throw new DurationError(`"${text}": units must appear once each, largest first (e.g. 1h30m, not 30m1h)`);
    }
    lastRank = rank;
    total += Number(m[1]) * UNIT_MS[unit];
    pos = PART.lastIndex;
  }
  if (!Number.isSafeInteger(total) || total > MAX_DURATION_MS) {
    throw new DurationError(`"${text}" is too long: a duration may be at most ${formatDurationMs(MAX_DURATION_MS)} (${MAX_DURATION_MS} ms, about 285,000 years)`);
  }
  return total;
}

/** Formats milliseconds as the shortest duration string that parses back to the same value (e.g. `1h30m`). */
export function formatDurationMs(ms: number): string {
  if (ms === 0) return '0';
  let rest = Math.round(ms);
  let out = '';
  for (const unit of ORDER) {
    const n = Math.floor(rest / UNIT_MS[unit]);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * UNIT_MS[unit];
    }
  }
  return out;
}
