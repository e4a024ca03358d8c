/**
 * Instants as a person in a schedule's time zone reads them: ISO 8601 local time with the UTC offset in force
 * (RFC 3339), e.g. `2026-03-29T03:30:00.000+02:00`. The offset tells the two passes of a repeated hour apart.
 */
import { zoneTimeline } from '../schedule/zone.js';

/** `atMs` (UTC ms) as local time in `timeZone` with its offset; `Z` for a zero offset in UTC itself. */
export function localIso(atMs: number, timeZone: string): string {
  const offsetMs = zoneTimeline(timeZone).offsetAtMs(atMs);
  const wall = new Date(atMs + offsetMs).toISOString().slice(0, -1);
  if (offsetMs === 0 && /^(UTC|Etc\/UTC|Etc\/GMT|GMT|Z)$/i.test(timeZone)) return `${wall}Z`;
  const sign = offsetMs < 0 ? '-' : '+';
  const minutes = Math.abs(Math.round(offsetMs / 60_000));
  return `${wall}${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}
