/**
 * Loading schedule files: YAML → one zod pass (shape, defaults, cross-field checks) → each job kind's load-time
 * `compile` → compiled schedules. A file with any error is refused whole, with every error it has, each located
 * at `file:line:col` of the offending YAML node; in a directory the other files still load.
 */
import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { LineCounter, isScalar, parseDocument, type Document, type Node } from 'yaml';
import type { DueTimes } from '../schedule/cron.js';
import type { HeartbeatConfig, NotifyConfig, SigningConfig } from '../notify/config.js';
import type { ScheduleWindows } from '../engine/windows.js';
import { readBounded } from './read-bounded.js';
import { ConfigError, fieldPath, fieldSegments } from './errors.js';
import { nonJsonValues } from './json-values.js';
import { cleanupNotifyAlias } from '../notify/config.js';
import { attachWindows, neverRunErrors, noFileCalendars, readFileCalendars, resolveFlockCalendars, type FileCalendars } from './calendars.js';
import type { BlackoutEntry, ScheduleCalendarRef } from './calendars-schema.js';
import type { GroupLimits, RateLimit } from './groups-schema.js';
import { scheduleFileSchema, type CatchUpPolicy, type ConcurrencyPolicy, type OnResumePolicy, type ValidatedSchedule } from './schema.js';
import { byPosition, ioError, MAX_SCHEDULE_FILE_BYTES, scheduleFilesIn, tooLarge } from './files.js';
import { Locator, PROTO_KEY_HINT, PROTO_KEY_REASON, protoKeyErrors, yamlErrors, type Path } from './yaml-position.js';
import { JsonPositions, type Positions } from './data-positions.js';
import { issueProblems, type Problem } from './messages.js';
import { compileJobs, compiled, prepareJobKinds, shareStrings } from './compile.js';
import { compileCron } from '../schedule/cron.js';
import { canonicalJson } from '../text/canonical-json.js';
import { precheckFiles, workersAvailable } from './load-pool.js';
import { FILE_DEPTH, firstTooDeep, isStackOverflow, PARSER_TOO_DEEP_REASON, TOO_DEEP_HINT, TOO_DEEP_REASON, tooDeepPath, yamlChildren } from './depth.js';
import { aliasLimitProblem, isAliasLimitError, maxAliasCountOf } from './yaml-aliases.js';
import { YAML_OPTIONS as PRECHECK_YAML_OPTIONS, type Precheck, type PrecheckedSchedule } from './precheck.js';

export { MAX_SCHEDULE_FILE_BYTES };

/** Where a schedule is defined: the file as named to the loader and the 1-based position of its entry. */
export interface ScheduleSource {
  file: string;
  line: number;
  col: number;
}

/**
 * A job after its kind's `compile` (for kinds without one, the validated parameters). Always has `kind`;
 * the rest is the kind's business (e.g. `timeoutMs` for http, the loaded `job` for module).
 */
export type CompiledJob = { readonly kind: string } & Readonly<Record<string, unknown>>;

/** A schedule ready to run. Durations are in ms; times are UTC ms. */
export interface CompiledSchedule {
  /** Unique DNS-1123 label. */
  name: string;
  /** The cron expression as written. */
  cron: string;
  /** IANA zone the expression is read in. */
  timeZone: string;
  /** Jitter window length in ms (fire time in `[due, due + jitterMs)`); 0 = fire at the due time. */
  jitterMs: number;
  /** How late after the fire time a run may still start, in ms; null = no limit. */
  startingDeadlineMs: number | null;
  /** When true, no new occurrences are started. */
  suspend: boolean;
  /** Who it belongs to (absent: no tenant): the `tenant` metrics label, the per-tenant limit of stored schedules. */
  tenant?: string;
  /** Labels to list and filter by (absent: none). */
  labels?: Record<string, string>;
  /** What to do with due times missed during downtime. */
  catchUp: CatchUpPolicy;
  /** With `catchUp: 'all'`, the most missed due times that are run (always set; default 10). */
  maxCatchUpRuns: number;
  /** Overlap across the flock: Allow, Forbid or Replace (Kubernetes CronJob semantics). */
  concurrencyPolicy: ConcurrencyPolicy;
  /** With Allow, the most runs at once across the flock; null = no limit. */
  maxConcurrent: number | null;
  /** Longest a run may take, in ms; null = no limit. */
  timeoutMs: number | null;
  /** How long after a fire time a success may come before the schedule is overdue, in ms; absent: the default (runner/records/health.ts). */
  overdueGraceMs?: number;
  /** Retries of a failed attempt (0 = none). */
  retries: number;
  /** First retry delay in ms; doubles per retry, with jitter, up to `retryBackoffMaxMs`. */
  retryBackoffMs: number;
  retryBackoffMaxMs: number;
  /** On `cronflock resume`: skip the occurrences missed while suspended, or run the latest of them. */
  onResume: OnResumePolicy;
  /** Notifications of outcomes (runner/notify/); cleanup's deprecated job-level `notify` lands here too. */
  notify?: NotifyConfig;
  /** Pings to an outside monitor (runner/notify/). */
  heartbeat?: HeartbeatConfig;
  /** Keys that sign an http job's body. */
  signing?: SigningConfig;
  /** The `calendar:` block as validated (names resolved at load); absent: every day. */
  calendar?: ScheduleCalendarRef;
  /** The `blackouts:` list as validated (durations in ms); absent: none. */
  blackouts?: BlackoutEntry[];
  /** The compiled calendar and blackouts (runner/config/calendars.ts); absent when the schedule has neither. */
  windows?: ScheduleWindows;
  /** The `group:` as written (absent: none) and that group's limits (from the file's `groups:`). */
  group?: string;
  groupLimits?: GroupLimits;
  /** The schedule's own `rateLimit:` (`per` in ms); absent: none. */
  rateLimit?: RateLimit;
  /** The job kind's compiled parameters, `kind` included; pass to that kind's `run`. */
  job: CompiledJob;
  /** Due times of `cron` in `timeZone`. */
  due: DueTimes;
  /** Where the schedule is defined (position of its list entry). */
  source: ScheduleSource;
  /**
   * sha256 (hex) of the canonical JSON (sorted keys) of the validated definition: every field above except
   * `due`, `windows`, `source` and `definitionHash`, with the job's validated parameters (before `compile`);
   * for a schedule that uses calendars, also of those calendars (entries, `.ics` contents). Equal hashes
   * mean an unchanged definition; a module job's file content is not part of it.
   */
  definitionHash: string;
}

/** Result of one file: its schedules if it is valid, else no schedules and every error it has. */
export interface FileLoadResult {
  schedules: CompiledSchedule[];
  errors: ConfigError[];
  /** Accepted but deprecated input (code `DEPRECATED`), with its position: say it, do not refuse it. */
  warnings?: ConfigError[];
}

/** What happened to one file: `ok` false = refused; `scheduleCount` = schedules loaded from it (0 if refused). */
export interface LoadedFile {
  file: string;
  ok: boolean;
  scheduleCount: number;
}

/**
 * Result of {@link loadSchedules}: the schedules of every valid file (in file-name order, then file order),
 * the errors of every refused file (sorted by file, line, col), and a per-file summary.
 */
export interface LoadResult {
  schedules: CompiledSchedule[];
  errors: ConfigError[];
  files: LoadedFile[];
  /** Deprecated input of the valid files (code `DEPRECATED`); print them, they refuse nothing. */
  warnings: ConfigError[];
}


/**
 * Options of {@link loadSchedules}: whether files are pre-checked in loader child processes (runner/config/load-pool.ts).
 * Results are the same either way; the children keep a large load's parse and validation garbage out of this process.
 */
export interface LoadOptions {
  /**
   * Loader child processes for the pre-check: 0 = none (all in-process); absent = the default: one less than the available
   * cores, 1 to 3, when the files together hold at least {@link WORKER_MIN_BYTES} and the built worker script is there
   * (from TypeScript sources it is not); `CRONFLOCK_LOAD_WORKERS=0` in the environment turns the default off.
   */
  workers?: number;
  /** Longest one file may take in a loader process, in ms (default 120,000); past it the file is refused (CONFIG_IO). */
  workerTimeoutMs?: number;
  /** The loader process's script (for tests of a crashing or silent one); default: the built load-worker.js. */
  workerUrl?: URL;
}

/** Below this many bytes of schedule files a load stays in-process (a loader process costs ~0.3 s to start). */
export const WORKER_MIN_BYTES = 1024 * 1024;

/**
 * Loads a schedule file, or every `*.yaml` / `*.yml` file of a directory (not recursive, sorted by name; names
 * starting with `.` are skipped, symlinks are followed, so Kubernetes ConfigMap mounts work).
 *
 * Never throws for bad input: problems are returned as {@link ConfigError}s. A file with any error is refused
 * whole (nothing from it is returned); other files of the directory still load. A schedule name already
 * defined in more than one file refuses every file that defines it (each error names the other definition): which
 * file was meant is for the user to say, and on a reload the running version of a refused file goes on, so an added
 * file that reuses a running schedule's name cannot take that schedule over.
 * A missing path, an unreadable file or a directory without schedule files gives a `CONFIG_IO` error with
 * line 0.
 * @param path a file or a directory; relative paths stay relative in error messages and `source.file`.
 * @param opts loader processes for the pre-check ({@link LoadOptions}); the result is the same with or without.
 */
export async function loadSchedules(path: string, opts: LoadOptions = {}): Promise<LoadResult> {
  let files: string[];
  try {
    const st = await stat(path);
    if (st.isDirectory()) files = await scheduleFilesIn(path);
    else if (st.isFile()) files = [path];
    else return ioFailure(path, 'is neither a file nor a directory');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      return ioFailure(path, 'does not exist', 'pass a schedule file or a directory of *.yaml / *.yml files', err);
    }
    return ioFailure(path, `cannot be read: ${(err as Error).message}`, undefined, err);
  }
  if (files.length === 0) {
    return ioFailure(path, 'holds no *.yaml or *.yml files', 'schedule files must end in .yaml or .yml', undefined);
  }

  const result: LoadResult = { schedules: [], errors: [], files: [], warnings: [] };
  const memo = new Map<string, Promise<unknown>>();
  const checkedFiles: { file: string; checked: Awaited<ReturnType<typeof checkText>> | null; errors: ConfigError[] }[] = [];
  const definedIn = new Map<string, NameDefinition[]>();
  const prechecks = (await useWorkers(files, opts)) ? precheckFiles(files, { ...(opts.workers ? { workers: opts.workers } : {}), ...(opts.workerTimeoutMs ? { timeoutMs: opts.workerTimeoutMs } : {}), ...(opts.workerUrl ? { workerUrl: opts.workerUrl } : {}) }) : undefined;
  for (const [fileIndex, file] of files.entries()) {
    const pre = prechecks ? await prechecks[fileIndex] : undefined;
    if (prechecks) prechecks[fileIndex] = DONE; // let this file's definitions go once compiled
    if (pre && 'failed' in pre) {
      const hint = 'load again; if it keeps failing, check the file in-process with CRONFLOCK_LOAD_WORKERS=0 (cronflock validate)';
      checkedFiles.push({ file, checked: null, errors: [ioError(file, `could not be checked: ${pre.failed}`, hint, undefined)] });
      continue;
    }
    const fromWorker = pre?.clean ? await fromPrecheck(pre, file, dirname(resolve(file)), memo) : undefined;
    if (fromWorker) {
      checkedFiles.push({ file, checked: fromWorker, errors: [] });
      for (const def of fromWorker.names) definedIn.set(def.name, [...(definedIn.get(def.name) ?? []), def]);
      continue;
    }
    let text: string;
    try {
      const read = await readBounded(file, MAX_SCHEDULE_FILE_BYTES);
      if (read.tooLarge) {
        checkedFiles.push({ file, checked: null, errors: [tooLarge(file, read.sizeBytes)] });
        continue;
      }
      text = read.text;
    } catch (err) {
      checkedFiles.push({ file, checked: null, errors: [ioError(file, `cannot be read: ${(err as Error).message}`, undefined, err)] });
      continue;
    }
    prepareJobKinds(text); // e.g. the module checks' set-up, beside this file's parse
    const checked = await checkText(text, file, dirname(resolve(file)), memo);
    checkedFiles.push({ file, checked, errors: [...checked.errors] });
    for (const def of checked.names) definedIn.set(def.name, [...(definedIn.get(def.name) ?? []), def]);
  }
  // A name defined in two files refuses both (duplicates inside one file are the schema's to report).
  for (const entry of checkedFiles) {
    for (const def of entry.checked?.names ?? []) {
      const other = (definedIn.get(def.name) ?? []).find((d) => d.file !== entry.file);
      if (!other) continue;
      entry.errors.push(
        new ConfigError({
          code: 'NAME_DUPLICATE',
          file: entry.file,
          line: def.line,
          col: def.col,
          field: def.field,
          reason: `name "${def.name}" is also defined in ${other.file}:${other.line}:${other.col} (${other.field}); both files are refused`,
          hint: 'schedule names must be unique across all schedule files: rename or remove one of the two',
        }),
      );
    }
  }
  // A group is one flock-wide slot set and rate window whichever file names it: two files that give one group
  // different limits would break the lower one (each replica enforces its own file's), so both are refused.
  const groupIn = new Map<string, { file: string; sched: CompiledSchedule; limits: string }>();
  for (const entry of checkedFiles) {
    for (const sched of entry.checked?.schedules ?? []) {
      if (!sched.groupLimits) continue;
      const limits = describeGroupLimits(sched.groupLimits);
      const first = groupIn.get(sched.groupLimits.name);
      if (!first) groupIn.set(sched.groupLimits.name, { file: entry.file, sched, limits });
      else if (first.file !== entry.file && first.limits !== limits) {
        for (const [at, other] of [
          [{ file: entry.file, sched, limits }, first],
          [first, { file: entry.file, sched, limits }],
        ] as const) {
          const target = checkedFiles.find((f) => f.file === at.file)!;
          if (target.errors.some((e) => e.code === 'GROUP_CONFLICT')) continue;
          target.errors.push(
            new ConfigError({
              code: 'GROUP_CONFLICT',
              file: at.file,
              line: at.sched.source.line,
              col: at.sched.source.col,
              field: 'group',
              reason: `schedule "${at.sched.name}": group "${sched.groupLimits.name}" is ${at.limits} here but ${other.limits} in ${other.file}; a group has one set of limits across the flock, so both files are refused`,
              hint: 'give the group the same limits in every file that defines it, or use another group name',
            }),
          );
        }
      }
    }
  }
  // Calendar names resolve across all files; a file that uses a refused file's calendar is refused too.
  const flock = resolveFlockCalendars(
    checkedFiles.map((e) => ({ file: e.file, ok: e.errors.length === 0 && e.checked !== null, calendars: e.checked?.calendars ?? noFileCalendars(e.file) })),
  );
  for (const e of flock.errors) checkedFiles.find((f) => f.file === e.file)?.errors.push(e);
  for (const { file, checked, errors } of checkedFiles) {
    if (checked && errors.length === 0) errors.push(...neverRunErrors(attachWindows(checked.schedules, flock), checked.calendars));
    errors.sort(byPosition);
    const ok = errors.length === 0 && checked !== null;
    result.errors.push(...errors);
    if (ok) result.schedules.push(...attachWindows(checked.schedules, flock));
    if (ok) result.warnings.push(...checked.warnings);
    result.files.push({ file, ok, scheduleCount: ok ? checked.schedules.length : 0 });
  }
  return result;
}

/**
 * Validates and compiles the text of one schedule file (for tests and for tools that have the text already).
 * Relative module paths resolve against `baseDir` (default: the directory of `fileName`).
 * @returns the schedules when the file is valid, else no schedules and all of its errors (sorted by position).
 */
export async function parseScheduleText(
  text: string,
  fileName: string,
  opts: { baseDir?: string } = {},
): Promise<FileLoadResult> {
  return oneFileResult(await checkText(text, fileName, opts.baseDir ?? dirname(resolve(fileName)), new Map()), fileName);
}

/**
 * Validates and compiles the content of one schedule file that is already plain data (`{ schedules: [...] }`, as
 * JSON.parse gives it: maps, lists, text, finite numbers, booleans, null), without the YAML step: the object step
 * of {@link parseScheduleText} (the same zod schema, cross-field checks, job-kind compile, calendar resolution),
 * so the same data gives the same schedules (definition hashes included) and the same errors (codes, fields,
 * reasons, hints) as its JSON text read as a file. Made for stored definitions (runner/store/definition.ts), which
 * every replica compiles at start and on each change: skipping the YAML document costs ~5× less.
 *
 * Positions: an error's `line:col` is where its node is in the canonical JSON of `data` (one line,
 * runner/config/data-positions.ts), so errors are ordered as the file path orders them for that JSON; a
 * schedule's `source` is `fileName` at line 0, col 0 (plain data has no position).
 * An own `__proto__` key (JSON.parse makes one) is refused as in a file, with the same reason and hint.
 * Relative paths (module jobs, `.ics` files) resolve against `opts.baseDir`.
 */
export async function checkScheduleData(data: unknown, fileName: string, opts: { baseDir: string }): Promise<FileLoadResult> {
  // Before the walks below (recursive, as zod and canonicalJson are): plain data nested past the limit is refused
  // first, at line 1, col 1 (its place in the canonical JSON would take a recursive walk to find).
  const deep = tooDeepPath(data, FILE_DEPTH);
  if (deep !== undefined) return { schedules: [], errors: [tooDeepError(fileName, deep, { line: 1, col: 1 })] };
  const positions = new JsonPositions(data);
  const items = listOf(data);
  const protoErrors = protoKeyPaths(data).map(
    (path) => new ConfigError({ code: 'SCHEMA_INVALID', file: fileName, ...positions.position(path, true), field: fieldPath(path), reason: PROTO_KEY_REASON, hint: PROTO_KEY_HINT }),
  );
  const names: NameDefinition[] = [];
  for (const [i, item] of items.entries()) {
    const name = (item as { name?: unknown } | null)?.name;
    if (typeof name === 'string') names.push({ name, file: fileName, line: 0, col: 0, field: fieldPath(['schedules', i, 'name']) });
  }
  const checked = await checkData(data, {
    file: fileName,
    baseDir: opts.baseDir,
    memo: new Map(),
    positions: () => positions,
    entryAt: items.map(() => ({ line: 0, col: 0 })),
    names,
    protoErrors,
    // Its one caller, the store (store/definition.ts checkDefinitionBy), refused values JSON cannot carry already.
    jsonValuesChecked: true,
  });
  return oneFileResult(checked, fileName);
}

/** The refusal of a value nested past the one limit (depth.ts MAX_DEFINITION_DEPTH), at `path` of the file's data. */
function tooDeepError(file: string, path: Path, pos: { line: number; col: number }): ConfigError {
  return new ConfigError({ code: 'SCHEMA_INVALID', file, ...pos, field: fieldPath(path), reason: TOO_DEEP_REASON, hint: TOO_DEEP_HINT });
}

/** One file's result on its own: its calendar names resolved against its own calendars, calendars that never run refused. */
function oneFileResult(checked: CheckedText, fileName: string): FileLoadResult {
  const flock = resolveFlockCalendars([{ file: fileName, ok: checked.errors.length === 0, calendars: checked.calendars }]);
  const errors = [...checked.errors, ...flock.errors];
  const schedules = errors.length === 0 ? attachWindows(checked.schedules, flock) : [];
  if (errors.length === 0) errors.push(...neverRunErrors(schedules, checked.calendars));
  errors.sort(byPosition);
  return errors.length === 0 ? { schedules, errors, warnings: checked.warnings } : { schedules: [], errors };
}

/** The `schedules` list of a file's data ([] when there is none). */
function listOf(data: unknown): unknown[] {
  const rawList = (data as { schedules?: unknown } | null)?.schedules;
  return Array.isArray(rawList) ? rawList : [];
}

/** The paths (`schedules[0].job.headers.__proto__`) of every own `__proto__` key in plain data (not inside another's value). */
function protoKeyPaths(data: unknown): Path[] {
  const out: Path[] = [];
  const path: Path = [];
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        path.push(i);
        visit(value[i]);
        path.pop();
      }
      return;
    }
    for (const k of Object.keys(value)) {
      path.push(k);
      if (k === '__proto__') out.push([...path]);
      else visit((value as Record<string, unknown>)[k]);
      path.pop();
    }
  };
  visit(data);
  return out;
}

const DONE: Promise<never> = new Promise<never>(() => {});

/** Whether this load pre-checks in workers (see {@link LoadOptions.workers}). */
async function useWorkers(files: readonly string[], opts: LoadOptions): Promise<boolean> {
  if (opts.workers !== undefined) return opts.workers > 0;
  if (process.env.CRONFLOCK_LOAD_WORKERS === '0' || !workersAvailable()) return false;
  let bytes = 0;
  for (const file of files) {
    try {
      bytes += (await stat(file)).size;
    } catch {
      // The in-process path reports it.
    }
    if (bytes >= WORKER_MIN_BYTES) return true;
  }
  return false;
}

/**
 * A clean file's schedules from its worker pre-check: each job kind's compile and the cron compile (shared by
 * expression and zone) run here, where the schedules will live. `undefined` when a job does not compile: the file
 * is then checked in-process, which reports that with its position.
 */
async function fromPrecheck(pre: Extract<Precheck, { clean: true }>, file: string, baseDir: string, memo: Map<string, Promise<unknown>>): Promise<CheckedText | undefined> {
  // Schedules whose job blocks are equal share one compiled job (compiled jobs are read, never changed): a kind's
  // compile depends only on the block and the file's folder, so each distinct block is compiled once.
  const jobIndex = new Map<string, number>();
  const distinct: { job: unknown }[] = [];
  const jobOf = pre.schedules.map((s) => {
    const key = canonicalJson(s.definition.job);
    let at = jobIndex.get(key);
    if (at === undefined) {
      at = distinct.push({ job: s.definition.job }) - 1;
      jobIndex.set(key, at);
    }
    return at;
  });
  const problems: Problem[] = [];
  const jobs = await compileJobs(distinct, distinct as unknown as ValidatedSchedule[], problems, baseDir, memo);
  if (problems.length > 0) return undefined;
  const names: NameDefinition[] = [];
  const schedules = pre.schedules.map((s: PrecheckedSchedule, i): CompiledSchedule => {
    const d = s.definition;
    names.push({ name: d.name, file, line: s.nameLine, col: s.nameCol, field: fieldPath(['schedules', i, 'name']) });
    const job = jobs.get(jobOf[i]!) ?? (distinct[jobOf[i]!]!.job as CompiledJob);
    return shareStrings({ ...d, job, due: compileCron(d.cron, d.timeZone, { hashSeed: d.name }), source: { file, line: s.line, col: s.col }, definitionHash: s.definitionHash });
  });
  return { schedules, errors: [], names, warnings: [], calendars: noFileCalendars(file) };
}

function ioFailure(path: string, reason: string, hint?: string, cause?: unknown): LoadResult {
  return { schedules: [], errors: [ioError(path, reason, hint, cause)], files: [], warnings: [] };
}


/** A schedule name and the location of its value node, for duplicate reports across files. */
interface NameDefinition {
  name: string;
  file: string;
  line: number;
  col: number;
  field: string;
}

interface CheckedText {
  /** Only meaningful when `errors` is empty. */
  schedules: CompiledSchedule[];
  errors: ConfigError[];
  /** Every string `name` the file defines (even when the file is refused), in order. */
  names: NameDefinition[];
  /** Deprecated input (only meaningful when `errors` is empty). */
  warnings: ConfigError[];
  /** The calendars the file defines and the calendar names its schedules use (resolved across files). */
  calendars: FileCalendars;
}


/** The options every parse of a schedule file uses (the first one and a re-parse for positions alike). */
const YAML_OPTIONS = PRECHECK_YAML_OPTIONS;

async function checkText(text: string, file: string, baseDir: string, memo: Map<string, Promise<unknown>>): Promise<CheckedText> {
  const lineCounter = new LineCounter();
  // The positioned document takes ~25 times the file's size (2.7 KB per schedule): it is read for the data and
  // the positions every schedule needs (its entry, its name), then let go before validation and compile, so that
  // a large file's document is not alive beside everything built from it. Other positions are only needed for
  // errors: the text is then parsed again (deterministic: the same nodes at the same offsets).
  const at = (offset: number): { line: number; col: number } => lineCounter.linePos(offset);
  let doc: Document | undefined;
  try {
    doc = parseDocument(text, { ...YAML_OPTIONS, lineCounter });
  } catch (err) {
    // The yaml library's composer is recursive: a document nested some thousand levels deep overflows it before
    // the depth check below can run. Said in words that tell what is wrong and how to fix it.
    if (!isStackOverflow(err)) throw err;
    const e = new ConfigError({ code: 'YAML_SYNTAX', file, line: 1, col: 1, field: '', reason: PARSER_TOO_DEEP_REASON, hint: TOO_DEEP_HINT, cause: err });
    return { schedules: [], errors: [e], names: [], calendars: noFileCalendars(file), warnings: [] };
  }
  if (doc.errors.length > 0) {
    return { schedules: [], errors: yamlErrors(doc.errors, file, text, at, doc), names: [], calendars: noFileCalendars(file), warnings: [] };
  }
  // Before the recursive walks of the document (__proto__ keys, toJS), at the node where the limit is passed.
  const deep = firstTooDeep<unknown>(doc.contents, FILE_DEPTH, yamlChildren);
  if (deep !== undefined) {
    const e = tooDeepError(file, deep.path, at((deep.node as Node).range?.[0] ?? 0));
    return { schedules: [], errors: [e], names: [], calendars: noFileCalendars(file), warnings: [] };
  }
  let located: Locator | undefined = new Locator(doc, at);
  const locator = (): Locator => (located ??= new Locator(parseDocument(text, YAML_OPTIONS), at));
  const protoErrors = protoKeyErrors(doc, file, at);

  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) {
    const e = problemError(file, locator(), {
      code: 'NO_SCHEDULES',
      path: [],
      reason: 'the file defines no schedules',
      hint: 'start the file with "schedules:" and list at least one schedule (name, cron, job)',
    });
    return { schedules: [], errors: [e], names: [], calendars: noFileCalendars(file), warnings: [] };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: maxAliasCountOf(doc) });
  } catch (err) {
    // An alias can nest an anchor's value deeper than the document shows (the check above does not follow aliases).
    const problem = isStackOverflow(err)
      ? { reason: PARSER_TOO_DEEP_REASON, hint: TOO_DEEP_HINT }
      : isAliasLimitError(err)
        ? aliasLimitProblem(maxAliasCountOf(doc))
        : { reason: (err as Error).message };
    const e = new ConfigError({ code: 'YAML_SYNTAX', file, line: 1, col: 1, field: '', ...problem, cause: err });
    return { schedules: [], errors: [e], names: [], calendars: noFileCalendars(file), warnings: [] };
  }

  // The positions every schedule needs, read now; then the document goes.
  const items = listOf(data);
  const names: NameDefinition[] = [];
  const entryAt: { line: number; col: number }[] = [];
  for (const [i, item] of items.entries()) {
    entryAt.push(located.position(['schedules', i], false));
    const name = (item as { name?: unknown } | null)?.name;
    if (typeof name !== 'string') continue;
    const path: Path = ['schedules', i, 'name'];
    names.push({ name, file, ...located.position(path, false), field: fieldPath(path) });
  }
  doc = undefined;
  located = undefined;
  return checkData(data, { file, baseDir, memo, positions: locator, entryAt, names, protoErrors });
}

/** What the object step needs besides the data: where things are, and what the text step found. */
interface DataContext {
  file: string;
  baseDir: string;
  memo: Map<string, Promise<unknown>>;
  /** Positions for errors (called only when there is one to place). */
  positions: () => Positions;
  /** Position of each entry of the `schedules` list (a compiled schedule's `source`). */
  entryAt: readonly { line: number; col: number }[];
  names: NameDefinition[];
  /** The refusals of `__proto__` keys, found by the text step (a strict map's "unknown key" for them is left out). */
  protoErrors: ConfigError[];
  /** The caller walked the data for values JSON cannot carry already (stored definitions): not walked again. */
  jsonValuesChecked?: boolean;
}

/**
 * The object step, shared by files ({@link checkText}) and plain data ({@link checkScheduleData}): one zod pass
 * (shape, defaults, cross-field checks), each job kind's compile, the file's calendars, then the compiled
 * schedules with their definition hashes, or every problem found.
 */
async function checkData(data: unknown, ctx: DataContext): Promise<CheckedText> {
  const { file, baseDir, memo, entryAt, names, protoErrors } = ctx;
  const toError = (p: Problem): ConfigError => problemError(file, ctx.positions(), p);
  // The one nesting limit, before zod, compile and canonicalJson (all recursive) see the data; a file's document was
  // checked already (at the node's position), this catches what aliases nest deeper.
  const deep = tooDeepPath(data, FILE_DEPTH);
  if (deep !== undefined) return { schedules: [], errors: [tooDeepError(file, deep, { line: 1, col: 1 })], names, calendars: noFileCalendars(file), warnings: [] };
  const items = listOf(data);
  const parsed = scheduleFileSchema.safeParse(data);
  const problems: Problem[] = parsed.success ? [] : parsed.error.issues.flatMap((i) => issueProblems(i, data, ctx.positions(), file));

  // Values JSON cannot carry, which would reach a job changed (1e400 as null, a !!set as {}): refused, as the store
  // refuses them (store/definition.ts nonJsonValues), here with the file's words.
  // Where the schema already refused the value (name: 1e400 is not text), its own words say more.
  const refused = new Set(problems.map((p) => fieldPath(p.path)));
  if (!ctx.jsonValuesChecked) {
    for (const [i, item] of items.entries()) {
      for (const p of nonJsonValues(item)) {
        const path: Path = ['schedules', i, ...fieldSegments(item, p.field)];
        if (!refused.has(fieldPath(path))) problems.push({ code: 'NOT_JSON', path, reason: p.reason, hint: fileNonJsonHint(p.reason) });
      }
    }
  }

  // Each job kind's load-time compile, for every job block that is valid on its own (compile.ts).
  const compiledJobs = await compileJobs(items, parsed.success ? parsed.data.schedules : undefined, problems, baseDir, memo);

  const fileCalendars = await readFileCalendars(data, file, baseDir, (path) => ctx.positions().position(path, false));
  problems.push(...fileCalendars.problems);

  // A strict map also calls a __proto__ key unknown: the key's own error says more.
  const schemaErrors = problems.filter((p) => protoErrors.length === 0 || p.path[p.path.length - 1] !== '__proto__').map(toError);
  const errors = [...schemaErrors, ...protoErrors].sort(byPosition);
  if (errors.length > 0 || !parsed.success) return { schedules: [], errors, names, calendars: fileCalendars.calendars, warnings: [] };

  const schedules = parsed.data.schedules.map((s, i) => compiled(s, compiledJobs.get(i) ?? s.job, { file, ...entryAt[i]! }));
  const warnings = items.flatMap((item, i) => {
    if (!cleanupNotifyAlias((item as { job?: unknown } | null)?.job)) return [];
    return [
      toError({
        code: 'DEPRECATED',
        path: ['schedules', i, 'job', 'notify'],
        reason: 'a cleanup job\'s notify is deprecated: it is read as the schedule-level notify (on: failure → [failed]; always, changes → [failed, succeeded]; retries are the outbox\'s)',
        hint: 'move the block beside job: as notify: (see the README, "Notifications")',
      }),
    ];
  });
  return { schedules, errors: [], names, warnings, calendars: fileCalendars.calendars };
}

/** What to write instead of a value JSON cannot carry, in a schedule file's terms (`reason`: nonJsonValues's). */
function fileNonJsonHint(reason: string): string {
  if (/^is (-?Infinity|NaN)\b/.test(reason)) return 'use a finite number, or null (JavaScript reads a number this large as Infinity)';
  return 'write plain data: a number, text, a list or a map (YAML tags such as !!set, !!omap, !!pairs, !!binary and !!timestamp make values that JSON cannot store; quote a time as text)';
}

/** A problem as a ConfigError at the position of its path. */
function problemError(file: string, positions: Positions, p: Problem): ConfigError {
  const pos = positions.position(p.path, p.atKey ?? false);
  return new ConfigError({
    code: p.code,
    file,
    line: pos.line,
    col: pos.col,
    // Keys as the file writes them (a big integer key by its digits, not by the number JavaScript rounds it to).
    field: positions.fieldName(p.path),
    reason: p.reason,
    ...(p.hint ? { hint: p.hint } : {}),
    ...(p.cause === undefined ? {} : { cause: p.cause }),
  });
}

/** A group's limits in words, e.g. "2 at once, 10 per 1000 ms" (also the key two files' limits are compared by). */
function describeGroupLimits(g: GroupLimits): string {
  const parts = [g.maxConcurrent !== null ? `${g.maxConcurrent} at once` : 'no limit at once', g.rateLimit ? `${g.rateLimit.max} per ${g.rateLimit.perMs} ms` : 'no rate limit'];
  return parts.join(', ');
}
