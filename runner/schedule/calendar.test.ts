/**
 * Calendars: due times of calendar schedules, through the loader and the planner's rule, against expansions
 * written here independently (JavaScript Date arithmetic and the EU DST rule, not the code under test).
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';
import { windowDisposition } from '../engine/windows.js';
import { fireTimeMs } from './occurrence.js';
import { Calendar, dayStartMs, formatDay, localDay, parseIsoDay, parseMonthDay, parseWeekday } from './calendar.js';
import { zoneTimeline } from './zone.js';

const DAY = 86_400_000;
const HOLIDAYS_2026 = ['2026-01-01', '2026-04-03', '2026-04-06', '2026-05-01', '2026-05-14', '2026-05-25', '2026-10-03', '2026-12-25', '2026-12-26', '2027-01-01'];

/** EU summer time: from the last Sunday of March 01:00 UTC to the last Sunday of October 01:00 UTC. */
function lastSundayUtc(year: number, month: number): number {
  const last = new Date(Date.UTC(year, month + 1, 0));
  return Date.UTC(year, month, last.getUTCDate() - last.getUTCDay(), 1);
}
/** Berlin wall time (y, m 0-11, d, h) → UTC ms, by the EU rule (valid for hours that exist once). */
function berlin(y: number, m: number, d: number, h: number): number {
  const asWinter = Date.UTC(y, m, d, h) - 3_600_000;
  const summer = asWinter >= lastSundayUtc(y, 2) && asWinter < lastSundayUtc(y, 9);
  return Date.UTC(y, m, d, h) - (summer ? 7_200_000 : 3_600_000);
}
const iso = (y: number, m: number, d: number): string => `${y}-${String(m + 1).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
const isBusinessDay = (y: number, m: number, d: number): boolean => {
  const wd = new Date(Date.UTC(y, m, d)).getUTCDay();
  return wd !== 0 && wd !== 6 && !HOLIDAYS_2026.includes(iso(y, m, d));
};

const FILE = (schedules: string): string => `calendars:
  - name: holidays
    timeZone: Europe/Berlin
    dates: ${JSON.stringify(HOLIDAYS_2026)}
  - name: business-days
    timeZone: Europe/Berlin
    weekdays: [MON-FRI]
    exclude: [holidays]
schedules:
${schedules}`;

async function load(text: string) {
  const res = await parseScheduleText(text, 'cal.yaml');
  expect(res.errors.map((e) => e.format())).toEqual([]);
  return res.schedules;
}

/** Due times the schedule runs at (the planner's window rule), in [fromMs, toMs). */
function runs(s: Awaited<ReturnType<typeof load>>[number], fromMs: number, toMs: number): number[] {
  const out: number[] = [];
  for (let t = s.due.next(fromMs - 1); t !== null && t < toMs; t = s.due.next(t)) {
    if (windowDisposition(s, t, fireTimeMs(s.name, t, s.jitterMs)).disposition === 'run') out.push(t);
  }
  return out;
}

describe('calendar schedules against an independent expansion', () => {
  it('a business-day schedule over a year with a holiday calendar', async () => {
    const [payroll] = await load(FILE(`  - name: payroll
    cron: "0 9 * * *"
    timeZone: Europe/Berlin
    calendar: {include: business-days}
    job: {kind: http, url: "http://127.0.0.1:1/"}
`));
    const expected: number[] = [];
    for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2027, 0, 1); t += DAY) {
      const d = new Date(t);
      if (isBusinessDay(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())) expected.push(berlin(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), 9));
    }
    expect(expected).toHaveLength(254); // 261 weekdays in 2026; 7 of the holidays fall on weekdays (Oct 3 and Dec 26 do not)
    expect(runs(payroll!, Date.UTC(2026, 0, 1) - 2 * 3_600_000, Date.UTC(2027, 0, 1) - 2 * 3_600_000)).toEqual(expected);
  });

  it('the last and the first business day of each month, across month ends and both DST changes', async () => {
    const [last, first] = await load(FILE(`  - name: month-end-close
    cron: "0 18 * * *"
    timeZone: Europe/Berlin
    calendar: {include: business-days, nth: -1}
    job: {kind: http, url: "http://127.0.0.1:1/"}
  - name: month-start
    cron: "30 2 * * *"
    timeZone: Europe/Berlin
    calendar: {include: business-days, nth: 1}
    job: {kind: http, url: "http://127.0.0.1:1/"}
`));
    const lastDays: number[] = [];
    const firstDays: number[] = [];
    for (let m = 0; m < 12; m++) {
      let d = new Date(Date.UTC(2026, m + 1, 0)).getUTCDate();
      while (!isBusinessDay(2026, m, d)) d--;
      lastDays.push(berlin(2026, m, d, 18));
      let f = 1;
      while (!isBusinessDay(2026, m, f)) f++;
      firstDays.push(berlin(2026, m, f, 2) + 30 * 60_000);
    }
    const from = Date.UTC(2026, 0, 1);
    const to = Date.UTC(2026, 11, 31, 23);
    expect(runs(last!, from, to)).toEqual(lastDays);
    expect(runs(first!, from, to)).toEqual(firstDays);
    // March ends after the spring change (CEST), October after the fall change (CET).
    expect(new Date(lastDays[2]!).toISOString()).toBe('2026-03-31T16:00:00.000Z');
    expect(new Date(lastDays[9]!).toISOString()).toBe('2026-10-30T17:00:00.000Z');
    // Across the year end: December 31 is the last, January 1 2027 a holiday, January 4 the first.
    expect(runs(first!, Date.UTC(2026, 11, 31), Date.UTC(2027, 0, 10))).toEqual([berlin(2027, 0, 4, 2) + 30 * 60_000]);
  });

  it('a day is a local day of the calendar zone: 23 and 25 hours long on DST days', async () => {
    const [hourly] = await load(`calendars:
  - {name: spring, timeZone: Europe/Berlin, dates: ["2026-03-29"]}
  - {name: fall, timeZone: Europe/Berlin, dates: ["2026-10-25"]}
schedules:
  - name: hourly
    cron: "0 * * * *"
    timeZone: UTC
    calendar: {include: [spring, fall]}
    job: {kind: http, url: "http://127.0.0.1:1/"}
`);
    const spring = runs(hourly!, Date.UTC(2026, 2, 28), Date.UTC(2026, 2, 31));
    expect(spring).toHaveLength(23);
    expect(new Date(spring[0]!).toISOString()).toBe('2026-03-28T23:00:00.000Z');
    expect(new Date(spring.at(-1)!).toISOString()).toBe('2026-03-29T21:00:00.000Z');
    const fall = runs(hourly!, Date.UTC(2026, 9, 24), Date.UTC(2026, 9, 27));
    expect(fall).toHaveLength(25);
    expect(new Date(fall[0]!).toISOString()).toBe('2026-10-24T22:00:00.000Z');
  });
});

describe('Calendar', () => {
  it('explicit, yearly and range dates and weekday names', () => {
    const c = new Calendar({ name: 'c', timeZone: 'UTC', dates: [parseIsoDay('2026-07-04')!], yearly: [parseMonthDay('02-29')!], ranges: [[parseIsoDay('2026-08-10')!, parseIsoDay('2026-08-12')!]] });
    const days = (from: string, to: string): string[] => {
      const out: string[] = [];
      for (let d = parseIsoDay(from)!; d <= parseIsoDay(to)!; d++) if (c.containsDay(d)) out.push(formatDay(d));
      return out;
    };
    expect(days('2026-01-01', '2028-12-31')).toEqual(['2026-07-04', '2026-08-10', '2026-08-11', '2026-08-12', '2028-02-29']);
    expect(parseWeekday('mon-wed')).toEqual([1, 2, 3]);
    expect(parseWeekday('FRI-MON')).toEqual([5, 6, 0, 1]);
    expect(parseWeekday('Sunday')).toEqual([0]);
    expect(parseWeekday('MONX')).toBeNull();
    expect(parseIsoDay('2026-02-29')).toBeNull();
    expect(parseMonthDay('04-31')).toBeNull();
  });

  it('a referenced calendar keeps its zone: a New York holiday is excluded from Berlin business days from 06:00 Berlin', () => {
    const ny = new Calendar({ name: 'holidays-us', timeZone: 'America/New_York', dates: [parseIsoDay('2026-11-26')!] });
    const biz = new Calendar({ name: 'business-days', timeZone: 'Europe/Berlin', weekdays: [1, 2, 3, 4, 5], exclude: [ny] });
    expect(biz.contains(Date.UTC(2026, 10, 26, 4, 59))).toBe(true); // 05:59 Berlin = 23:59 Wednesday in New York
    expect(biz.contains(Date.UTC(2026, 10, 26, 5, 0))).toBe(false); // 06:00 Berlin = midnight in New York
    expect(biz.whyNot(Date.UTC(2026, 10, 26, 12))).toBe('holidays-us');
    expect(biz.contains(Date.UTC(2026, 10, 27, 4, 59))).toBe(false); // still Thursday in New York
    expect(biz.contains(Date.UTC(2026, 10, 27, 5, 0))).toBe(true);
  });

  it('the first instant of a day whose midnight falls in a DST gap (Havana springs from 00:00 to 01:00)', () => {
    const zone = zoneTimeline('America/Havana');
    const day = parseIsoDay('2026-03-08')!;
    const start = dayStartMs(zone, day);
    expect(localDay(zone, start)).toBe(day);
    expect(localDay(zone, start - 1)).toBe(day - 1);
    expect(new Date(start).toISOString()).toBe('2026-03-08T05:00:00.000Z');
  });

  it('a calendar with only exclude has every other day; nth alone picks from every day', () => {
    const h = new Calendar({ name: 'h', timeZone: 'UTC', dates: [parseIsoDay('2026-05-01')!] });
    const notH = new Calendar({ name: 'not-h', timeZone: 'UTC', exclude: [h] });
    expect(notH.containsDay(parseIsoDay('2026-05-01')!)).toBe(false);
    expect(notH.containsDay(parseIsoDay('2026-05-02')!)).toBe(true);
    const second = new Calendar({ name: 'second', timeZone: 'UTC', nth: [2, -2] });
    const may = [...Array(31).keys()].map((i) => parseIsoDay(`2026-05-${String(i + 1).padStart(2, '0')}`)!).filter((d) => second.containsDay(d));
    expect(may.map(formatDay)).toEqual(['2026-05-02', '2026-05-30']);
  });
});
