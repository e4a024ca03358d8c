/**
 * The zod side of calendars and blackout windows in schedule files: the top-level `calendars:` list, a
 * schedule's `calendar: {include, exclude, nth}` and its `blackouts:` list. Shape and values only (dates,
 * weekdays, zones, crons, durations); names are resolved across the files of a flock by calendars.ts, and the
 * calendars themselves are compiled by runner/schedule/calendar.ts.
 */
import { z } from 'zod';
import { CronError, compileCron } from '../schedule/cron.js';
import { parseIsoDay, parseMonthDay, parseWeekday } from '../schedule/calendar.js';
import { isValidTimeZone, misspelledZoneMessage, suggestTimeZones } from '../schedule/zone.js';
import { positiveDurationMs } from '../validate/zod-duration.js';

/** Calendar names follow schedule names: DNS-1123 labels. */
const calendarName = z
  .string()
  .max(63, 'must be at most 63 characters (a DNS-1123 label)')
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a calendar name: lowercase letters, digits and "-", starting and ending with a letter or digit');

/** One name or a list of names, output as a list. */
const nameList = z
  .union([calendarName, z.array(calendarName).min(1, 'must name at least one calendar')], {
    error: 'must be a calendar name or a list of calendar names (lowercase letters, digits and "-")',
  })
  .transform((v) => (typeof v === 'string' ? [v] : v));

const nthValue = z
  .int('must be a whole number')
  .min(-31, 'must be between -31 and 31')
  .max(31, 'must be between -31 and 31')
  .refine((n) => n !== 0, 'must not be 0: 1 is the first matching day of the month, -1 the last');

/** `nth: -1` or `nth: [1, -1]`, output as a list. */
const nthList = z
  .union([nthValue, z.array(nthValue).min(1, 'must list at least one rank')], {
    error: 'must be a whole number other than 0 (1 = first matching day of the month, -1 = last) or a list of them',
  })
  .transform((v) => (typeof v === 'number' ? [v] : v))
  .describe('Only the nth matching day of each month: 1 the first, 2 the second, -1 the last, -2 the one before; a list keeps several.');

/** Zones found valid (asking Intl costs ~0.1 ms; a blackout with a timeZone may repeat in 100k schedules). */
const validZones = new Set<string>();

/** An IANA zone, refused with suggestions. */
export const timeZoneName = z.string().superRefine((tz, ctx) => {
  if (validZones.has(tz)) return;
  const spelled = misspelledZoneMessage(tz);
  if (spelled !== undefined) {
    ctx.addIssue({ code: 'custom', message: spelled });
    return;
  }
  if (isValidTimeZone(tz)) {
    if (validZones.size < 1000) validZones.add(tz);
    return;
  }
  const near = suggestTimeZones(tz);
  ctx.addIssue({
    code: 'custom',
    message: `time zone ${JSON.stringify(tz)} is not a known IANA time zone; ${near.length > 0 ? `did you mean ${near.map((n) => JSON.stringify(n)).join(' or ')}? ` : ''}use a name such as "Europe/Berlin" or "UTC"`,
  });
});

const isoDate = z.string().refine((s) => parseIsoDay(s) !== null, {
  message: 'must be a date written YYYY-MM-DD that exists (e.g. 2026-12-25), years 1000-9998',
});

const yearlyDate = z.string().refine((s) => parseMonthDay(s) !== null, {
  message: 'must be a yearly date written MM-DD (e.g. 12-25; 02-29 matches in leap years only)',
});

const weekday = z.string().refine((s) => parseWeekday(s) !== null, {
  message: 'must be a weekday (MON, TUE, WED, THU, FRI, SAT, SUN, or a full name) or a range such as MON-FRI',
});

const dateRange = z
  .strictObject({
    from: isoDate.describe('First day of the range (YYYY-MM-DD).'),
    to: isoDate.describe('Last day of the range, included (YYYY-MM-DD).'),
  })
  .superRefine((r, ctx) => {
    const [a, b] = [parseIsoDay(r.from), parseIsoDay(r.to)];
    if (a !== null && b !== null && b < a) ctx.addIssue({ code: 'custom', path: ['to'], message: `must not be before from (${r.from})` });
  });

/** Own day sources: at least one of these (or include/exclude/nth) makes a calendar. */
const SOURCES = ['dates', 'yearly', 'ranges', 'weekdays', 'ics', 'include', 'exclude', 'nth'] as const;

/** One entry of the top-level `calendars:` list. */
export const calendarSchema = z
  .strictObject({
    name: calendarName.describe('Name of the calendar, unique across all schedule files of the flock; schedules and other calendars refer to it.'),
    timeZone: timeZoneName
      .default('UTC')
      .describe('IANA time zone whose local days this calendar lists (default UTC): a day is 00:00 to 24:00 there.'),
    dates: z.array(isoDate).optional().describe('Days, written YYYY-MM-DD.'),
    yearly: z.array(yearlyDate).optional().describe('Days of every year, written MM-DD.'),
    ranges: z.array(dateRange).optional().describe('Ranges of days {from, to}, both included.'),
    weekdays: z.array(weekday).optional().describe('Weekdays: MON … SUN, or ranges such as MON-FRI.'),
    ics: z
      .string()
      .min(1, 'must not be empty')
      .optional()
      .describe('An iCalendar (.ics) file, relative to this schedule file: every day an event covers (RRULE, EXDATE and overrides honoured).'),
    include: nameList.optional().describe('Other calendars whose days are added (union).'),
    exclude: nameList.optional().describe('Other calendars whose days are taken away, e.g. holidays from business days.'),
    nth: nthList.optional(),
  })
  .superRefine((c, ctx) => {
    if (SOURCES.every((k) => c[k] === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['name'],
        message: `calendar "${c.name}" lists no days: give dates, yearly, ranges, weekdays, ics, include or exclude`,
      });
    }
  })
  .describe('A named set of local days: the union of its dates, yearly dates, ranges, weekdays, .ics days and included calendars (every day when it has none of these), minus its excluded calendars, then only the nth matching day of each month when nth is set.');

/** A validated calendar entry (names lists normalized). */
export type CalendarEntry = z.output<typeof calendarSchema>;

/** A schedule's `calendar:` block. */
export const scheduleCalendarSchema = z
  .strictObject({
    include: nameList.optional().describe('Calendars whose days the schedule runs on (default: every day).'),
    exclude: nameList.optional().describe('Calendars whose days the schedule does not run on.'),
    nth: nthList.optional(),
  })
  .describe(
    'Days the schedule runs on: a due time outside them is recorded skipped with the calendar that decided (`skipped: calendar holidays`). nth counts days in the schedule\'s time zone.',
  );

/** A validated `calendar:` block of a schedule. */
export type ScheduleCalendarRef = z.output<typeof scheduleCalendarSchema>;

/** What a blackout window does. */
const ACTIONS =
  'skip (occurrences due in the window are recorded skipped), delay (they run when it ends) or abort (skipped, and runs in flight are stopped when it opens)';
export const blackoutActionSchema = z.enum(['skip', 'delay', 'abort'], {
  error: (issue) => (issue.input === undefined ? `is required: ${ACTIONS}` : `must be ${ACTIONS}`),
});

/** One entry of a schedule's `blackouts:` list. */
export const blackoutSchema = z
  .strictObject({
    name: z.string().min(1, 'must not be empty').max(100, 'must be at most 100 characters').optional().describe('Name used in records (`skipped: blackout <name>`); default: the calendar name, or the cron and duration.'),
    calendar: calendarName.optional().describe('A calendar whose days are the window (whole local days in its time zone).'),
    cron: z.string().min(1, 'must not be empty').optional().describe('Start of each window, as a cron expression (with duration).'),
    duration: positiveDurationMs.optional().describe('Length of each window that cron starts, e.g. 2h.'),
    timeZone: timeZoneName.optional().describe('Zone of cron (default: the schedule\'s timeZone).'),
    action: blackoutActionSchema.describe('skip | delay | abort: see README "Calendars and blackout windows".'),
  })
  .describe('A window in which this schedule does not start runs: a calendar, or a cron and a duration.');

/** A validated blackout entry (duration in ms). */
export type BlackoutEntry = z.output<typeof blackoutSchema>;

/**
 * Cross-field checks of a schedule's blackouts (run from the schedule's superRefine, which knows its zone):
 * exactly one of calendar and cron, a duration with cron and only with it, a cron that compiles.
 */
export function checkBlackouts(value: unknown, scheduleZone: unknown, ctx: z.RefinementCtx): void {
  if (!Array.isArray(value)) return;
  value.forEach((b: unknown, i) => {
    if (typeof b !== 'object' || b === null) return;
    const v = b as Record<string, unknown>;
    const at = (field: string): (string | number)[] => ['blackouts', i, field];
    const add = (path: (string | number)[], message: string): void => ctx.addIssue({ code: 'custom', path, message, params: { code: 'SCHEMA_INVALID' } });
    if ((v.calendar === undefined) === (v.cron === undefined)) {
      add(v.calendar === undefined ? ['blackouts', i] : at('cron'), 'a blackout is either a calendar or a cron with a duration: give exactly one of calendar and cron');
      return;
    }
    if (v.cron !== undefined) {
      if (v.duration === undefined) add(['blackouts', i], 'a cron blackout needs a duration (how long each window lasts, e.g. 2h)');
      const tz = v.timeZone ?? scheduleZone;
      // compileCron is cached per (cron, zone): a blackout shared by many schedules is checked once.
      if (typeof v.cron === 'string' && v.cron !== '' && typeof tz === 'string' && tz !== '') {
        try {
          compileCron(v.cron, tz);
        } catch (err) {
          if (!(err instanceof CronError)) throw err;
          if (err.code !== 'ZONE_UNKNOWN') add(at('cron'), err.message); // a bad zone is the timeZone field's error
        }
      }
    } else {
      if (v.duration !== undefined) add(at('duration'), 'only applies with cron: a calendar blackout lasts its calendar\'s days');
      if (v.timeZone !== undefined) add(at('timeZone'), 'only applies with cron: a calendar blackout uses its calendar\'s time zone');
    }
  });
}
