/**
 * Days of an iCalendar file (RFC 5545 `.ics`), for a calendar's `ics:` source.
 *
 * Parsing and recurrence expansion are ical.js's (maintained, no dependencies; its RRULE iterator honours
 * EXDATE, RDATE and RECURRENCE-ID overrides). It is imported on first use, so a replica whose calendars have no
 * `.ics` file never loads it (~270 kB of code).
 *
 * What counts as a day of the file: every local day (in the calendar's zone) that an event covers. An all-day
 * event (`VALUE=DATE`) covers its dates, DTEND exclusive (one day without DTEND). A timed event covers every day
 * its interval [start, end) touches; its times are read in their TZID (the IANA zone of that name when this
 * Node knows it, else the file's own VTIMEZONE), as UTC (`Z`), or, floating, in the calendar's zone. Cancelled
 * events and cancelled instances (STATUS:CANCELLED) cover nothing.
 *
 * Recurring events are expanded lazily and in order, as far as the latest day asked about: the answer for a
 * day never depends on what was asked before (the expansion only grows, and a day is answered after the
 * expansion has passed it).
 */
import { DAY_MS, isValidTimeZone, zoneTimeline, type ZoneTimeline } from './zone.js';
import { localDay, wallToInstantMs, type DayNumber } from './calendar.js';

type IcalModule = typeof import('ical.js').default;
type IcalEvent = InstanceType<IcalModule['Event']>;
type IcalTime = InstanceType<IcalModule['Time']>;
type IcalExpansion = InstanceType<IcalModule['RecurExpansion']>;

/** A refused `.ics` file; `message` says what is wrong (the loader adds file and position). */
export class IcsError extends Error {
  readonly code = 'ICS_INVALID';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IcsError';
  }
}

/** The most occurrences one recurring event may have in its first year: more is not a day calendar. */
const MAX_OCCURRENCES_PER_YEAR = 20_000;
/** Expansion goes this far beyond the day asked about, so that nearby days cost nothing more. */
const EXPAND_AHEAD_DAYS = 400;

let icalModule: Promise<IcalModule> | undefined;
const loadIcal = (): Promise<IcalModule> => (icalModule ??= import('ical.js').then((m) => m.default));

/** The days of one `.ics` file: `has(day)` is a pure function of the day. */
export interface IcsDays {
  has(day: DayNumber): boolean;
  /** VEVENTs read (masters, not counting overrides). */
  readonly events: number;
}

/**
 * Parses `.ics` text into its days in `timeZone`.
 * @throws IcsError when the text is not iCalendar, an event has no DTSTART, a TZID is neither an IANA zone nor
 *   defined in the file, or a recurrence is too frequent for a day calendar.
 */
export async function icsDays(text: string, timeZone: string): Promise<IcsDays> {
  const ICAL = await loadIcal();
  const zone = zoneTimeline(timeZone);
  let jcal: unknown;
  try {
    jcal = ICAL.parse(text);
  } catch (err) {
    throw new IcsError(`is not a valid iCalendar file: ${(err as Error).message}`, { cause: err });
  }
  const roots = (Array.isArray(jcal) && Array.isArray((jcal as unknown[])[0]) ? (jcal as unknown[]) : [jcal]).map(
    (j) => new ICAL.Component(j as never),
  );
  if (roots.length === 0 || roots.some((r) => r.name !== 'vcalendar')) {
    throw new IcsError('is not an iCalendar file: it must start with BEGIN:VCALENDAR');
  }
  const days = new Set<DayNumber>();
  const lazy: { expansion: IcalExpansion; event: IcalEvent; throughDay: DayNumber; done: boolean }[] = [];
  let events = 0;
  for (const root of roots) {
    const vevents = root.getAllSubcomponents('vevent');
    const masters = vevents.filter((v) => !v.hasProperty('recurrence-id'));
    for (const v of masters) {
      events++;
      const uid = String(v.getFirstPropertyValue('uid') ?? '');
      if (!v.hasProperty('dtstart')) throw new IcsError(`event ${uid ? `"${uid}" ` : ''}has no DTSTART`);
      const event = new ICAL.Event(v, { strictExceptions: false });
      if (cancelled(event)) continue;
      if (!event.isRecurring()) {
        cover(days, zone, ICAL, event.startDate, event.endDate, event);
        continue;
      }
      for (const o of vevents) if (o !== v && o.hasProperty('recurrence-id') && String(o.getFirstPropertyValue('uid') ?? '') === uid) event.relateException(o);
      const entry = { expansion: event.iterator(), event, throughDay: -Infinity, done: false };
      checkFrequency(event, uid, ICAL);
      lazy.push(entry);
    }
  }

  const expandThrough = (day: DayNumber): void => {
    for (const e of lazy) {
      if (e.done || e.throughDay >= day) continue;
      const target = day + EXPAND_AHEAD_DAYS;
      for (;;) {
        const next = e.expansion.next();
        if (!next) {
          e.done = true;
          break;
        }
        const details = e.event.getOccurrenceDetails(next);
        if (!cancelled(details.item)) cover(days, zone, ICAL, details.startDate, details.endDate, details.item);
        const startDay = dayOfTime(zone, ICAL, details.startDate, details.item, 'dtstart');
        if (startDay > target) {
          e.throughDay = startDay - 1;
          break;
        }
      }
    }
  };
  return {
    events,
    has(day: DayNumber): boolean {
      if (lazy.length > 0) expandThrough(day);
      return days.has(day);
    },
  };
}

function cancelled(event: IcalEvent): boolean {
  return String(event.component.getFirstPropertyValue('status') ?? '').toUpperCase() === 'CANCELLED';
}

/** Refuses a rule with more occurrences in its first year than a day calendar can mean (FREQ=MINUTELY …). */
function checkFrequency(event: IcalEvent, uid: string, ICAL: IcalModule): void {
  const probe = event.iterator();
  const start = event.startDate;
  const yearLater = start.clone();
  yearLater.addDuration(ICAL.Duration.fromData({ days: 366 }));
  let n = 0;
  for (let t = probe.next(); t && t.compare(yearLater) < 0; t = probe.next()) {
    if (++n > MAX_OCCURRENCES_PER_YEAR) {
      throw new IcsError(
        `event ${uid ? `"${uid}" ` : ''}recurs more than ${MAX_OCCURRENCES_PER_YEAR} times a year (RRULE ${String(event.component.getFirstPropertyValue('rrule'))}): too often for a calendar of days`,
      );
    }
  }
}

/** Adds the local days an event instance covers; `item` is the event (or override) it comes from. */
function cover(days: Set<DayNumber>, zone: ZoneTimeline, ICAL: IcalModule, start: IcalTime, end: IcalTime | null, item: IcalEvent): void {
  const first = dayOfTime(zone, ICAL, start, item, 'dtstart');
  let last = first;
  if (end) {
    // An end computed from DURATION has no DTEND: it is in the start's zone.
    const endProp = item.component.hasProperty('dtend') ? 'dtend' : 'dtstart';
    if (start.isDate) last = Math.max(first, dayOfTime(zone, ICAL, end, item, endProp) - 1);
    else {
      const endMs = instantOf(zone, ICAL, end, item, endProp);
      const startMs = instantOf(zone, ICAL, start, item, 'dtstart');
      if (endMs > startMs) last = Math.max(first, localDay(zone, endMs - 1));
    }
  }
  if (last - first > 3660) throw new IcsError(`event ${label(item)}lasts more than 10 years`);
  for (let d = first; d <= last; d++) days.add(d);
}

function label(item: IcalEvent): string {
  const uid = String(item.component.getFirstPropertyValue('uid') ?? '');
  return uid ? `"${uid}" ` : '';
}

/** The local day a time is on: a DATE as written, a DATE-TIME through its instant. */
function dayOfTime(zone: ZoneTimeline, ICAL: IcalModule, t: IcalTime, item: IcalEvent, prop: 'dtstart' | 'dtend'): DayNumber {
  if (t.isDate) return Date.UTC(t.year, t.month - 1, t.day) / DAY_MS;
  return localDay(zone, instantOf(zone, ICAL, t, item, prop));
}

/**
 * The instant (UTC ms) of a DATE-TIME: UTC, the TZID of the property it comes from (IANA first, then the file's
 * VTIMEZONE), or floating (the calendar's zone). The TZID is read from the property because the times a
 * recurrence yields are copies that no longer carry it.
 */
function instantOf(zone: ZoneTimeline, ICAL: IcalModule, t: IcalTime, item: IcalEvent, prop: 'dtstart' | 'dtend'): number {
  const wall = Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  if (t.zone === ICAL.Timezone.utcTimezone) return wall;
  const param = item.component.getFirstProperty(prop)?.getParameter('tzid');
  const tzid = typeof param === 'string' && param !== '' ? param : undefined;
  if (tzid && isValidTimeZone(tzid)) return wallToInstantMs(zoneTimeline(tzid), wall);
  if (tzid) {
    const defined = item.component.parent?.getTimeZoneByID(tzid) ?? null;
    if (defined) {
      const copy = t.clone();
      copy.zone = defined;
      return copy.toUnixTime() * 1000;
    }
    throw new IcsError(`event ${label(item)}uses TZID "${tzid}", which is neither an IANA time zone nor defined by a VTIMEZONE in the file`);
  }
  return wallToInstantMs(zone, wall); // floating: the calendar's zone
}
