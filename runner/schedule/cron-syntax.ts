/**
 * Cron validation: refuses what is not a cron expression this runner schedules, with messages that name the field
 * in words ("the minute field …"), say what is wrong and what the field allows; and parses what is valid with
 * cron-parser (in UTC, on wall-clock time: see ./cron.ts for why). Due times are ./cron-due.ts's job.
 */
import { CronExpressionParser, type CronExpression } from 'cron-parser';
import type { CompileCronOptions } from './cron.js';
import { isValidTimeZone, misspelledZoneMessage, suggestTimeZones } from './zone.js';

/** Why {@link compileCron} refused its input. */
export type CronErrorCode = 'CRON_SYNTAX' | 'CRON_NEVER_FIRES' | 'CRON_TZ_PREFIX' | 'CRON_UNSUPPORTED' | 'ZONE_UNKNOWN';

/**
 * A refused cron expression or time zone. `field` names the schedule field at fault (`timeZone` for
 * `ZONE_UNKNOWN`, `cron` otherwise); `message` says what is wrong and how to fix it; `cause` holds
 * cron-parser's own error when there is one.
 */
export class CronError extends Error {
  readonly code: CronErrorCode;
  readonly field: 'cron' | 'timeZone';
  constructor(code: CronErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CronError';
    this.code = code;
    this.field = code === 'ZONE_UNKNOWN' ? 'timeZone' : 'cron';
  }
}

const MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly', '@minutely', '@secondly', '@weekdays', '@weekends'];

interface FieldInfo {
  readonly name: string;
  /** Number of distinct values (the largest sensible step). */
  readonly size: number;
  readonly range: string;
  /** What may be written in the field besides the forms every field takes (see {@link EVERY_FIELD}). */
  readonly values: string;
}
/** Forms every field takes. */
const EVERY_FIELD = '* (any), ranges a-b, steps */n, a-b/n and a/n, lists a,b,c, and H (hashed)';
const SECOND: FieldInfo = { name: 'second', size: 60, range: '0-59', values: 'numbers 0-59' };
const FIVE_FIELDS: readonly FieldInfo[] = [
  { name: 'minute', size: 60, range: '0-59', values: 'numbers 0-59' },
  { name: 'hour', size: 24, range: '0-23', values: 'numbers 0-23' },
  { name: 'day-of-month', size: 31, range: '1-31', values: 'numbers 1-31, L (the last day of the month), ? (= *)' },
  { name: 'month', size: 12, range: '1-12', values: 'numbers 1-12 or names jan-dec' },
  {
    name: 'day-of-week',
    size: 7,
    range: '0-7',
    values: 'numbers 0-7 (0 and 7 are Sunday) or names sun-sat, nL (the last weekday n of the month, e.g. 5L), n#k (the k-th weekday n, e.g. 1#2 = the second Monday), ? (= *)',
  },
];

/**
 * The `currentDate` every parse is given (only the parsed fields are used, never cron-parser's iteration). Without it
 * cron-parser starts from luxon's `DateTime.local()`, whose zone name luxon reads by building an
 * `Intl.DateTimeFormat` each time: ~0.25 ms and ICU memory in the C heap per compiled expression, which the C heap
 * kept after a load of many distinct expressions (~60 MB of RSS for 10,000 of them).
 */
const PARSE_FROM_MS = 0;

/** The fields of a 5- or 6-field expression. */
const fieldsOf = (parts: readonly string[]): readonly FieldInfo[] => (parts.length === 6 ? [SECOND, ...FIVE_FIELDS] : FIVE_FIELDS);

/** A refusal that names the field in words, what is wrong with it, and what the field allows. */
function fieldError(shown: string, info: FieldInfo, part: string, why: string, cause?: unknown): CronError {
  return new CronError(
    'CRON_SYNTAX',
    `cron ${shown}: the ${info.name} field ${JSON.stringify(part)} ${why}; use what the ${info.name} field allows: ${info.values}; ${EVERY_FIELD}`,
    cause === undefined ? undefined : { cause },
  );
}
const HOW_TO_WRITE =
  'write 5 fields "minute hour day-of-month month day-of-week" (e.g. "*/15 * * * *", "30 2 * * 1-5"), ' +
  `6 with seconds first (e.g. "*/10 * * * * *"), or one of ${MACROS.join(', ')}`;

/** A cron expression that passed validation: trimmed, quoted for messages, and as cron-parser parsed it. */
export interface ParsedCron {
  /** The expression, trimmed. */
  expr: string;
  /** `expr` as JSON text, as messages quote it. */
  shown: string;
  /** cron-parser's parse in UTC (the calendar of matching days; times of day from its fields). */
  parsed: CronExpression;
}

/**
 * Validates a cron expression and its time zone and parses the expression (see {@link compileCron} for what is
 * accepted). Does not check that the expression ever fires beyond what cron-parser itself refuses: the caller
 * does, with the due times (and {@link neverFires}).
 * @throws CronError as listed at {@link compileCron} (all codes but the `CRON_NEVER_FIRES` found by iteration).
 */
export function parseCron(expression: string, timeZone: string, opts: CompileCronOptions): ParsedCron {
  if (typeof expression !== 'string') throw new CronError('CRON_SYNTAX', `the cron expression must be a string; ${HOW_TO_WRITE}`);
  const expr = expression.trim();
  const shown = JSON.stringify(expr);
  if (expr === '') throw new CronError('CRON_SYNTAX', `the cron expression is empty; ${HOW_TO_WRITE}`);

  const prefix = /^(CRON_TZ|TZ)\s*=\s*(\S*)\s*(.*)$/i.exec(expr);
  if (prefix) {
    throw new CronError(
      'CRON_TZ_PREFIX',
      `cron ${shown}: a ${prefix[1]}= prefix is not supported; put the zone in the timeZone field ` +
        `(timeZone: ${prefix[2] || '<zone>'}) and write the cron without it (${JSON.stringify(prefix[3] ?? '')})`,
    );
  }

  let body = expr;
  if (expr.startsWith('@')) {
    const macro = expr.toLowerCase();
    if (macro === '@reboot') {
      throw new CronError(
        'CRON_UNSUPPORTED',
        `cron ${shown}: @reboot has no due time (cronflock schedules by the clock, not by process start); ` +
          'run start-up work from your deployment instead, or give a time such as "@daily"',
      );
    }
    if (!MACROS.includes(macro)) throw new CronError('CRON_SYNTAX', `cron ${shown}: unknown macro; ${HOW_TO_WRITE}`);
    body = macro;
  } else {
    checkFields(expr, shown);
  }

  const hashSeed = opts.hashSeed ? opts.hashSeed : `${expr}@${timeZone}`;
  let parsed: CronExpression;
  try {
    parsed = CronExpressionParser.parse(body, { tz: 'UTC', currentDate: PARSE_FROM_MS, hashSeed, strict: false });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (/explicit day of month/i.test(why)) throw neverFires(shown, expr, err);
    throw faultyField(expr, shown, hashSeed, err) ??
      new CronError('CRON_SYNTAX', `cron ${shown} is not valid: its fields are valid one by one but not together; ${HOW_TO_WRITE}`, { cause: err });
  }

  const spelled = misspelledZoneMessage(timeZone);
  if (spelled !== undefined) throw new CronError('ZONE_UNKNOWN', spelled);
  if (typeof timeZone !== 'string' || !isValidTimeZone(timeZone)) {
    const zone = String(timeZone);
    const near = typeof timeZone === 'string' ? suggestTimeZones(timeZone) : [];
    const hint = near.length > 0 ? `did you mean ${near.map((n) => JSON.stringify(n)).join(' or ')}? ` : '';
    throw new CronError(
      'ZONE_UNKNOWN',
      `time zone ${JSON.stringify(zone)} is not a known IANA time zone; ${hint}` +
        'use a tz database name such as "Europe/Berlin", "America/New_York" or "UTC" (offsets such as "+02:00" are not zones)',
    );
  }
  return { expr, shown, parsed };
}

/**
 * The first field that cron-parser refuses on its own (every other field `*`), as a refusal in our words: the field's
 * name, what is wrong (from cron-parser's message, translated), and what the field allows. cron-parser's own words
 * ("got range NaN-2") stay in `cause`. Undefined when every field parses alone.
 */
function faultyField(expr: string, shown: string, hashSeed: string, cause: unknown): CronError | undefined {
  const parts = expr.split(/\s+/);
  const infos = fieldsOf(parts);
  for (let i = 0; i < parts.length; i++) {
    const probe = parts.map((p, j) => (j === i ? p : '*')).join(' ');
    try {
      CronExpressionParser.parse(probe, { tz: 'UTC', currentDate: PARSE_FROM_MS, hashSeed, strict: false });
    } catch (err) {
      const info = infos[i]!;
      return fieldError(shown, info, parts[i]!, fieldProblem(info, parts[i]!, err instanceof Error ? err.message : String(err)), cause);
    }
  }
  return undefined;
}

/** cron-parser's complaint about one field, in words (never its own: "Constraint error, got range NaN-2 …"). */
function fieldProblem(info: FieldInfo, part: string, why: string): string {
  let m: RegExpExecArray | null;
  if (/cannot repeat at every 0|step: 0/i.test(why)) return 'has a step of 0, which never advances; use a step of 1 or more';
  if (info.name === 'day-of-month' && /L/i.test(part) && !/^L$/i.test(part)) {
    return `uses "L" in a way that is not supported${/L-\d/i.test(part) ? ' ("L-n", n days before the last day, is not)' : ''}; only "L" alone, the last day of the month, is`;
  }
  if ((m = /Invalid range: ([^,\s]+), min\((\d+)\) > max\((\d+)\)/i.exec(why))) {
    return `has the range ${m[1]}, which runs backwards; write the smaller value first (ranges do not wrap around: use a list such as 22-23,0-2)`;
  }
  if ((m = /cannot resolve alias "([^"]*)"/i.exec(why))) return `has "${m[1]}", which is not a name this field knows`;
  if (/occurrence number/i.test(why)) return 'has "#" without a number from 1 to 5 after it (n#k is the k-th weekday n of the month)';
  if (/incompatible/i.test(why)) return 'combines "#" with a list (","), which is not supported';
  if (/standalone L/i.test(why)) return 'has "L" alone, which this field does not take; write nL for the last weekday n of the month (e.g. 5L)';
  if (/NaN/.test(why)) return 'has a range or step with a side missing; write both ends (a-b) and a number after "/"';
  if ((m = /got value (\d+) expected range/i.exec(why))) return `has the value ${m[1]}, outside ${info.range}`;
  return 'is not valid';
}

/** Field count, `W`, and steps larger than their field (which cron-parser accepts and quietly reduces). */
function checkFields(expr: string, shown: string): void {
  const parts = expr.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) {
    throw new CronError('CRON_SYNTAX', `cron ${shown} has ${parts.length} field${parts.length === 1 ? '' : 's'}; ${HOW_TO_WRITE}`);
  }
  const infos = fieldsOf(parts);
  parts.forEach((part, i) => {
    const info = infos[i] as FieldInfo;
    if (info.name === 'day-of-month' && /w/i.test(part)) {
      throw new CronError(
        'CRON_UNSUPPORTED',
        `cron ${shown}: "W" (nearest weekday, in "${part}") is not supported by cron-parser; ` +
          'list the days instead (e.g. "0 9 * * 1-5" for weekdays, "0 9 * * 1#1" for the first Monday, ' +
          '"0 9 L * *" for the last day of the month), or let the job skip days that are not weekdays',
      );
    }
    for (const item of part.split(',')) {
      const step = /\/(\d+)$/.exec(item);
      if (step && Number(step[1]) > info.size) {
        const longer =
          info.name === 'second'
            ? ' (for minutes, step the minute field, e.g. "0 */2 * * * *")'
            : info.name === 'minute'
              ? ' (for hours, step the hour field, e.g. "0 */2 * * *"; periods such as 90 minutes do not fit one cron expression)'
              : info.name === 'hour'
                ? ' (for days, step the day-of-month field, e.g. "0 0 */2 * *")'
                : '';
        throw fieldError(
          shown,
          info,
          part,
          `has the step ${step[1]} (in "${item}"), larger than the field's ${info.size} values (${info.range}), so it ` +
            `would only ever match the start of the range; use a step of at most ${info.size}${longer}`,
        );
      }
    }
  });
}

export function neverFires(shown: string, expr: string, cause?: unknown): CronError {
  const parts = expr.split(/\s+/);
  const [dom, month] = parts.length === 6 ? [parts[3], parts[4]] : [parts[2], parts[3]];
  return new CronError(
    'CRON_NEVER_FIRES',
    `cron ${shown} can never fire: no date matches day-of-month "${dom ?? '?'}" in month "${month ?? '?'}" ` +
      '(February has at most 29 days; April, June, September and November have 30); ' +
      'choose days that exist in those months, add months, or use "L" for the last day of the month',
    cause === undefined ? undefined : { cause },
  );
}
