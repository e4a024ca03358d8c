/**
 * `.ics` calendars through the loader: RRULE recurrences, EXDATE, RECURRENCE-ID overrides, cancelled instances,
 * TZIDs from the tz database and from the file's own VTIMEZONE, and refusals with file:line:col.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSchedules } from '../config/load.js';
import { windowDisposition } from '../engine/windows.js';
import { icsDays } from './ics.js';
import { formatDay, parseIsoDay } from './calendar.js';

const dir = mkdtempSync(join(tmpdir(), 'cronflock-ics-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ICS = `BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//cronflock//test//EN
BEGIN:VTIMEZONE
TZID:W. Europe Standard Time
BEGIN:STANDARD
DTSTART:16011028T030000
RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:16010325T020000
RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:christmas
DTSTART;VALUE=DATE:20241225
DTEND;VALUE=DATE:20241227
RRULE:FREQ=YEARLY
EXDATE;VALUE=DATE:20261225
SUMMARY:Christmas (two days, not in 2026)
END:VEVENT
BEGIN:VEVENT
UID:freeze
DTSTART;TZID=W. Europe Standard Time:20260105T230000
DTEND;TZID=W. Europe Standard Time:20260106T003000
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=4
SUMMARY:Monday night freeze, 23:00-00:30 Berlin time
END:VEVENT
BEGIN:VEVENT
UID:freeze
RECURRENCE-ID;TZID=W. Europe Standard Time:20260112T230000
DTSTART;TZID=W. Europe Standard Time:20260114T100000
DTEND;TZID=W. Europe Standard Time:20260114T110000
END:VEVENT
BEGIN:VEVENT
UID:freeze
RECURRENCE-ID;TZID=W. Europe Standard Time:20260119T230000
DTSTART;TZID=W. Europe Standard Time:20260119T230000
STATUS:CANCELLED
END:VEVENT
BEGIN:VEVENT
UID:ny-party
DTSTART;TZID=America/New_York:20261231T200000
DURATION:PT2H
END:VEVENT
END:VCALENDAR
`;

describe('.ics calendars', () => {
  it('days of RRULE events with EXDATE, overrides, cancelled instances and zones', async () => {
    const days = await icsDays(ICS, 'Europe/Berlin');
    const found: string[] = [];
    for (let d = parseIsoDay('2024-01-01')!; d <= parseIsoDay('2027-12-31')!; d++) if (days.has(d)) found.push(formatDay(d));
    expect(found).toEqual([
      '2024-12-25', '2024-12-26', // DTEND exclusive: two days
      '2025-12-25', '2025-12-26',
      '2026-01-05', '2026-01-06', // 23:00 to 00:30 Berlin touches two days
      '2026-01-14', // the 12th moved to the 14th by its RECURRENCE-ID override
      // the 19th is cancelled
      '2026-01-26', '2026-01-27',
      // 2026-12-25 is an EXDATE: no Christmas that year
      '2027-01-01', // 20:00-22:00 New York on Dec 31 is 02:00-04:00 Berlin on Jan 1
      '2027-12-25', '2027-12-26',
    ]);
    // In a UTC calendar the same events cover UTC days: the VTIMEZONE (not the calendar zone) reads 23:00 as
    // 22:00 UTC, so the freeze no longer reaches the next day.
    const utc = await icsDays(ICS, 'UTC');
    const jan: string[] = [];
    for (let d = parseIsoDay('2026-01-01')!; d <= parseIsoDay('2026-01-31')!; d++) if (utc.has(d)) jan.push(formatDay(d));
    expect(jan).toEqual(['2026-01-05', '2026-01-14', '2026-01-26']);
    // Asked out of order, a day gives the same answer (the lazy expansion only grows).
    const fresh = await icsDays(ICS, 'Europe/Berlin');
    expect(fresh.has(parseIsoDay('2027-12-25')!)).toBe(true);
    expect(fresh.has(parseIsoDay('2024-12-26')!)).toBe(true);
    expect(fresh.has(parseIsoDay('2026-12-25')!)).toBe(false);
  });

  it('a schedule excludes the days of an .ics calendar named relative to its file', async () => {
    writeFileSync(join(dir, 'holidays.ics'), ICS);
    writeFileSync(
      join(dir, 'calendars.yaml'),
      'calendars:\n  - name: ics-holidays\n    timeZone: Europe/Berlin\n    ics: ./holidays.ics\n',
    );
    writeFileSync(
      join(dir, 'schedules.yaml'),
      `schedules:
  - name: nightly
    cron: "0 9 * * *"
    timeZone: Europe/Berlin
    calendar: {exclude: ics-holidays}
    job: {kind: http, url: "http://127.0.0.1:1/"}
`,
    );
    const res = await loadSchedules(dir);
    expect(res.errors.map((e) => e.format())).toEqual([]);
    const s = res.schedules.find((x) => x.name === 'nightly')!;
    const decide = (isoDue: string) => windowDisposition(s, Date.parse(isoDue), Date.parse(isoDue));
    expect(decide('2025-12-25T08:00:00Z')).toMatchObject({ disposition: 'skipped', reason: 'calendar ics-holidays' });
    expect(decide('2026-12-25T08:00:00Z')).toMatchObject({ disposition: 'run' });
    expect(decide('2026-01-14T08:00:00Z')).toMatchObject({ disposition: 'skipped' });
    expect(decide('2026-01-19T08:00:00Z')).toMatchObject({ disposition: 'run' });
  });

  it('refuses a missing or invalid .ics file, and a TZID nobody defines, at the ics field', async () => {
    const bad = mkdtempSync(join(tmpdir(), 'cronflock-ics-bad-'));
    try {
      writeFileSync(join(bad, 'broken.ics'), 'BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:2026\n');
      writeFileSync(join(bad, 'tz.ics'), 'BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:x\nDTSTART;TZID=Mars/Olympus:20260101T100000\nEND:VEVENT\nEND:VCALENDAR\n');
      writeFileSync(
        join(bad, 'c.yaml'),
        'calendars:\n  - name: a\n    ics: ./missing.ics\n  - name: b\n    ics: ./broken.ics\n  - name: c\n    ics: ./tz.ics\n',
      );
      const res = await loadSchedules(bad);
      expect(res.errors.map((e) => `${e.line}:${e.col} ${e.code} ${e.field}`)).toEqual([
        '3:10 CALENDAR_INVALID calendars[0].ics',
        '5:10 CALENDAR_INVALID calendars[1].ics',
        '7:10 CALENDAR_INVALID calendars[2].ics',
      ]);
      expect(res.errors[0]!.reason).toMatch(/cannot read .*missing\.ics/);
      expect(res.errors[1]!.reason).toMatch(/not a valid iCalendar file/);
      expect(res.errors[2]!.reason).toMatch(/TZID "Mars\/Olympus"/);
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });
});
