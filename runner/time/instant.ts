/**
 * Instants given as text (an API query's `from`/`to`, a backfill body's, the CLI's `--from`/`--to`): an ISO 8601
 * time or UTC milliseconds, nothing else. `Date.parse` alone is too lenient for input: its fallback reads `-5`,
 * `1.5` or `12 5` as days of 2001, and a digit string is read as milliseconds however large
 * (`99999999999999999999` is 1e20 ms, no time at all). Both are refused here, so a mistyped number is an error,
 * not a silently different time range.
 */

/** The latest instant a JavaScript Date holds: 8,640,000,000,000,000 ms after 1970 (+275760-09-13, ECMA-262 §21.4.1.22). */
export const MAX_INSTANT_MS = 8_640_000_000_000_000;

/** The forms {@link parseInstant} takes, in words, for messages ("allowed: …"). */
export const INSTANT_FORMS = `an ISO 8601 time (2026-01-01T00:00:00Z) or UTC milliseconds from 0 to ${MAX_INSTANT_MS}`;

/**
 * An ISO 8601 date, or date and time (`T` or a space between), with seconds and fractions optional and a zone
 * (`Z`, `+02:00`) optional (without one, `Date.parse` reads a time as the process's local time, a date as UTC).
 * Years of 4 digits, or ±6 digits (the extended years of ECMA-262).
 */
const ISO_TIME = /^(?:\d{4}|[+-]\d{6})-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * The UTC ms of `text`: `ms` digits (0 to {@link MAX_INSTANT_MS}) or an ISO 8601 time. undefined when it is neither
 * (or out of the Date range); say {@link INSTANT_FORMS} then.
 * @param opts.ms whether bare digits are taken as UTC ms (default true; the CLI's `--from <iso>` takes ISO only).
 */
export function parseInstant(text: string, opts: { ms?: boolean } = {}): number | undefined {
  const v = text.trim();
  if (/^\d+$/.test(v)) {
    if (opts.ms === false) return undefined;
    const n = Number(v);
    return n <= MAX_INSTANT_MS ? n : undefined;
  }
  if (!ISO_TIME.test(v) || !isCalendarTime(v)) return undefined;
  const n = Date.parse(v.replace(',', '.'));
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Whether the date and time fields of an {@link ISO_TIME} text name a real day and time of the (proleptic)
 * Gregorian calendar: `Date.parse` rolls an impossible day over (2026-02-30 is read as March 2, found by a user),
 * which would silently shift a backfill's or a query's range. Hours 00–23, minutes and seconds 00–59.
 */
function isCalendarTime(v: string): boolean {
  const m = /^([+-]?\d{4,6})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?/i.exec(v);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  if (day > days) return false;
  return m[4] === undefined || (Number(m[4]) <= 23 && Number(m[5]) <= 59 && (m[6] === undefined || Number(m[6]) <= 59));
}
