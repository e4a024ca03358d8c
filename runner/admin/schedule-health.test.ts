/**
 * The health board applies the overdue rule with the schedule's calendar: fire times the calendar excludes are not
 * owed a success (runner/records/health.ts `expected`, wired from runner/engine/windows.ts).
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';
import type { RedisClock } from '../redis/clock.js';
import { Metrics } from './metrics.js';
import { ScheduleHealthBoard, type ScheduleHealthRow } from './schedule-health.js';

const t = (iso: string): number => Date.parse(iso);
const JOB = 'job: {kind: http, url: "http://127.0.0.1:1/"}';

async function schedule(name: string, extra: string) {
  const res = await parseScheduleText(
    `calendars:\n  - {name: freeze, ranges: [{from: "2026-03-05", to: "2026-03-09"}]}\nschedules:\n  - name: ${name}\n    cron: "0 10 * * *"\n    timeZone: UTC\n${extra}    ${JOB}\n`,
    'h.yaml',
  );
  expect(res.errors.map((e) => e.format())).toEqual([]);
  return res.schedules[0]!;
}

describe('schedule health with a calendar', () => {
  it('a daily schedule whose calendar excludes the days since its last success is not overdue; without it, it is', async () => {
    const frozen = await schedule('frozen', '    calendar: {exclude: freeze}\n');
    const plain = await schedule('plain', '');
    const board = new ScheduleHealthBoard(() => t('2026-03-01T00:00:00Z'));
    const lastOk = t('2026-03-04T10:00:30Z');
    const values = { lastSuccessMs: new Map([['frozen', lastOk], ['plain', lastOk]]), lastResult: new Map(), suspended: new Set<string>() };
    const { rows, totals } = await board.update([frozen, plain], values, t('2026-03-09T12:00:00Z'));
    const row = (n: string) => [...rows].find((r) => r.name === n)!;
    expect(row('frozen')).toMatchObject({ overdueMs: 0, nextFireMs: t('2026-03-10T10:00:00Z') });
    // Owed since 2026-03-05 10:00 plus the 5-minute default grace.
    expect(row('plain').overdueMs).toBe(t('2026-03-09T12:00:00Z') - t('2026-03-05T10:05:00Z'));
    expect(totals.overdue).toBe(1);
  });
});

describe('per-schedule health series', () => {
  const row = (name: string, overdueMs: number): ScheduleHealthRow => ({ name, nextFireMs: 1_800_000_000_000, lastSuccessMs: undefined, overdueMs, lastResult: undefined, suspended: false });
  // Only the clock's offset gauge reads the clock; this test renders the per-schedule text.
  const clock = { offsetMs: 0 } as unknown as RedisClock;

  it('are built at the scrape from the latest pass rows, and rebuilt after the next pass', async () => {
    const metrics = new Metrics({ clock, activeRuns: () => 0, replica: 'r1' });
    try {
      await metrics.setScheduleHealth([row('a', 0), row('b', 5_000)], { total: 2, overdue: 1, failing: 0, suspended: 0 });
      const first = (await metrics.render()).body.toString();
      expect(first).toContain('cronflock_schedule_overdue_seconds{schedule="b",replica="r1"} 5\n');
      expect(first).toContain('cronflock_schedules{health="overdue",replica="r1"} 1');
      const perSchedule = (text: string): string[] => text.split('\n').filter((l) => l.includes('cronflock_schedule_'));
      expect(perSchedule((await metrics.render()).body.toString())).toEqual(perSchedule(first));
      await metrics.setScheduleHealth([row('a', 0), row('c', 7_000)], { total: 2, overdue: 1, failing: 0, suspended: 0 });
      const second = (await metrics.render()).body.toString();
      expect(second).toContain('cronflock_schedule_overdue_seconds{schedule="c",replica="r1"} 7\n');
      expect(second).not.toContain('schedule="b"');
    } finally {
      metrics.close();
    }
  });
});

describe('the health board across passes', () => {
  it('forgets a schedule no longer run, recomputes only what changed, and keeps the rest', async () => {
    const a = await schedule('a', '');
    const b = await schedule('b', '');
    const board = new ScheduleHealthBoard(() => t('2026-03-01T00:00:00Z'));
    const none = { lastSuccessMs: new Map<string, number>(), lastResult: new Map(), suspended: new Set<string>() };
    const now = t('2026-03-02T09:00:00Z');
    expect([...(await board.update([a, b], none, now)).rows].map((r) => r.name)).toEqual(['a', 'b']);
    expect(board.recomputed).toBe(2);
    await board.update([a], none, now + 1000);
    expect(board.recomputed).toBe(0);
    // b was forgotten: seen again, it is recomputed (a still is not).
    const again = await board.update([a, b], none, now + 2000);
    expect(board.recomputed).toBe(1);
    expect([...again.rows].map((r) => r.name)).toEqual(['a', 'b']);
    // A new success of a: only a is recomputed.
    await board.update([a, b], { ...none, lastSuccessMs: new Map([['a', now]]) }, now + 3000);
    expect(board.recomputed).toBe(1);
  });
});

describe('the health board keeps schedules in slots', () => {
  it("gives a forgotten schedule's slot to a new one without carrying over its values, and rows read as the pass left them", async () => {
    const a = await schedule('a', '');
    const b = await schedule('b', '');
    const c = await schedule('c', '    suspend: true\n');
    const board = new ScheduleHealthBoard(() => t('2026-03-01T00:00:00Z'));
    const none = { lastSuccessMs: new Map<string, number>(), lastResult: new Map(), suspended: new Set<string>() };
    const now = t('2026-03-02T09:00:00Z');
    const lastOkB = t('2026-03-02T08:00:00Z');
    const failed = { state: 'failed', consecutiveFailures: 2 } as unknown as import('../records/last-result.js').LastResult;
    const first = await board.update([a, b], { ...none, lastSuccessMs: new Map([['b', lastOkB]]), lastResult: new Map([['b', failed]]) }, now);
    expect([...first.rows].find((r) => r.name === 'b')).toMatchObject({ lastSuccessMs: lastOkB, lastResult: failed, suspended: false });
    expect(first.totals).toMatchObject({ total: 2, failing: 1, suspended: 0 });
    await board.update([a], none, now + 1000); // b forgotten: its slot is free
    const third = await board.update([a, c], none, now + 2000); // c takes b's slot
    const rowC = [...third.rows].find((r) => r.name === 'c')!;
    expect(rowC.lastSuccessMs).toBeUndefined();
    expect(rowC.lastResult).toBeUndefined();
    expect(rowC.suspended).toBe(true);
    expect(rowC.overdueMs).toBe(0); // suspended: never overdue (no overdue instant)
    expect(rowC.nextFireMs).toBe(t('2026-03-02T10:00:00Z'));
    expect(third.totals).toMatchObject({ total: 2, overdue: 1, failing: 0, suspended: 1 }); // a (no success since its start), not c
    expect(board.recomputed).toBe(1);
    // Each schedule's row equals the rule applied afresh (a board that saw nothing before).
    const fresh = await new ScheduleHealthBoard(() => t('2026-03-01T00:00:00Z')).update([a, c], none, now + 2000);
    expect([...third.rows]).toEqual([...fresh.rows]);
  });
});

