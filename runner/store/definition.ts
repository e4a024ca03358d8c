/**
 * Validation of a stored schedule's definition: THE SAME code that validates a schedule file's entry (the zod
 * schema of runner/config/schema.ts, each job kind's compile, the cross-field checks of runner/config/load.ts),
 * run over a one-schedule file, so a definition is refused with the same codes, reasons and hints as the same
 * entry in a file. Only the field paths differ: `cron`, not `schedules[0].cron`.
 *
 * What a stored definition cannot use: the file-level blocks of a schedule file (`groups:` and `calendars:`), so
 * `group:` and `calendar:` names are refused (GROUP_UNKNOWN, CALENDAR_UNKNOWN) — a group or calendar defined by
 * one file must not be borrowed by a source that does not see that file.
 */
import { canonicalJson } from '../text/canonical-json.js';
import { parseScheduleText, type CompiledSchedule, type ScheduleSource } from '../config/load.js';
import type { ConfigErrorCode } from '../config/errors.js';
import type { ScheduleFileInput } from '../config/schema.js';

/** A schedule's definition as written: one entry of a schedule file's `schedules:` list (durations as text). */
export type ScheduleDefinition = NonNullable<ScheduleFileInput['schedules']>[number];

/** One problem of a definition: the schedule-file loader's code, reason and hint, and the field it is about. */
export interface DefinitionProblem {
  code: ConfigErrorCode | 'NOT_AN_OBJECT';
  /** Dotted field path inside the definition, e.g. `job.url`; empty when it concerns the whole definition. */
  field: string;
  reason: string;
  hint?: string;
}

/**
 * A definition refused whole (nothing was written): every problem it has. Returned as a value by
 * `flock.schedules.upsert` (runner/library/) and thrown by nothing.
 */
export class ScheduleDefinitionError extends Error {
  readonly code = 'SCHEDULE_DEFINITION_INVALID';
  constructor(
    /** The schedule's name as given (may itself be invalid). */
    readonly schedule: string,
    readonly problems: readonly DefinitionProblem[],
  ) {
    super(`schedule "${schedule.length > 80 ? `${schedule.slice(0, 77)}...` : schedule}" refused: ${problems.map((p) => `${p.field ? `${p.field}: ` : ''}${p.reason}`).join('; ')}`);
    this.name = 'ScheduleDefinitionError';
  }
}

/** Where stored schedules say they come from (`source.file`; published as `store`). */
export const STORE_SOURCE_FILE = 'store';

/** The position-less source of a stored schedule. */
export const STORE_SOURCE: ScheduleSource = { file: STORE_SOURCE_FILE, line: 0, col: 0 };

/** The outcome of {@link checkDefinition}. */
export type CheckedDefinition =
  | { ok: true; schedule: CompiledSchedule; /** canonical JSON of the definition as given (sorted keys) */ json: string }
  | { ok: false; error: ScheduleDefinitionError };

const PREFIX = /^schedules\[0\]\.?/;

/**
 * Validates and compiles one definition the way a schedule file's entry is (see the module docs).
 * Relative module paths resolve against `baseDir` (default: the working directory).
 * Never throws for bad input: refusals come back as a {@link ScheduleDefinitionError}.
 */
export async function checkDefinition(def: unknown, opts: { baseDir?: string } = {}): Promise<CheckedDefinition> {
  const name = typeof (def as { name?: unknown } | null)?.name === 'string' ? (def as { name: string }).name : '?';
  if (def === null || typeof def !== 'object' || Array.isArray(def)) {
    return { ok: false, error: new ScheduleDefinitionError(name, [{ code: 'NOT_AN_OBJECT', field: '', reason: 'a schedule definition must be an object (name, cron, job, …)', hint: 'pass one entry of a schedule file\'s schedules: list, as an object' }]) };
  }
  let json: string;
  try {
    json = canonicalJson(def);
  } catch (err) {
    return { ok: false, error: new ScheduleDefinitionError(name, [{ code: 'SCHEMA_INVALID', field: '', reason: `cannot be written as JSON: ${(err as Error).message}` }]) };
  }
  // JSON is YAML: the file loader reads it as it reads a file (so positions are of the one line; not shown).
  const r = await parseScheduleText(`{"schedules":[${json}]}`, `schedule ${name}`, { baseDir: opts.baseDir ?? process.cwd() });
  if (r.errors.length > 0) {
    const problems = r.errors.map((e) => ({
      code: e.code,
      field: e.field.replace(PREFIX, ''),
      // The file's advice ("define it at the top of this file") cannot work here: there is no file.
      ...(e.code === 'GROUP_UNKNOWN' || e.code === 'CALENDAR_UNKNOWN'
        ? {
            reason: `a stored schedule cannot use ${e.code === 'GROUP_UNKNOWN' ? 'group:' : 'calendar:'} (groups and calendars are defined by a schedule file, which the store does not see)`,
            hint: `remove ${e.code === 'GROUP_UNKNOWN' ? 'group:' : 'calendar:'}, or keep this schedule in the schedule file that defines it`,
          }
        : { reason: e.reason, ...(e.hint !== undefined ? { hint: e.hint } : {}) }),
    }));
    return { ok: false, error: new ScheduleDefinitionError(name, problems) };
  }
  const s = r.schedules[0]!;
  return { ok: true, schedule: { ...s, source: STORE_SOURCE }, json };
}
