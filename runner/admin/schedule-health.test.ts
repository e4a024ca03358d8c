/**
 * The health board applies the overdue rule with the schedule's calendar: fire times the calendar excludes are not
 * owed a success (runner/records/health.ts `expected`, wired from runner/engine/windows.ts).
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';
import { ScheduleHealthBoard } from './schedule-health.js';

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
    const row = (n: string) => rows.find((r) => r.name === n)!;
    expect(row('frozen')).toMatchObject({ overdueMs: 0, nextFireMs: t('2026-03-10T10:00:00Z') });
    // Owed since 2026-03-05 10:00 plus the 5-minute default grace.
    expect(row('plain').overdueMs).toBe(t('2026-03-09T12:00:00Z') - t('2026-03-05T10:05:00Z'));
    expect(totals.overdue).toBe(1);
  });
});
