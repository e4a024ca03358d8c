/**
 * Messages and hints: turns one zod issue into problems that say what is wrong in the user's words, where (the
 * field path) and how to fix it (e.g. "did you mean …?" for a misspelt key, a unit for a bare duration number).
 * Never echoes a value: a value in the wrong place may be a secret.
 */
import type { z } from 'zod';
import type { ConfigErrorCode } from './errors.js';
import { scheduleFileSchema } from './schema.js';
import type { Path } from './yaml-position.js';
import type { Positions } from './data-positions.js';
import { editDistance } from '../text/edit-distance.js';

const DURATION_KEYS = new Set(['jitter', 'startingDeadline', 'timeout', 'overdueGrace']);

/** One problem on its way to becoming a ConfigError. */
export interface Problem {
  code: ConfigErrorCode;
  path: Path;
  reason: string;
  hint?: string;
  cause?: unknown;
  /** For unknown keys: point at the key node itself, not at its value. */
  atKey?: boolean;
}

/**
 * The problems of one zod issue on the parsed file `data` (one per unknown key; otherwise one), with codes of
 * {@link ConfigErrorCode}; `locator` tells whether a path exists and where a first definition is.
 */
export function issueProblems(issue: z.core.$ZodIssue, data: unknown, locator: Positions, file: string): Problem[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const params = (issue as { params?: Record<string, unknown> }).params;
  const last = path[path.length - 1];

  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => {
      const allowed = allowedKeys(path, data);
      // The key as written (a YAML number key keeps its digits), the last segment of its field as the file names it.
      const written = locator.fieldName([...path, k]).slice(locator.fieldName(path).length).replace(/^\./, '');
      return {
        code: 'SCHEMA_INVALID' as const,
        path: [...path, k],
        reason: `unknown key "${written}"`,
        hint: keyHint(k, allowed),
        atKey: true,
      };
    });
  }

  if (issue.code === 'invalid_key') {
    // A map key its schema refuses (e.g. a header name): the key's own issue says why; point at the key.
    const why = issue.issues.map((i) => i.message).find((m) => !m.startsWith('Invalid input'));
    return [{ code: 'SCHEMA_INVALID', path, reason: why ?? 'is not a valid key here', atKey: true }];
  }

  if (issue.code === 'invalid_union' && issue.discriminator !== undefined && !('matches' in issue)) {
    const kinds = (issue.options ?? []).map(String).join(', ');
    // The job block's `kind`, or another discriminated block's field (e.g. a backup's `storage.type`).
    const isJobKind = path.length === 4 && path[2] === 'job' && path[3] === 'kind';
    const what = isJobKind ? 'job kind' : String(issue.discriminator);
    if (!locator.exists(path)) {
      return [{ code: 'SCHEMA_INVALID', path, reason: `is required (the ${what})`, hint: `one of: ${kinds}` }];
    }
    const given = valueAt(data, path);
    return [
      {
        code: 'SCHEMA_INVALID',
        path,
        reason: isJobKind ? `unknown job kind ${JSON.stringify(given)}` : `unknown ${what} ${JSON.stringify(given)}`,
        hint: isJobKind ? `known kinds: ${kinds}` : `one of: ${kinds}`,
      },
    ];
  }

  if (path.length === 1 && last === 'schedules' && (issue.code === 'too_small' || !locator.exists(path) || valueAt(data, path) === null)) {
    return [
      {
        code: 'NO_SCHEDULES',
        path,
        reason: locator.exists(path) && valueAt(data, path) !== null ? 'the schedules list is empty' : 'the file defines no schedules',
        hint: 'list at least one schedule under "schedules:" (each with name, cron and job)',
      },
    ];
  }

  if (issue.code === 'invalid_type') {
    const custom = issue.message.startsWith('Invalid input') ? undefined : issue.message;
    if (!locator.exists(path)) {
      return [{ code: 'SCHEMA_INVALID', path, reason: 'is required', ...(custom ? { hint: custom } : {}) }];
    }
    const given = valueAt(data, path);
    if (given === null) {
      return [{ code: 'SCHEMA_INVALID', path, reason: `has no value; expected ${issue.expected}`, ...(custom ? { hint: custom } : {}) }];
    }
    // A number as the file writes it (1e400, not Infinity; 99999999999999999999, not its rounding).
    const shown = typeof given === 'number' || typeof given === 'boolean' ? (locator.valueText(path) ?? String(given)) : undefined;
    if (typeof last === 'string' && DURATION_KEYS.has(last) && typeof given === 'number') {
      return [
        {
          code: 'SCHEMA_INVALID',
          path,
          reason: `must be a duration with a unit, not the bare number ${shown}`,
          // Past the largest number JavaScript holds (1e400), "1e400s" would be no duration either.
          hint: Number.isFinite(given) ? `write e.g. ${given}s or ${given}ms (units ms, s, m, h, d)` : 'write a duration such as 30s or 5m (units ms, s, m, h, d)',
        },
      ];
    }
    const hint =
      issue.expected === 'boolean' && typeof given === 'string' && /^(yes|no|on|off|y|n)$/i.test(given)
        ? 'YAML 1.2 reads yes/no/on/off as text: write true or false'
        : issue.expected === 'string' && (typeof given === 'number' || typeof given === 'boolean')
          ? quoteHint(last, given, shown ?? String(given), custom?.includes('not shown') === true)
          : path.length === 0
            ? 'a schedule file is a map with a "schedules:" list'
            : undefined;
    const expected = issue.expected === 'object' || issue.expected === 'record' ? 'a map' : issue.expected === 'array' ? 'a list' : issue.expected;
    return [
      {
        code: 'SCHEMA_INVALID',
        path,
        reason: custom ?? `expected ${expected}, got ${describe(given)}`,
        ...(hint ? { hint } : {}),
      },
    ];
  }

  if (issue.code === 'custom' && typeof params?.code === 'string') {
    const code = params.code as ConfigErrorCode;
    if (code === 'NAME_DUPLICATE' && typeof params.firstIndex === 'number') {
      const list = params.list === 'calendars' ? 'calendars' : 'schedules';
      const pos = locator.position([list, params.firstIndex, 'name'], false);
      return [
        {
          code,
          path,
          reason: `${issue.message} (${file}:${pos.line}:${pos.col})`,
          hint: `${list === 'calendars' ? 'calendar' : 'schedule'} names must be unique across all schedule files`,
        },
      ];
    }
    return [{ code, path, reason: issue.message, ...(typeof params.hint === 'string' ? { hint: params.hint } : {}) }];
  }

  return [{ code: 'SCHEMA_INVALID', path, reason: issue.message }];
}

/** What was given, by its type only: a value in the wrong place may be a secret (e.g. a header value), so never the value. */
export function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object' && v !== null) return 'a map';
  if (typeof v === 'boolean') return String(v);
  // Infinity and NaN are of type number but not numbers a schema accepts (JSON's 1e400 parses to Infinity).
  if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : Number.isFinite(v) ? 'a number' : 'an infinite number (too large for JavaScript)';
  return typeof v === 'string' ? 'text' : `a ${typeof v}`;
}

/** The value at `path` in `data`; undefined when it is not there. */
export function valueAt(data: unknown, path: readonly (string | number)[]): unknown {
  let v = data;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

/** Keys the schema allows in the map at `path` (best effort; [] when unknown). */
function allowedKeys(path: readonly (string | number)[], data: unknown): string[] {
  const def = schemaAt(scheduleFileSchema, path, data)?._zod.def as { type: string; shape?: Record<string, unknown> } | undefined;
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

/**
 * The schema of the field at `path` inside `root` (objects and lists), looked through wrappers, pipes and
 * discriminated unions (picked by the value in `data`); undefined when the path leaves the schema.
 */
export function schemaAt(root: z.core.$ZodType, path: readonly (string | number)[], data: unknown): z.core.$ZodType | undefined {
  let schema: z.core.$ZodType | undefined = root;
  for (let i = 0; i <= path.length && schema; i++) {
    schema = unwrap(schema, valueAt(data, path.slice(0, i)));
    if (i === path.length) break;
    const seg = path[i];
    const def = schema._zod.def as { type: string; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType };
    if (def.type === 'object' && typeof seg === 'string') schema = def.shape?.[seg];
    else if (def.type === 'array' && typeof seg === 'number') schema = def.element;
    else schema = undefined;
  }
  return schema;
}

/** Looks through wrappers, pipes and (discriminated) unions, picking the union option that matches `value`. */
function unwrap(schema: z.core.$ZodType, value: unknown): z.core.$ZodType {
  let s = schema;
  for (let hops = 0; hops < 20; hops++) {
    const def = s._zod.def as {
      type: string;
      innerType?: z.core.$ZodType;
      in?: z.core.$ZodType;
      options?: z.core.$ZodType[];
      discriminator?: string;
    };
    if (def.innerType && ['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch'].includes(def.type)) {
      s = def.innerType;
    } else if (def.type === 'pipe' && def.in) {
      s = def.in;
    } else if (def.type === 'union' && def.options && def.discriminator) {
      const want = (value as Record<string, unknown> | null)?.[def.discriminator];
      const option = def.options.find((o) => o._zod.propValues?.[def.discriminator!]?.has(want as never));
      if (!option) return s;
      s = option;
    } else {
      return s;
    }
  }
  return s;
}

function keyHint(key: string, allowed: string[]): string | undefined {
  if (allowed.length === 0) return undefined;
  const near = allowed
    .map((a) => ({ a, d: a.toLowerCase() === key.toLowerCase() ? 0 : editDistance(a.toLowerCase(), key.toLowerCase()) }))
    .filter((x) => x.d <= Math.max(1, Math.floor(key.length / 4)) + 1)
    .sort((x, y) => x.d - y.d)[0];
  const list = `allowed keys here: ${allowed.join(', ')}`;
  return near ? `did you mean "${near.a}"? ${list}` : list;
}


/**
 * How to write a number or true/false that YAML read where text is expected (`name: 123`, `cron: 5`; `written`: as
 * the file writes it): in
 * quotes, as YAML reads unquoted digits and true/false as numbers and booleans; for `cron`, with an example;
 * without the value where the field's schema says its value is not shown.
 */
function quoteHint(key: string | number | undefined, given: number | boolean, written: string, secret: boolean): string {
  // A field whose schema keeps its value out of messages (a header may hold a credential) gets the rule alone.
  if (secret) return `YAML reads an unquoted ${typeof given} there: write the value in quotes to make it text`;
  // As written: quoting 1e400 keeps "1e400", not the "Infinity" JavaScript would print.
  const quoted = JSON.stringify(written);
  if (key === 'cron') return `YAML reads ${written} as a number: write the cron expression in quotes, e.g. cron: "*/5 * * * *"`;
  return `YAML reads ${written} as a ${typeof given}: write it in quotes to make it text, e.g. ${typeof key === 'string' ? `${key}: ` : ''}${quoted}`;
}
