/**
 * Calendars across the files of a flock: reading each file's `calendars:` (and their `.ics` files), resolving
 * every name a calendar or a schedule uses against all files, and compiling what the engine needs
 * (runner/engine/windows.ts `ScheduleWindows`).
 *
 * Refusals keep the loader's rules (promise 7): an unknown name, a cycle (A excludes B excludes A), a name
 * defined in two files, an unreadable or invalid `.ics` file refuses the file that holds the fault, with
 * `file:line:col`; a reference to a calendar of a refused file refuses the referring file too (it would run on
 * days nobody checked), transitively; other files load.
 *
 * Cost: each calendar is compiled once per load and shared; schedules with the same calendar block or the
 * same blackout share one compiled object, so a million schedules on a few calendars cost a map lookup each.
 */
import { firstRunWithin, NEVER_RUNS_HORIZON_MS } from '../engine/windows.js';
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { calendarBlackout, cronBlackout, type BlackoutWindow } from '../schedule/blackout.js';
import { Calendar, CalendarSelection, parseIsoDay, parseMonthDay, parseWeekday } from '../schedule/calendar.js';
import { compileCron } from '../schedule/cron.js';
import { IcsError, icsDays, type IcsDays } from '../schedule/ics.js';
import { formatDurationMs } from '../time/duration.js';
import { editDistance } from '../text/edit-distance.js';
import type { ScheduleWindows } from '../engine/windows.js';
import { ConfigError, fieldPath, type ConfigErrorCode } from './errors.js';
import { calendarSchema, type BlackoutEntry, type CalendarEntry, type ScheduleCalendarRef } from './calendars-schema.js';
import { readBounded } from './read-bounded.js';
import { canonicalJson } from '../text/canonical-json.js';
import type { CompiledSchedule } from './load.js';

type Path = (string | number)[];

/**
 * Largest `.ics` file read (4 MiB). A year of public holidays is a few kB; ical.js holds several times a file's
 * size while parsing, so a larger file is refused before it is read.
 */
export const MAX_ICS_FILE_BYTES = 4 * 1024 * 1024;

/** Where something is written: file, 1-based position, field path. */
interface Place {
  file: string;
  line: number;
  col: number;
  field: string;
}

/** A calendar name used by a calendar (include/exclude) or a schedule (calendar block, blackouts). */
interface Ref extends Place {
  name: string;
}

/** A calendar entry of one file, validated, with its `.ics` days read. */
interface LoadedCalendar extends Place {
  entry: CalendarEntry;
  ics: IcsDays | null;
  /** sha256 of the `.ics` text (part of the definition hash of the schedules that use the calendar). */
  icsSha: string | null;
  include: Ref[];
  exclude: Ref[];
}

/** The calendar side of one file: what it defines and which names its schedules use. */
export interface FileCalendars {
  file: string;
  calendars: LoadedCalendar[];
  /** Per schedule index (as in the file), the calendar names it uses. */
  uses: Map<number, Ref[]>;
  /** Calendar entries the schema refused, by name (the name is written), with the first reason. */
  refused: Map<string, Place & { why: string }>;
  /** Per schedule name, where its `calendar` and `blackouts` fields are written. */
  windowFields: Map<string, { calendar?: Place; blackouts?: Place }>;
}

/** A problem of one file, in the loader's terms (path into the file's data). */
export interface CalendarProblem {
  code: ConfigErrorCode;
  path: Path;
  reason: string;
  hint?: string;
  cause?: unknown;
}

/** A file without calendars (refused before its calendars could be read). */
export function noFileCalendars(file: string): FileCalendars {
  return { file, calendars: [], uses: new Map(), refused: new Map(), windowFields: new Map() };
}

/**
 * Reads the calendars a file defines (reading `.ics` files relative to `baseDir`) and the names its schedules
 * use. Entries that are invalid on their own are left to the schema's errors.
 * @param data the file's YAML as plain data; @param locate 1-based position of a path in the file.
 */
export async function readFileCalendars(
  data: unknown,
  file: string,
  baseDir: string,
  locate: (path: Path) => { line: number; col: number },
): Promise<{ calendars: FileCalendars; problems: CalendarProblem[] }> {
  const out = noFileCalendars(file);
  const problems: CalendarProblem[] = [];
  const place = (path: Path): Place => ({ file, ...locate(path), field: fieldPath(path) });
  const refs = (value: unknown, path: Path): Ref[] => {
    if (typeof value === 'string') return [{ name: value, ...place(path) }];
    if (!Array.isArray(value)) return [];
    return value.flatMap((v, j) => (typeof v === 'string' ? [{ name: v, ...place([...path, j]) }] : []));
  };
  const raw = (data as { calendars?: unknown } | null)?.calendars;
  for (const [i, item] of (Array.isArray(raw) ? raw : []).entries()) {
    const parsed = calendarSchema.safeParse(item);
    if (!parsed.success) {
      // Remembered so that a use of the name says "refused, because …" rather than "no calendar named".
      const name = (item as { name?: unknown } | null)?.name;
      const issue = parsed.error.issues[0];
      if (typeof name === 'string' && issue) {
        out.refused.set(name, { ...place(['calendars', i, 'name']), why: `${fieldPath(['calendars', i, ...(issue.path as Path)])}: ${issue.message}` });
      }
      continue;
    }
    const entry = parsed.data;
    let ics: IcsDays | null = null;
    let icsSha: string | null = null;
    if (entry.ics !== undefined) {
      const path = resolve(baseDir, entry.ics);
      try {
        const read = await readBounded(path, MAX_ICS_FILE_BYTES);
        if (read.tooLarge) {
          throw new Error(`is ${(read.sizeBytes / 1024 / 1024).toFixed(1)} MiB; an .ics file may be at most ${MAX_ICS_FILE_BYTES / 1024 / 1024} MiB`);
        }
        const text = read.text;
        icsSha = createHash('sha256').update(text).digest('hex');
        ics = await icsDays(text, entry.timeZone);
      } catch (err) {
        const io = !(err instanceof IcsError);
        problems.push({
          code: 'CALENDAR_INVALID',
          path: ['calendars', i, 'ics'],
          reason: io ? `cannot read ${path}: ${(err as Error).message}` : `${entry.ics} ${(err as Error).message}`,
          hint: io ? 'the path is relative to this schedule file' : 'export the calendar again as iCalendar (RFC 5545), or list its days under dates',
          cause: err,
        });
      }
    }
    const it = item as Record<string, unknown>;
    out.calendars.push({
      entry,
      ics,
      icsSha,
      ...place(['calendars', i, 'name']),
      include: refs(it.include, ['calendars', i, 'include']),
      exclude: refs(it.exclude, ['calendars', i, 'exclude']),
    });
  }
  const schedules = (data as { schedules?: unknown } | null)?.schedules;
  for (const [i, item] of (Array.isArray(schedules) ? schedules : []).entries()) {
    const s = (item ?? {}) as { name?: unknown; calendar?: { include?: unknown; exclude?: unknown }; blackouts?: unknown };
    if (typeof s.name === 'string' && (s.calendar !== undefined || s.blackouts !== undefined)) {
      out.windowFields.set(s.name, {
        ...(s.calendar !== undefined ? { calendar: place(['schedules', i, 'calendar']) } : {}),
        ...(s.blackouts !== undefined ? { blackouts: place(['schedules', i, 'blackouts']) } : {}),
      });
    }
    const used = [
      ...refs(s.calendar?.include, ['schedules', i, 'calendar', 'include']),
      ...refs(s.calendar?.exclude, ['schedules', i, 'calendar', 'exclude']),
    ];
    if (Array.isArray(s.blackouts)) {
      s.blackouts.forEach((b: unknown, k) => used.push(...refs((b as { calendar?: unknown } | null)?.calendar, ['schedules', i, 'blackouts', k, 'calendar'])));
    }
    if (used.length > 0) out.uses.set(i, used);
  }
  return { calendars: out, problems };
}

/** The resolved calendars of a flock; see {@link resolveFlockCalendars}. */
export interface FlockCalendars {
  /** Errors, each in the file to refuse. */
  readonly errors: ConfigError[];
  /**
   * Compiles the calendar and blackouts of a schedule of a file without errors, and the digest of the
   * calendars it uses (null when it uses none).
   */
  windowsOf(s: Pick<CompiledSchedule, 'name' | 'timeZone' | 'calendar' | 'blackouts'>): { windows: ScheduleWindows | null; digest: string | null };
}

/**
 * Resolves the calendar names of every file against the calendars of all files.
 * @param files every file the loader read, `ok` false for files already refused (their calendars are not
 *   available to others, and their own unknown names are still reported).
 */
export function resolveFlockCalendars(files: readonly { file: string; ok: boolean; calendars: FileCalendars }[]): FlockCalendars {
  const errors: ConfigError[] = [];
  const defined = new Map<string, LoadedCalendar[]>();
  for (const f of files) for (const c of f.calendars.calendars) defined.set(c.entry.name, [...(defined.get(c.entry.name) ?? []), c]);
  const refused = new Set(files.filter((f) => !f.ok).map((f) => f.file));
  const known = [...defined.keys()].sort();
  const err = (at: Place, code: ConfigErrorCode, reason: string, hint?: string): ConfigError =>
    new ConfigError({ code, file: at.file, line: at.line, col: at.col, field: at.field, reason, ...(hint ? { hint } : {}) });
  const refsOf = (f: FileCalendars): Ref[] => [...f.calendars.flatMap((c) => [...c.include, ...c.exclude]), ...[...f.uses.values()].flat()];

  // First pass, every file: names defined twice, unknown names, cycles.
  for (const f of files) {
    for (const c of f.calendars.calendars) {
      const other = defined.get(c.entry.name)!.find((d) => d.file !== c.file);
      if (other) {
        errors.push(err(c, 'NAME_DUPLICATE', `calendar name "${c.entry.name}" is also defined in ${other.file}:${other.line}:${other.col}; both files are refused`, 'calendar names must be unique across all schedule files: rename or remove one of the two'));
      }
    }
    for (const r of refsOf(f.calendars)) {
      if (defined.has(r.name)) continue;
      const bad = files.map((g) => g.calendars.refused.get(r.name)).find((x) => x !== undefined);
      if (bad) {
        errors.push(err(r, 'CALENDAR_UNKNOWN', `calendar "${r.name}" (${bad.file}:${bad.line}:${bad.col}) is refused: ${bad.why}`, 'fix that calendar entry first (its error is reported too)'));
        continue;
      }
      const near = known.filter((k) => editDistance(k, r.name, 4) <= 2).slice(0, 3);
      errors.push(err(r, 'CALENDAR_UNKNOWN', `no calendar named "${r.name}" in the flock's schedule files`, known.length === 0 ? 'define it under "calendars:" in a schedule file of the same directory' : `${near.length > 0 ? `did you mean ${near.map((n) => `"${n}"`).join(' or ')}? ` : ''}known calendars: ${known.join(', ')}`));
    }
  }
  errors.push(...cycleErrors(defined, err));
  for (const e of errors) refused.add(e.file);

  // Then, until nothing changes: a file that uses a calendar of a refused file is refused too.
  for (let changed = true; changed; ) {
    changed = false;
    for (const f of files) {
      if (refused.has(f.file)) continue;
      for (const r of refsOf(f.calendars)) {
        const def = defined.get(r.name)?.[0];
        if (!def || !refused.has(def.file)) continue;
        errors.push(err(r, 'CALENDAR_UNKNOWN', `calendar "${r.name}" is defined in ${def.file}:${def.line}:${def.col}, which is refused`, 'fix the errors of that file first'));
        refused.add(f.file);
        changed = true;
      }
    }
  }

  const compiled = new Map<string, { calendar: Calendar; digest: string }>();
  const compile = (name: string): { calendar: Calendar; digest: string } => {
    const done = compiled.get(name);
    if (done) return done;
    const c = defined.get(name)![0]!;
    const include = c.include.map((r) => compile(r.name));
    const exclude = c.exclude.map((r) => compile(r.name));
    const e = c.entry;
    const calendar = new Calendar({
      name: e.name,
      timeZone: e.timeZone,
      dates: (e.dates ?? []).map((d) => parseIsoDay(d)!),
      yearly: (e.yearly ?? []).map((d) => parseMonthDay(d)!),
      ranges: (e.ranges ?? []).map((r) => [parseIsoDay(r.from)!, parseIsoDay(r.to)!] as const),
      weekdays: (e.weekdays ?? []).flatMap((w) => parseWeekday(w)!),
      extra: c.ics ? [(day: number) => c.ics!.has(day)] : [],
      include: include.map((x) => x.calendar),
      exclude: exclude.map((x) => x.calendar),
      ...(e.nth ? { nth: e.nth } : {}),
    });
    const digest = sha256(canonicalJson({ e, ics: c.icsSha, include: include.map((x) => x.digest), exclude: exclude.map((x) => x.digest) }));
    const result = { calendar, digest };
    compiled.set(name, result);
    return result;
  };

  // Shared by every schedule that writes the same block (keys: the validated values, whose key order is the schema's).
  const selections = new Map<string, CalendarSelection>();
  const blackouts = new Map<string, BlackoutWindow>();
  const digests = new Map<string, string>();
  return {
    errors,
    windowsOf(s) {
      if (!s.calendar && !s.blackouts?.length) return { windows: null, digest: null };
      const used = new Map<string, string>();
      const cal = (name: string): Calendar => {
        const c = compile(name);
        used.set(name, c.digest);
        return c.calendar;
      };
      let selection: CalendarSelection | null = null;
      if (s.calendar) {
        const ref: ScheduleCalendarRef = s.calendar;
        const key = JSON.stringify([s.timeZone, ref.include ?? [], ref.exclude ?? [], ref.nth ?? []]);
        const include = (ref.include ?? []).map(cal);
        const exclude = (ref.exclude ?? []).map(cal);
        selection = selections.get(key) ?? new CalendarSelection({ timeZone: s.timeZone, include, exclude, ...(ref.nth ? { nth: ref.nth } : {}) });
        selections.set(key, selection);
      }
      const windows = (s.blackouts ?? []).map((b: BlackoutEntry) => {
        const key = JSON.stringify([s.timeZone, b]);
        let w = blackouts.get(key);
        if (b.calendar !== undefined) {
          const c = cal(b.calendar);
          w ??= calendarBlackout(b.name ?? b.calendar, b.action, c);
        } else {
          w ??= cronBlackout(b.name ?? `${b.cron} for ${formatDurationMs(b.duration!)}`, b.action, compileCron(b.cron!, b.timeZone ?? s.timeZone), b.duration!);
        }
        blackouts.set(key, w);
        return w;
      });
      const names = [...used.keys()].sort().join(',');
      let digest = used.size === 0 ? null : (digests.get(names) ?? null);
      if (used.size > 0 && digest === null) {
        digest = sha256(canonicalJson([...used.entries()].sort()));
        digests.set(names, digest);
      }
      return { windows: { calendar: selection, blackouts: windows }, digest };
    },
  };
}

/**
 * The schedules of a file with their compiled calendar and blackouts. A schedule that uses calendars gets a
 * definition hash that covers them (their entries, `.ics` contents and what they include or exclude), so that
 * replicas with different calendars do not both plan it (the definition loaded last wins, definitions.ts).
 */
export function attachWindows(schedules: readonly CompiledSchedule[], flock: FlockCalendars): CompiledSchedule[] {
  return schedules.map((s) => {
    const { windows, digest } = flock.windowsOf(s);
    if (!windows) return s;
    return { ...s, windows, definitionHash: digest === null ? s.definitionHash : sha256(`${s.definitionHash}:${digest}`) };
  });
}

/**
 * Refuses schedules whose calendar and blackouts leave nothing to run (a cron on Mondays with a calendar of
 * weekends, a skip blackout over every due time), as cron.ts refuses a cron that can never fire: none of their
 * due times within the next 5 years runs, nor did any in the 5 years before ({@link firstRunWithin}): a
 * schedule whose calendar dates have all passed is not refused. A frequent schedule whose first 100,000 due
 * times are all skipped is not decided (nor refused).
 * @param schedules compiled, with their windows ({@link attachWindows}); @param nowMs where the look starts.
 * @returns one CALENDAR_NEVER_RUNS error per such schedule, at its `calendar` field (else `blackouts`).
 */
export function neverRunErrors(schedules: readonly CompiledSchedule[], file: FileCalendars, nowMs: number = Date.now()): ConfigError[] {
  const out: ConfigError[] = [];
  for (const s of schedules) {
    const r = firstRunWithin(s, nowMs);
    if (r.verdict !== 'never') continue;
    // Only a contradiction is refused: a calendar whose dates have passed ran before and is left alone, so that
    // a restart does not refuse a file (and stop its other schedules) because time went by.
    if (firstRunWithin(s, nowMs - NEVER_RUNS_HORIZON_MS, NEVER_RUNS_HORIZON_MS).verdict !== 'never') continue;
    const where = file.windowFields.get(s.name) ?? {};
    const byCalendar = r.reasons.some((x) => x.startsWith('calendar '));
    const at = (byCalendar ? where.calendar : where.blackouts) ?? where.calendar ?? where.blackouts ?? { file: file.file, line: 0, col: 0, field: '' };
    const years = Math.round(NEVER_RUNS_HORIZON_MS / (365 * 86_400_000));
    out.push(
      new ConfigError({
        code: 'CALENDAR_NEVER_RUNS',
        ...at,
        reason:
          `schedule "${s.name}" can never run: no due time of its cron within the next ${years} years survives its ` +
          `calendar and blackouts (${r.reasons.length > 0 ? `each is left out by: ${r.reasons.join('; ')}` : 'the cron has no due time left'})`,
        hint: byCalendar
          ? 'the cron and the calendar exclude each other: choose cron days the calendar includes, or change the calendar'
          : 'the blackouts cover every due time: shorten or move them, use action: delay, or change the cron',
      }),
    );
  }
  return out;
}

/** A cycle of include/exclude references; reported at the reference that closes it, in each file on the cycle. */
function cycleErrors(
  defined: Map<string, LoadedCalendar[]>,
  err: (at: Place, code: ConfigErrorCode, reason: string, hint?: string) => ConfigError,
): ConfigError[] {
  const out: ConfigError[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: { name: string; via?: Ref }[] = [];
  const visit = (name: string, via?: Ref): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'open') {
      const from = stack.findIndex((s) => s.name === name);
      const cycle = [...stack.slice(from).map((s) => s.name), name];
      const refsOnCycle = [...stack.slice(from + 1).map((s) => s.via!), via!];
      for (const r of refsOnCycle) {
        out.push(err(r, 'CALENDAR_CYCLE', `calendars refer to each other in a cycle: ${cycle.join(' → ')}`, 'a calendar cannot include or exclude itself, directly or through others: break the cycle'));
      }
      return;
    }
    const def = defined.get(name)?.[0];
    if (!def) return;
    state.set(name, 'open');
    stack.push({ name, ...(via ? { via } : {}) });
    for (const r of [...def.include, ...def.exclude]) visit(r.name, r);
    stack.pop();
    state.set(name, 'done');
  };
  for (const name of [...defined.keys()].sort()) visit(name);
  return out;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
