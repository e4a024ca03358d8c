/**
 * The log capture on a real redis-server: lines about an occurrence go to its attempt's list, bounded to the last
 * 200 lines and 64 KiB per attempt; other lines are not kept; long lines are cut.
 */
import { describe, expect, it } from 'vitest';
import { scriptHarness } from '../../test/support/script-harness.js';
import { HistoryKeys } from './keys.js';
import { LogCapture, MAX_BYTES, MAX_LINE_BYTES, MAX_LINES } from './log-capture.js';
import { readLogs } from './logs.js';

const h = scriptHarness();
const line = (o: Record<string, unknown>): string => `${JSON.stringify({ level: 30, time: '2026-01-01T00:00:00.000Z', ...o })}\n`;

describe('log capture', () => {
  it('keeps the lines of each attempt, the last 200 of them, and nothing without an occurrence', async () => {
    const c = new LogCapture();
    c.attach(h.redis, h.keys, 60_000);
    c.write(line({ msg: 'replica running' }));
    for (let i = 0; i < 250; i++) c.write(line({ occurrence: 's@2026-01-01T00:00:00.000Z', attempt: 1, msg: `line ${i}` }));
    c.write(line({ occurrence: 's@2026-01-01T00:00:00.000Z', attempt: 2, msg: 'second attempt' }));
    c.write(line({ occurrence: 's@2026-01-01T00:00:00.000Z', msg: 'delivery closed without a run' }));
    await c.flush();
    for (let i = 250; i < 260; i++) c.write(line({ occurrence: 's@2026-01-01T00:00:00.000Z', attempt: 1, msg: `line ${i}` }));
    await c.stop();
    const hk = new HistoryKeys(h.keys);
    const first = await h.redis.lrange(hk.log('s@2026-01-01T00:00:00.000Z', 1), 0, -1);
    expect(first).toHaveLength(MAX_LINES);
    expect(JSON.parse(first[0]!).msg).toBe('line 60');
    expect(JSON.parse(first[MAX_LINES - 1]!).msg).toBe('line 259');
    expect(await h.redis.pttl(hk.log('s@2026-01-01T00:00:00.000Z', 1))).toBeGreaterThan(50_000);
    const all = await readLogs(h.redis, h.keys, 's@2026-01-01T00:00:00.000Z', 2);
    expect(all.filter((l) => l.attempt === 2).map((l) => l.msg)).toEqual(['second attempt']);
    expect(all.filter((l) => l.attempt === 0).map((l) => l.msg)).toEqual(['delivery closed without a run']);
    expect(all.some((l) => l.msg === 'replica running')).toBe(false);
  });

  it('keeps at most 64 KiB per attempt and cuts a line longer than 2 KiB', async () => {
    const c = new LogCapture();
    c.attach(h.redis, h.keys, 60_000);
    for (let i = 0; i < 100; i++) c.write(line({ occurrence: 'b@2026-01-01T00:00:00.000Z', attempt: 1, msg: `${i} ${'x'.repeat(1500)}` }));
    c.write(line({ occurrence: 'b@2026-01-01T00:00:00.000Z', attempt: 1, msg: 'y'.repeat(10_000) }));
    await c.stop();
    const kept = await h.redis.lrange(new HistoryKeys(h.keys).log('b@2026-01-01T00:00:00.000Z', 1), 0, -1);
    expect(kept.reduce((n, l) => n + Buffer.byteLength(l), 0)).toBeLessThanOrEqual(MAX_BYTES);
    const last = JSON.parse(kept[kept.length - 1]!) as { msg: string; truncated: boolean };
    expect(last.truncated).toBe(true);
    expect(Buffer.byteLength(kept[kept.length - 1]!)).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(JSON.parse(kept[kept.length - 2]!).msg.startsWith('99 ')).toBe(true);
  });
});
