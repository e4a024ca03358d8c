/**
 * Errors of schedule files. Every refusal names the file, the 1-based line and column of the offending YAML
 * node, the dotted field path and the reason, so that an operator can go straight to the spot:
 *
 *     schedules.yaml:7:10: schedules[2].job.url: must be an http:// or https:// URL
 *       hint: ...
 */

/**
 * What went wrong, for programs (the message is for people).
 * - `CONFIG_IO`: the path is missing or unreadable, or a directory holds no schedule files.
 * - `FILE_TOO_LARGE`: a schedule file is larger than the loader reads (see `MAX_SCHEDULE_FILE_BYTES`).
 * - `YAML_SYNTAX`: the file is not well-formed YAML (or holds several documents).
 * - `SCHEMA_INVALID`: a value or key does not match the schedule-file schema (unknown key, wrong type, bad
 *   duration, bad name, missing field, a `__proto__` key, ...).
 * - `NO_SCHEDULES`: the file has no (or an empty) `schedules` list.
 * - `NAME_DUPLICATE`: a schedule name is used twice (in one file or across the files of a directory).
 * - `JITTER_TOO_LONG`: the jitter window reaches the next due time.
 * - `CRON_*`, `ZONE_UNKNOWN`: from the cron compiler (see `CronError` in runner/schedule/cron.ts).
 * - `JOB_INVALID`: the job kind's load-time `compile` refused the job block (e.g. module file missing).
 * - `DEPRECATED`: not a refusal but a warning (`LoadResult.warnings`): accepted input that has a newer form.
 * - `CALENDAR_UNKNOWN`: a calendar name that no file of the flock defines (or only a refused file does).
 * - `CALENDAR_CYCLE`: calendars that include or exclude each other in a cycle.
 * - `CALENDAR_INVALID`: a calendar's `.ics` file cannot be read or is not valid iCalendar.
 * - `GROUP_UNKNOWN`: a schedule's `group:` names no group of its file's `groups:`.
 * - `GROUP_CONFLICT`: two files define one group with different limits (both files are refused).
 */
export type ConfigErrorCode =
  | 'CONFIG_IO'
  | 'FILE_TOO_LARGE'
  | 'YAML_SYNTAX'
  | 'SCHEMA_INVALID'
  | 'NO_SCHEDULES'
  | 'NAME_DUPLICATE'
  | 'JITTER_TOO_LONG'
  | 'CRON_SYNTAX'
  | 'CRON_NEVER_FIRES'
  | 'CRON_TZ_PREFIX'
  | 'CRON_UNSUPPORTED'
  | 'ZONE_UNKNOWN'
  | 'JOB_INVALID'
  | 'DEPRECATED'
  | 'CALENDAR_UNKNOWN'
  | 'CALENDAR_CYCLE'
  | 'CALENDAR_INVALID'
  | 'CALENDAR_NEVER_RUNS'
  | 'GROUP_UNKNOWN'
  | 'GROUP_CONFLICT'
  /** A value JSON cannot carry (±Infinity from `1e400`, a `!!set`, `!!omap`, `!!binary` or `!!timestamp` value). */
  | 'NOT_JSON';

/** Fields of a {@link ConfigError}. */
export interface ConfigErrorInit {
  code: ConfigErrorCode;
  /** The file as named to the loader (relative paths stay relative). */
  file: string;
  /** 1-based line of the value node (or of the key / parent map when the field is missing); 0 = whole file. */
  line: number;
  /** 1-based column, like {@link line}; 0 = whole file. */
  col: number;
  /** Dotted path of the field, e.g. `schedules[2].job.url`; empty when the error concerns the whole file. */
  field: string;
  /** What is wrong, in words. */
  reason: string;
  /** How to fix it, when there is something useful to say. */
  hint?: string;
  /** The underlying error (CronError, JobCompileError, YAMLError, fs error), if any. */
  cause?: unknown;
}

/**
 * A refusal of (part of) a schedule file. Carries the location and field so that tools can point at it;
 * {@link format} renders the one-line compiler-style report, plus an indented hint line when there is a hint.
 */
export class ConfigError extends Error implements ConfigErrorInit {
  readonly code: ConfigErrorCode;
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly field: string;
  readonly reason: string;
  readonly hint?: string;

  constructor(init: ConfigErrorInit) {
    super(formatError(init), init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ConfigError';
    this.code = init.code;
    this.file = init.file;
    this.line = init.line;
    this.col = init.col;
    this.field = init.field;
    this.reason = init.reason;
    if (init.hint !== undefined) this.hint = init.hint;
  }

  /**
   * `file:line:col: field: reason`, then `  hint: ...` on a second line when there is a hint. The location is
   * just `file` when line is 0 (the error concerns the whole file); `field: ` is left out when empty.
   */
  format(): string {
    return formatError(this);
  }

  /** Plain data, for JSON logs and the admin API. */
  toJSON(): Omit<ConfigErrorInit, 'cause'> {
    return {
      code: this.code,
      file: this.file,
      line: this.line,
      col: this.col,
      field: this.field,
      reason: this.reason,
      ...(this.hint === undefined ? {} : { hint: this.hint }),
    };
  }
}

/**
 * `file:line:col: field: reason`, then `  hint: ...` (see {@link ConfigError.format}): the one form of a located
 * refusal, also for refusals of a file's entry that are not the loader's own (`cronflock apply -f`'s stored-schedule
 * check, whose codes are the store's).
 */
export function formatError(e: Omit<ConfigErrorInit, 'cause' | 'code'>): string {
  const where = e.line > 0 ? `${e.file}:${e.line}:${e.col}` : e.file;
  const head = `${where}: ${e.field ? `${e.field}: ` : ''}${e.reason}`;
  return e.hint ? `${head}\n  hint: ${e.hint}` : head;
}

/**
 * The path segments of a dotted field (as {@link fieldPath} writes it, e.g. `job.params.x[1]`) inside `data`, read
 * against the data so that keys holding `.` or `[` are found whole (the longest key that fits is taken). Stops at the
 * deepest segment found: a missing one leaves its parent's path (positions then point at the parent, as for a
 * missing key). A map with both `a.b` and `a: {b}` writes both as `a.b`; the longer key is taken.
 */
export function fieldSegments(data: unknown, field: string): (string | number)[] {
  const out: (string | number)[] = [];
  let v = data;
  let rest = field;
  while (rest !== '') {
    if (Array.isArray(v)) {
      const m = /^\[(\d+)\]\.?/.exec(rest);
      if (!m || Number(m[1]) >= v.length) break;
      out.push(Number(m[1]));
      v = v[Number(m[1])];
      rest = rest.slice(m[0].length);
    } else if (v !== null && typeof v === 'object') {
      const key = Object.keys(v)
        .filter((k) => rest === k || rest.startsWith(`${k}.`) || rest.startsWith(`${k}[`))
        .sort((a, b) => b.length - a.length)[0];
      if (key === undefined) break;
      out.push(key);
      v = (v as Record<string, unknown>)[key];
      rest = rest.slice(key.length).replace(/^\./, '');
    } else {
      break;
    }
  }
  return out;
}

/** Renders a zod-style path (`['schedules', 2, 'job', 'url']`) as `schedules[2].job.url`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}
