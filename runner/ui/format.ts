/** Small text formats of the dashboard: times in UTC, relative times, durations. Pure. */

/** `2026-01-01 12:00:05` (UTC), or '—'. */
export function utc(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** `12:00:05.123` (UTC time of day with ms). */
export function clock(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return new Date(ms).toISOString().slice(11, 23);
}

/** A duration in words: `850 ms`, `12 s`, `4 m 10 s`, `3 h 5 m`, `2 d 4 h`. */
export function dur(ms: number): string {
  const a = Math.abs(ms);
  const sign = ms < 0 ? '−' : '';
  if (a < 1000) return `${sign}${Math.round(a)} ms`;
  const s = Math.round(a / 1000);
  if (s < 60) return `${sign}${s} s`;
  if (s < 3600) return `${sign}${Math.floor(s / 60)} m${s % 60 ? ` ${s % 60} s` : ''}`;
  if (s < 86400) return `${sign}${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} m` : ''}`;
  return `${sign}${Math.floor(s / 86400)} d${Math.floor((s % 86400) / 3600) ? ` ${Math.floor((s % 86400) / 3600)} h` : ''}`;
}

/** `in 5 s` / `3 m ago` relative to `nowMs`. */
export function rel(ms: number | null | undefined, nowMs: number): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return ms >= nowMs ? `in ${dur(ms - nowMs)}` : `${dur(nowMs - ms)} ago`;
}

/** The p-th percentile (0–100) of `xs` (nearest rank); null when empty. */
export function percentile(xs: readonly number[], p: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
