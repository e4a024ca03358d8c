/**
 * Validation of a stored schedule's definition: THE SAME code that validates a schedule file's entry (the zod
 * schema of runner/config/schema.ts, each job kind's compile, the cross-field checks of runner/config/load.ts),
 * run over a one-schedule file's data (the loader's object step, `checkScheduleData`: no YAML, the definition is
 * already an object), so a definition is refused with the same codes, reasons and hints as the same entry in a
 * file, and compiles to the same schedule and definition hash. Only the field paths differ: `cron`, not
 * `schedules[0].cron`.
 *
 * What a stored definition cannot use: the file-level blocks of a schedule file (`groups:` and `calendars:`), so
 * `group:` and `calendar:` names are refused (GROUP_UNKNOWN, CALENDAR_UNKNOWN) — a group or calendar defined by
 * one file must not be borrowed by a source that does not see that file.
 */
import { isAbsolute, resolve } from 'node:path';
import { canonicalJson } from '../text/canonical-json.js';
import { checkScheduleData, type CompiledSchedule, type FileLoadResult, type ScheduleSource } from '../config/load.js';
import { fieldPath } from '../config/errors.js';
import { nonJsonValues, walkDefinition, type DefinitionProblem } from '../config/json-values.js';

export { nonJsonValues, type DefinitionProblem };
import { PROTO_KEY_HINT, PROTO_KEY_REASON } from '../config/yaml-position.js';
import { MAX_DEFINITION_DEPTH, TOO_DEEP_HINT, TOO_DEEP_REASON, tooDeepPath } from '../config/depth.js';
import type { ScheduleFileInput } from '../config/schema.js';

/** A schedule's definition as written: one entry of a schedule file's `schedules:` list (durations as text). */
export type ScheduleDefinition = NonNullable<ScheduleFileInput['schedules']>[number];


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
 * The largest stored definition, in bytes of its canonical JSON (UTF-8): 64 KiB. Every replica reads every
 * stored definition at start and each changed one again, keeps them all in memory and publishes each to
 * `{ns}:defs`; the store is made for up to 1M schedules, so the cap bounds that (1M × 64 KiB is already 64 GB,
 * while a real definition — cron, a job, some params naming a customer — is well under 2 KiB). Larger data belongs
 * where the job reads it (a database row the params name), not in the schedule. The same cap holds for the library,
 * the HTTP API (413) and `cronflock apply`, all through {@link checkDefinition} and {@link ScheduleStore.write}.
 */
export const MAX_DEFINITION_BYTES = 64 * 1024;

/** The refusal of a definition larger than {@link MAX_DEFINITION_BYTES} (code TOO_LARGE). */
export function tooLargeProblem(bytes: number): DefinitionProblem {
  return {
    code: 'TOO_LARGE',
    field: '',
    reason: `the definition is ${bytes.toLocaleString('en-US')} bytes as JSON, more than the limit of ${MAX_DEFINITION_BYTES.toLocaleString('en-US')} bytes (64 KiB) a stored schedule may have`,
    hint: 'keep large data where the job reads it (a database row, an object store) and put only its id in job.params',
  };
}


/** Options of {@link checkDefinition}. */
export interface DefinitionCheckOptions {
  /** Where relative module paths resolve (default: the working directory). */
  baseDir?: string;
  /** The definition is about to be stored: a relative path is refused ({@link relativePathProblems}). */
  writing?: boolean;
  /**
   * The writer is not on this machine (the HTTP API's caller): a relative path's hint does not name the absolute
   * path as seen here (the API server's directory means nothing to the caller).
   */
  remoteWriter?: boolean;
}

/**
 * Validates and compiles one definition the way a schedule file's entry is (see the module docs): one function
 * for writers (library upsert, API PUT, `cronflock apply`) and replicas (each stored definition at start and each
 * change).
 * Relative module paths resolve against `baseDir` (default: the working directory).
 * `writing`: the definition is about to be stored, where a relative path is refused ({@link relativePathProblems});
 * replicas compile what is stored without it.
 * Per call, in order: nesting past MAX_DEFINITION_DEPTH (runner/config/depth.ts, an iterative walk), non-JSON values and `__proto__` keys (one walk; a replica's definition comes from JSON.parse,
 * which makes `__proto__` an own key, so it is looked for there too), the canonical JSON and its size cap, then
 * the file loader's object step (runner/config/load.ts `checkScheduleData`) over that JSON read back.
 * Replicas skip none of it, on purpose: the walk costs under 1 µs and must run anyway for `__proto__`; on a stored
 * definition (keys already sorted) the canonical JSON is one JSON.stringify of the object as it is, and the size
 * cap then also holds for what was written to Redis by other means; the read-back copy (~1 µs) keeps the compiled
 * schedule from sharing objects with the caller's. What a replica saves is the YAML document (~100 µs).
 * Never throws for bad input: refusals come back as a {@link ScheduleDefinitionError}.
 */
export async function checkDefinition(def: unknown, opts: DefinitionCheckOptions = {}): Promise<CheckedDefinition> {
  return checkDefinitionBy(compileStored, def, opts);
}

/**
 * The loader step of {@link checkDefinition}: the definition's canonical JSON `json` as a one-schedule file,
 * `data` being that JSON read back (`{ schedules: [JSON.parse(json)] }`); errors name `schedules[0].<field>`.
 */
export type DefinitionCompiler = (data: { schedules: [unknown] }, json: string, fileName: string, baseDir: string) => Promise<FileLoadResult>;

/**
 * The object step (no YAML document): what reading `{"schedules":[<json>]}` as a schedule file gives, held to
 * that by runner/store/definition.test.ts (which passes {@link checkDefinitionBy} the text step instead).
 */
const compileStored: DefinitionCompiler = (data, _json, fileName, baseDir) => checkScheduleData(data, fileName, { baseDir });

/**
 * {@link checkDefinition} with its loader step given: for the test that compares the object step with the file's
 * text step; everything around the step (the checks before it, the problems' fields and words after) is shared.
 */
export async function checkDefinitionBy(compile: DefinitionCompiler, def: unknown, opts: DefinitionCheckOptions = {}): Promise<CheckedDefinition> {
  const name = typeof (def as { name?: unknown } | null)?.name === 'string' ? (def as { name: string }).name : '?';
  if (def === null || typeof def !== 'object' || Array.isArray(def)) {
    return { ok: false, error: new ScheduleDefinitionError(name, [{ code: 'NOT_AN_OBJECT', field: '', reason: 'a schedule definition must be an object (name, cron, job, …)', hint: 'pass one entry of a schedule file\'s schedules: list, as an object' }]) };
  }
  // Nesting past the one limit (runner/config/depth.ts) first, by an iterative walk: everything after it (this
  // walk, canonicalJson, the loader's zod pass, an answer's redaction) is recursive and would run out of stack.
  const deep = tooDeepPath(def, MAX_DEFINITION_DEPTH);
  if (deep !== undefined) return { ok: false, error: new ScheduleDefinitionError(name, [{ code: 'SCHEMA_INVALID', field: fieldPath(deep), reason: TOO_DEEP_REASON, hint: TOO_DEEP_HINT }]) };
  // JSON.stringify would drop, null or turn into text what JSON cannot carry: refuse it, naming where.
  const { nonJson, protoKeys } = walkDefinition(def);
  if (nonJson.length > 0) return { ok: false, error: new ScheduleDefinitionError(name, nonJson) };
  // An own `__proto__` key (JSON.parse makes one, so a replica reading the store must look too) would vanish in
  // canonicalJson's copy, and what it holds with it: refused as the file loader refuses it (yaml-position.ts),
  // wherever it is.
  if (protoKeys.length > 0) {
    return { ok: false, error: new ScheduleDefinitionError(name, protoKeys.map((field) => ({ code: 'SCHEMA_INVALID', field, reason: PROTO_KEY_REASON, hint: PROTO_KEY_HINT }))) };
  }
  const relative = opts.writing ? relativePathProblems(def, opts.remoteWriter ? undefined : (opts.baseDir ?? process.cwd())) : [];
  const json = canonicalJson(def);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_DEFINITION_BYTES) return { ok: false, error: new ScheduleDefinitionError(name, [tooLargeProblem(bytes)]) };
  // The loader over the definition as stored (JSON.parse of its canonical JSON, as every replica reads it:
  // `undefined` members gone, and a copy the compiled schedule may keep).
  const r = await compile({ schedules: [JSON.parse(json) as unknown] }, json, `schedule ${name}`, opts.baseDir ?? process.cwd());
  if (r.errors.length > 0 || relative.length > 0) {
    const refusedFields = new Set(relative.map((p) => p.field));
    const problems = r.errors.filter((e) => !refusedFields.has(e.field.replace(PREFIX, ''))).map((e) => ({
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
    return { ok: false, error: new ScheduleDefinitionError(name, [...relative, ...problems]) };
  }
  const s = r.schedules[0]!;
  return { ok: true, schedule: { ...s, source: STORE_SOURCE }, json };
}

/**
 * The relative file paths of a definition about to be stored (`job.path` of a module job, `job.kubeconfig`),
 * each refused: a stored schedule is run by every replica, which resolves a relative path in its own working
 * directory, not where the writer was (a file's folder for `cronflock apply`, the application's for the
 * library), so the writer's check would pass while every replica refuses it. The hint names the absolute path
 * as the writer sees it when the writer is local (`baseDir` given: `cronflock apply -f`, the library); without
 * `baseDir` (the HTTP API, whose caller is elsewhere) it only says to write the absolute path.
 */
export function relativePathProblems(def: unknown, baseDir: string | undefined): DefinitionProblem[] {
  const job = (def as { job?: unknown } | null)?.job;
  if (job === null || typeof job !== 'object' || Array.isArray(job)) return [];
  const out: DefinitionProblem[] = [];
  for (const key of ['path', 'kubeconfig'] as const) {
    const v = (job as Record<string, unknown>)[key];
    if (key === 'path' && (job as { kind?: unknown }).kind !== 'module') continue;
    if (typeof v !== 'string' || v === '' || isAbsolute(v)) continue;
    out.push({
      code: 'SCHEMA_INVALID',
      field: `job.${key}`,
      reason: `"${v}" is a relative path; a stored schedule runs on every replica, and each would resolve it in its own working directory, not where it was written`,
      hint: `write the absolute path as the replicas see it${baseDir !== undefined ? ` (here: ${resolve(baseDir, v)})` : ''}${key === 'path' ? ', or use kind: handler' : ''}`,
    });
  }
  return out;
}
