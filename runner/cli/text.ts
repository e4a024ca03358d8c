/**
 * Text output of the CLI for a person: aligned tables, times and spans.
 */

/** `ms` as ISO 8601 UTC, or `-`. */
export const iso = (ms: number | undefined | null): string => (ms === undefined || ms === null ? '-' : new Date(ms).toISOString());

/** A span for a person: `850ms`, `5.47s`, `2m03s`, `3h05m`, `2d04h`; negative spans keep their sign. */
export function formatSpanMs(ms: number): string {
  const sign = ms < 0 ? '-' : '';
  const a = Math.abs(Math.round(ms));
  const two = (n: number): string => String(n).padStart(2, '0');
  if (a < 1_000) return `${sign}${a}ms`;
  if (a < 60_000) return `${sign}${Number((a / 1000).toFixed(a < 10_000 ? 2 : 1))}s`;
  if (a < 3_600_000) return `${sign}${Math.floor(a / 60_000)}m${two(Math.floor(a / 1000) % 60)}s`;
  if (a < 86_400_000) return `${sign}${Math.floor(a / 3_600_000)}h${two(Math.floor(a / 60_000) % 60)}m`;
  return `${sign}${Math.floor(a / 86_400_000)}d${two(Math.floor(a / 3_600_000) % 24)}h`;
}

/** Control characters (C0, DEL, C1) and the bidirectional overrides and isolates (which reorder what follows). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `s` safe to print to a terminal: every control character written as an escape (`\n`, `\r`, `\t`, `\x1b`,
 * `\u202e` …), so that text from elsewhere (an audit reason, a run's error) can neither send terminal escape
 * sequences (colours, cursor moves, window titles, hyperlinks) nor break a table's lines, and a reader sees that
 * it held them.
 */
export function printable(s: string): string {
  return s.replace(UNPRINTABLE, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * An aligned table: columns as wide as their widest cell, two spaces apart, the last column unpadded. Every cell
 * is made {@link printable} first.
 * @param o.right indexes of columns aligned right (numbers).
 */
export function table(head: readonly string[], cells: readonly (readonly string[])[], o: { right?: readonly number[] } = {}): string {
  const rows = cells.map((r) => r.map(printable));
  // A loop, not Math.max(...cells): spreading 100,000+ arguments overflows the call stack.
  const widths = head.map((h) => h.length);
  for (const r of rows) for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i]!, (r[i] ?? '').length);
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : o.right?.includes(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[head, ...rows].map(line).join('\n')}\n`;
}
