/**
 * Loading calendars and blackouts: what is refused (with file:line:col), across the files of a directory, and
 * what changes a schedule's definition hash.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ICS_FILE_BYTES } from './calendars.js';
import { loadSchedules, parseScheduleText } from './load.js';

const JOB = 'job: {kind: http, url: "http://127.0.0.1:1/"}';
let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function directory(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-cal-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const where = (e: { file: string; line: number; col: number; code: string; field: string }): string =>
  `${e.file.split('/').pop()}:${e.line}:${e.col} ${e.code} ${e.field}`;

describe('calendars in schedule files', () => {
  it('refuses unknown calendar names, in a schedule and in a calendar, with file:line:col and the known names', async () => {
    const res = await parseScheduleText(
      `calendars:
  - name: holidays
    dates: ["2026-12-25"]
  - name: business-days
    weekdays: [MON-FRI]
    exclude: [holidays, holidayz]
schedules:
  - name: a
    cron: "0 9 * * *"
    calendar: {include: busines-days}
    ${JOB}
  - name: b
    cron: "0 9 * * *"
    blackouts: [{calendar: freeze, action: skip}]
    ${JOB}
`,
      'f.yaml',
    );
    expect(res.schedules).toEqual([]);
    expect(res.errors.map(where)).toEqual([
      'f.yaml:6:25 CALENDAR_UNKNOWN calendars[1].exclude[1]',
      'f.yaml:10:25 CALENDAR_UNKNOWN schedules[0].calendar.include',
      'f.yaml:14:28 CALENDAR_UNKNOWN schedules[1].blackouts[0].calendar',
    ]);
    expect(res.errors[0]!.format()).toContain('f.yaml:6:25: calendars[1].exclude[1]: no calendar named "holidayz"');
    expect(res.errors[0]!.hint).toContain('did you mean "holidays"?');
    expect(res.errors[1]!.hint).toContain('known calendars: business-days, holidays');
  });

  it('refuses a blackout without an action, with file:line:col and what the actions do', async () => {
    const res = await parseScheduleText(
      `schedules:
  - name: a
    cron: "0 9 * * *"
    blackouts:
      - {cron: "0 2 * * SUN", duration: 2h}
      - {cron: "0 2 * * SUN", action: delay}
      - {calendar: x, cron: "0 2 * * *", duration: 1h, action: skip}
      - {cron: "0 2 * * SUN", duration: 1h, action: pause}
    ${JOB}
`,
      'f.yaml',
    );
    expect(res.errors.map(where)).toEqual([
      'f.yaml:5:9 SCHEMA_INVALID schedules[0].blackouts[0].action',
      'f.yaml:6:9 SCHEMA_INVALID schedules[0].blackouts[1]',
      'f.yaml:7:20 CALENDAR_UNKNOWN schedules[0].blackouts[2].calendar',
      'f.yaml:7:29 SCHEMA_INVALID schedules[0].blackouts[2].cron',
      'f.yaml:8:53 SCHEMA_INVALID schedules[0].blackouts[3].action',
    ]);
    expect(res.errors[0]!.format()).toMatch(/blackouts\[0\]\.action: is required: skip .*delay .*abort/);
    expect(res.errors[1]!.reason).toContain('needs a duration');
    expect(res.errors[3]!.reason).toContain('exactly one of calendar and cron');
  });

  it('refuses a cycle of calendars at each reference on it', async () => {
    const res = await parseScheduleText(
      `calendars:
  - {name: a, weekdays: [MON], exclude: [b]}
  - {name: b, weekdays: [TUE], include: [c]}
  - {name: c, exclude: [a]}
  - {name: self, weekdays: [MON], exclude: self}
`,
      'f.yaml',
    );
    expect(res.errors.map(where)).toEqual([
      'f.yaml:2:42 CALENDAR_CYCLE calendars[0].exclude[0]',
      'f.yaml:3:42 CALENDAR_CYCLE calendars[1].include[0]',
      'f.yaml:4:25 CALENDAR_CYCLE calendars[2].exclude[0]',
      'f.yaml:5:44 CALENDAR_CYCLE calendars[3].exclude',
    ]);
    expect(res.errors[0]!.reason).toContain('a → b → c → a');
  });

  it('refuses bad dates, weekdays, zones and nth where they are written', async () => {
    const res = await parseScheduleText(
      `calendars:
  - name: bad
    timeZone: Europe/Berln
    dates: ["2026-02-30", "2026-12-25"]
    yearly: ["13-01"]
    weekdays: [MON, FUNDAY]
    ranges: [{from: "2026-12-31", to: "2026-12-01"}]
    nth: 0
  - name: nothing
`,
      'f.yaml',
    );
    expect(res.errors.map(where)).toEqual([
      'f.yaml:3:15 SCHEMA_INVALID calendars[0].timeZone',
      'f.yaml:4:13 SCHEMA_INVALID calendars[0].dates[0]',
      'f.yaml:5:14 SCHEMA_INVALID calendars[0].yearly[0]',
      'f.yaml:6:21 SCHEMA_INVALID calendars[0].weekdays[1]',
      'f.yaml:7:39 SCHEMA_INVALID calendars[0].ranges[0].to',
      'f.yaml:8:10 SCHEMA_INVALID calendars[0].nth',
      'f.yaml:9:11 SCHEMA_INVALID calendars[1].name',
    ]);
    expect(res.errors[0]!.reason).toContain('did you mean "Europe/Berlin"');
    expect(res.errors[6]!.reason).toContain('lists no days');
  });

  it('refuses a zone spelled with other letter case, in a calendar and in a schedule, with the spelling meant', async () => {
    const res = await parseScheduleText(
      `calendars:\n  - {name: c, timeZone: europe/berlin, dates: ["2026-12-25"]}\nschedules:\n  - {name: s, cron: "0 9 * * *", timeZone: est, ${JOB}}\n`,
      'f.yaml',
    );
    expect(res.errors.map(where)).toEqual(['f.yaml:2:25 SCHEMA_INVALID calendars[0].timeZone', 'f.yaml:4:44 ZONE_UNKNOWN schedules[0].timeZone']);
    expect(res.errors[0]!.reason).toContain('time zone "europe/berlin" is not spelled as the tz database spells it');
    expect(res.errors[0]!.reason).toContain('did you mean "Europe/Berlin"?');
    expect(res.errors[1]!.reason).toContain('did you mean "EST" (UTC-5 all year, no daylight saving) or "America/New_York"');
  });

  it('resolves names across the files of a directory; a calendar file alone is a valid file', async () => {
    const dir = directory({
      'a-calendars.yaml': 'calendars:\n  - {name: holidays, timeZone: Europe/Berlin, dates: ["2026-12-25"]}\n',
      'b-schedules.yaml': `schedules:\n  - name: s\n    cron: "0 9 * * *"\n    timeZone: Europe/Berlin\n    calendar: {exclude: holidays}\n    ${JOB}\n`,
    });
    const res = await loadSchedules(dir);
    expect(res.errors).toEqual([]);
    expect(res.files.map((f) => [f.file.split('/').pop(), f.ok, f.scheduleCount])).toEqual([
      ['a-calendars.yaml', true, 0],
      ['b-schedules.yaml', true, 1],
    ]);
    expect(res.schedules[0]!.windows!.calendar!.exclusion(Date.parse('2026-12-25T08:00:00Z'))).toBe('calendar holidays');
  });

  it('refuses an .ics file over 4 MiB before reading it, naming the file and the limit; the other files load', async () => {
    const big = 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\n' + 'X-PAD:' + 'x'.repeat(MAX_ICS_FILE_BYTES) + '\r\nEND:VCALENDAR\r\n';
    const dir = directory({
      'a.yaml': `calendars:\n  - {name: off, ics: ./off.ics}\nschedules:\n  - name: s\n    cron: "0 9 * * *"\n    calendar: {exclude: off}\n    ${JOB}\n`,
      'b.yaml': `schedules:\n  - name: t\n    cron: "0 9 * * *"\n    ${JOB}\n`,
      'off.ics': big,
    });
    const res = await loadSchedules(dir);
    expect(res.errors.map(where)).toEqual(['a.yaml:2:22 CALENDAR_INVALID calendars[0].ics']);
    expect(res.errors[0]!.message).toMatch(/is 4\.0 MiB; an \.ics file may be at most 4 MiB/);
    expect(res.schedules.map((x) => x.name)).toEqual(['t']);
  });

  it('refuses a calendar name defined in two files (both), and a file that uses a refused file\'s calendar', async () => {
    const dir = directory({
      'a.yaml': 'calendars:\n  - {name: holidays, dates: ["2026-12-25"]}\n  - {name: freeze, dates: ["2026-12-24"]}\n',
      'b.yaml': 'calendars:\n  - {name: holidays, dates: ["2026-12-26"]}\n',
      'c.yaml': `schedules:\n  - name: s\n    cron: "0 9 * * *"\n    blackouts: [{calendar: freeze, action: skip}]\n    ${JOB}\n`,
      'd.yaml': `schedules:\n  - name: t\n    cron: "0 9 * * *"\n    ${JOB}\n`,
      // Transitively: e's calendar includes a refused one, f's schedule uses e's calendar.
      'e.yaml': 'calendars:\n  - {name: freeze-and-more, include: [freeze], dates: ["2026-12-31"]}\n',
      'f.yaml': `schedules:\n  - name: u\n    cron: "0 9 * * *"\n    calendar: {exclude: freeze-and-more}\n    ${JOB}\n`,
    });
    const res = await loadSchedules(dir);
    expect(res.errors.map(where)).toEqual([
      'a.yaml:2:12 NAME_DUPLICATE calendars[0].name',
      'b.yaml:2:12 NAME_DUPLICATE calendars[0].name',
      'c.yaml:4:28 CALENDAR_UNKNOWN schedules[0].blackouts[0].calendar',
      'e.yaml:2:39 CALENDAR_UNKNOWN calendars[0].include[0]',
      'f.yaml:4:25 CALENDAR_UNKNOWN schedules[0].calendar.exclude',
    ]);
    expect(res.errors[2]!.reason).toMatch(/calendar "freeze" is defined in .*a\.yaml:3:12, which is refused/);
    expect(res.files.map((f) => f.ok)).toEqual([false, false, false, true, false, false]);
    expect(res.schedules.map((s) => s.name)).toEqual(['t']);
  });

  it('changes the definition hash of a schedule when a calendar it uses changes in another file, and only then', async () => {
    const schedules = `schedules:\n  - name: s\n    cron: "0 9 * * *"\n    calendar: {exclude: holidays}\n    ${JOB}\n  - name: plain\n    cron: "0 9 * * *"\n    ${JOB}\n`;
    const hashes = async (holidays: string): Promise<string[]> => {
      const dir = directory({ 'cal.yaml': `calendars:\n  - {name: holidays, dates: ${holidays}}\n  - {name: other, dates: ["2026-01-01"]}\n`, 's.yaml': schedules });
      const res = await loadSchedules(dir);
      expect(res.errors).toEqual([]);
      return res.schedules.map((s) => s.definitionHash);
    };
    const before = await hashes('["2026-12-25"]');
    const same = await hashes('["2026-12-25"]');
    const after = await hashes('["2026-12-25", "2026-12-26"]');
    expect(same).toEqual(before);
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).toBe(before[1]);
    // A schedule without calendars or blackouts hashes as before calendars existed (no churn on upgrade).
    const alone = await parseScheduleText(`schedules:\n  - name: plain\n    cron: "0 9 * * *"\n    ${JOB}\n`, 'p.yaml');
    expect(alone.schedules[0]!.definitionHash).toBe(before[1]);
  });
});

describe('calendar names in one file', () => {
  it('refuses a calendar name used twice in a file, pointing at the first', async () => {
    const res = await parseScheduleText('calendars:\n  - {name: h, dates: ["2026-12-25"]}\n  - {name: h, dates: ["2026-12-26"]}\n', 'f.yaml');
    expect(res.errors.map((e) => e.format())).toEqual([
      'f.yaml:3:12: calendars[1].name: calendar name "h" is already used by calendars[0] (f.yaml:2:12)\n  hint: calendar names must be unique across all schedule files',
    ]);
  });
});

describe('schedules that calendars and blackouts leave nothing to run', () => {
  it('refuses a cron on days its calendar never includes, at the calendar field, and a skip blackout over every due time', async () => {
    const res = await parseScheduleText(
      `calendars:
  - name: weekends
    weekdays: [SAT, SUN]
schedules:
  - name: mondays
    cron: "0 9 * * MON"
    calendar: {include: [weekends]}
    ${JOB}
  - name: nightly
    cron: "0 2 * * *"
    blackouts:
      - {cron: "0 1 * * *", duration: 2h, action: skip}
    ${JOB}
  - name: weekend-ok
    cron: "0 9 * * SAT"
    calendar: {include: [weekends]}
    ${JOB}
`,
      'f.yaml',
    );
    expect(res.errors.map(where)).toEqual(['f.yaml:7:15 CALENDAR_NEVER_RUNS schedules[0].calendar', 'f.yaml:12:7 CALENDAR_NEVER_RUNS schedules[1].blackouts']);
    expect(res.errors[0]!.format()).toMatch(/schedule "mondays" can never run: no due time of its cron within the next 5 years survives its calendar and blackouts \(each is left out by: calendar weekends\)\n {2}hint: .*choose cron days the calendar includes/);
    expect(res.errors[1]!.format()).toMatch(/schedule "nightly" can never run: .*left out by: blackout 0 1 \* \* \* for 2h\)\n {2}hint: the blackouts cover every due time/);
    expect(res.schedules).toEqual([]);
  });

  it('refuses it in a directory too, and keeps a schedule that a delay blackout only moves', async () => {
    const dir = directory({
      'a.yaml': `schedules:\n  - name: moved\n    cron: "0 2 * * *"\n    blackouts: [{cron: "0 1 * * *", duration: 2h, action: delay}]\n    ${JOB}\n`,
      'b.yaml': `schedules:\n  - name: gone\n    cron: "0 2 * * *"\n    blackouts: [{cron: "0 1 * * *", duration: 2h, action: skip}]\n    ${JOB}\n`,
    });
    const res = await loadSchedules(dir);
    expect(res.schedules.map((s) => s.name)).toEqual(['moved']);
    expect(res.errors.map(where)).toEqual(['b.yaml:4:16 CALENDAR_NEVER_RUNS schedules[0].blackouts']);
  });
});

describe('a calendar that is refused', () => {
  it('is named as refused, with where and why, where a schedule uses it (not "no calendar named")', async () => {
    const res = await parseScheduleText(
      `calendars:
  - name: business-days
    dates: ["2026-02-30"]
schedules:
  - name: a
    cron: "0 9 * * *"
    calendar: {include: [business-days]}
    ${JOB}
`,
      'f.yaml',
    );
    const use = res.errors.find((e) => e.field === 'schedules[0].calendar.include[0]');
    expect(use?.format()).toMatch(/^f\.yaml:7:26: schedules\[0\]\.calendar\.include\[0\]: calendar "business-days" \(f\.yaml:2:11\) is refused: calendars\[0\]\.dates\[0\]: must be a date.*\n {2}hint: fix that calendar entry first/);
    expect(res.errors.map((e) => e.format()).join('\n')).not.toMatch(/no calendar named/);
  });
});
