/** The CLI's text output: control characters from elsewhere are printed escaped, never as they are. */
import { describe, expect, it } from 'vitest';
import { printable, table } from './text.js';

// eslint-disable-next-line no-control-regex -- the assertion looks for raw control characters
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('printable', () => {
  it('escapes every control character (C0, DEL, C1, bidi overrides) and leaves other text alone', () => {
    expect(printable('db migration — ünïcødé ✓')).toBe('db migration — ünïcødé ✓');
    expect(printable('\x1b[31mred\x1b[0m\x07')).toBe('\\x1b[31mred\\x1b[0m\\x07');
    expect(printable('a\nb\rc\td')).toBe('a\\nb\\rc\\td');
    expect(printable('\x00\x7f\x9b\u202e\u2066')).toBe('\\x00\\x7f\\x9b\\u202e\\u2066');
    for (let c = 0; c < 0xa0; c++) {
      if (c >= 0x20 && c < 0x7f) continue;
      expect(printable(String.fromCharCode(c))).not.toMatch(RAW_CONTROL);
    }
  });

  it('makes every table cell printable, aligned on the escaped text, one line per row', () => {
    const out = table(['WHO', 'WHY'], [['alice', 'fix\x1b]0;owned\x07\nFAKE ROW'], ['bob', 'ok']]);
    for (const line of out.split('\n')) expect(line).not.toMatch(RAW_CONTROL);
    expect(out.split('\n')).toEqual(['WHO    WHY', 'alice  fix\\x1b]0;owned\\x07\\nFAKE ROW', 'bob    ok', '']);
  });

  it('aligns a table of 200,000 rows (next -n 40000 over 4 schedules overflowed the call stack)', () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => [String(i), 'x']);
    const out = table(['N', 'X'], rows);
    expect(out.split('\n')[1]).toBe('0       x');
    expect(out.split('\n').at(-2)).toBe('199999  x');
  });
});
