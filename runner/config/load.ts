/**
 * Loading schedule files: YAML → one zod pass (shape, defaults, cross-field checks) → each job kind's load-time
 * `compile` → compiled schedules. A file with any error is refused whole, with every error it has, each located
 * at `file:line:col` of the offending YAML node; in a directory the other files still load.
 */
import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  LineCounter,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  parseDocument,
  visit,
  type Document,
  type Node,
  type Pair,
  type YAMLError,
  type YAMLMap,
} from 'yaml';
import type { z } from 'zod';
import { findJobKind } from '../../jobs/registry.js';
import { JobCompileError } from '../../jobs/types.js';
import type { DueTimes } from '../schedule/cron.js';
import type { HeartbeatConfig, NotifyConfig, SigningConfig } from '../notify/config.js';
import type { ScheduleWindows } from '../engine/windows.js';
import { readBounded } from './read-bounded.js';
import { ConfigError, fieldPath, type ConfigErrorCode } from './errors.js';
import { cleanupNotifyAlias } from '../notify/config.js';
import { attachWindows, noFileCalendars, readFileCalendars, resolveFlockCalendars, type FileCalendars } from './calendars.js';
import type { BlackoutEntry, ScheduleCalendarRef } from './calendars-schema.js';
import type { GroupLimits, RateLimit } from './groups-schema.js';
import {
  jobSchema,
  scheduleFileSchema,
  type CatchUpPolicy,
  type ConcurrencyPolicy,
  type OnResumePolicy,
  type JobParams,
  type ValidatedSchedule,
} from './schema.js';

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

const SCHEDULE_FILE = /^[^.].*\.ya?ml$/;

/**
 * Largest schedule file read (16 MiB, ~150,000 schedules). Parsing takes several times a file's size in memory
 * (a 200 MB file took 1 GB; 600 MB failed inside V8), so a larger file is refused before it is read: split it into
 * several files of a directory, which are parsed one at a time.
 */
export const MAX_SCHEDULE_FILE_BYTES = 16 * 1024 * 1024;
const DURATION_KEYS = new Set(['jitter', 'startingDeadline', 'timeout', 'overdueGrace']);

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
 */
export async function loadSchedules(path: string): Promise<LoadResult> {
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
  for (const file of files) {
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
  // Calendar names resolve across all files; a file that uses a refused file's calendar is refused too.
  const flock = resolveFlockCalendars(
    checkedFiles.map((e) => ({ file: e.file, ok: e.errors.length === 0 && e.checked !== null, calendars: e.checked?.calendars ?? noFileCalendars(e.file) })),
  );
  for (const e of flock.errors) checkedFiles.find((f) => f.file === e.file)?.errors.push(e);
  for (const { file, checked, errors } of checkedFiles) {
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
  const checked = await checkText(text, fileName, opts.baseDir ?? dirname(resolve(fileName)), new Map());
  const flock = resolveFlockCalendars([{ file: fileName, ok: checked.errors.length === 0, calendars: checked.calendars }]);
  const errors = [...checked.errors, ...flock.errors].sort(byPosition);
  return errors.length === 0 ? { schedules: attachWindows(checked.schedules, flock), errors, warnings: checked.warnings } : { schedules: [], errors };
}

async function scheduleFilesIn(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => SCHEDULE_FILE.test(n)).sort(compareCodeUnits);
  const files: string[] = [];
  for (const n of names) {
    const file = join(dir, n);
    if ((await stat(file).catch(() => null))?.isFile()) files.push(file);
  }
  return files;
}

function tooLarge(file: string, sizeBytes: number): ConfigError {
  const mib = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MiB`;
  return new ConfigError({
    code: 'FILE_TOO_LARGE',
    file,
    line: 0,
    col: 0,
    field: '',
    reason: `is ${mib(sizeBytes)}; a schedule file may be at most ${mib(MAX_SCHEDULE_FILE_BYTES)}`,
    hint: 'split the schedules into several *.yaml files in one directory and pass the directory',
  });
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function ioError(file: string, reason: string, hint: string | undefined, cause: unknown): ConfigError {
  return new ConfigError({
    code: 'CONFIG_IO',
    file,
    line: 0,
    col: 0,
    field: '',
    reason,
    ...(hint ? { hint } : {}),
    ...(cause === undefined ? {} : { cause }),
  });
}

function ioFailure(path: string, reason: string, hint?: string, cause?: unknown): LoadResult {
  return { schedules: [], errors: [ioError(path, reason, hint, cause)], files: [], warnings: [] };
}

function byPosition(a: ConfigError, b: ConfigError): number {
  return compareCodeUnits(a.file, b.file) || a.line - b.line || a.col - b.col;
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

type Path = (string | number)[];

/** One problem on its way to becoming a ConfigError. */
interface Problem {
  code: ConfigErrorCode;
  path: Path;
  reason: string;
  hint?: string;
  cause?: unknown;
  /** For unknown keys: point at the key node itself, not at its value. */
  atKey?: boolean;
}

async function checkText(text: string, file: string, baseDir: string, memo: Map<string, Promise<unknown>>): Promise<CheckedText> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, merge: true });
  const at = (offset: number): { line: number; col: number } => lineCounter.linePos(offset);
  if (doc.errors.length > 0) {
    return { schedules: [], errors: yamlErrors(doc.errors, file, text, at), names: [], calendars: noFileCalendars(file), warnings: [] };
  }
  const locator = new Locator(doc, at);
  const protoErrors = protoKeyErrors(doc, file, at);
  const toError = (p: Problem): ConfigError => {
    const pos = locator.position(p.path, p.atKey ?? false);
    return new ConfigError({
      code: p.code,
      file,
      line: pos.line,
      col: pos.col,
      field: fieldPath(p.path),
      reason: p.reason,
      ...(p.hint ? { hint: p.hint } : {}),
      ...(p.cause === undefined ? {} : { cause: p.cause }),
    });
  };

  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) {
    const e = toError({
      code: 'NO_SCHEDULES',
      path: [],
      reason: 'the file defines no schedules',
      hint: 'start the file with "schedules:" and list at least one schedule (name, cron, job)',
    });
    return { schedules: [], errors: [e], names: [], calendars: noFileCalendars(file), warnings: [] };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    const e = new ConfigError({ code: 'YAML_SYNTAX', file, line: 1, col: 1, field: '', reason: (err as Error).message, cause: err });
    return { schedules: [], errors: [e], names: [], calendars: noFileCalendars(file), warnings: [] };
  }

  const parsed = scheduleFileSchema.safeParse(data);
  const problems: Problem[] = parsed.success ? [] : parsed.error.issues.flatMap((i) => issueProblems(i, data, locator, file));

  // Each job kind's load-time compile, for every job block that is valid on its own (even when other parts of
  // the file are not, so that one pass reports everything).
  const rawList = (data as { schedules?: unknown } | null)?.schedules;
  const items: unknown[] = Array.isArray(rawList) ? rawList : [];
  // They run side by side (a kind bounds its own parallelism, e.g. module checks) and share the load's memo.
  const compiledJobs = new Map<number, CompiledJob>();
  const compiles: Promise<void>[] = [];
  const jobProblems = problems.filter((p) => p.path[0] === 'schedules' && p.path[2] === 'job');
  for (const [i, item] of items.entries()) {
    const jobPath: Path = ['schedules', i, 'job'];
    if (jobProblems.some((p) => startsWith(p.path, jobPath))) continue;
    const params = parsed.success ? parsed.data.schedules[i]?.job : jobParamsOf(item);
    if (!params) continue;
    const kind = findJobKind(params.kind);
    if (!kind?.compile) {
      compiledJobs.set(i, params);
      continue;
    }
    compiles.push(
      (async () => {
        try {
          compiledJobs.set(i, (await kind.compile!(params, { baseDir, memo })) as CompiledJob);
        } catch (err) {
          if (err instanceof JobCompileError) {
            problems.push({ code: 'JOB_INVALID', path: [...jobPath, ...err.path], reason: err.message, cause: err });
          } else {
            problems.push({ code: 'JOB_INVALID', path: jobPath, reason: `cannot be loaded: ${(err as Error).message}`, cause: err });
          }
        }
      })(),
    );
  }
  await Promise.all(compiles);

  const fileCalendars = await readFileCalendars(data, file, baseDir, (path) => locator.position(path, false));
  problems.push(...fileCalendars.problems);

  const names: NameDefinition[] = [];
  for (const [i, item] of items.entries()) {
    const name = (item as { name?: unknown } | null)?.name;
    if (typeof name !== 'string') continue;
    const path: Path = ['schedules', i, 'name'];
    names.push({ name, file, ...locator.position(path, false), field: fieldPath(path) });
  }

  // A strict map also calls a __proto__ key unknown: the key's own error says more.
  const schemaErrors = problems.filter((p) => protoErrors.length === 0 || p.path[p.path.length - 1] !== '__proto__').map(toError);
  const errors = [...schemaErrors, ...protoErrors].sort(byPosition);
  if (errors.length > 0 || !parsed.success) return { schedules: [], errors, names, calendars: fileCalendars.calendars, warnings: [] };

  const schedules = parsed.data.schedules.map((s, i) => compiled(s, compiledJobs.get(i) ?? s.job, {
    file,
    ...locator.position(['schedules', i], false),
  }));
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

/**
 * Every `__proto__` key of the document. Parsed into a JavaScript object, such a key does not become a field: the
 * schema would drop it (and what it holds) silently, so it is refused where it is written, wherever it is.
 */
function protoKeyErrors(doc: Document, file: string, at: (offset: number) => { line: number; col: number }): ConfigError[] {
  const out: ConfigError[] = [];
  visit(doc, {
    Pair(_key, pair, ancestors) {
      if (!isScalar(pair.key) || pair.key.value !== '__proto__') return;
      const pos = at(pair.key.range?.[0] ?? 0);
      out.push(
        new ConfigError({
          code: 'SCHEMA_INVALID',
          file,
          ...pos,
          field: fieldPath([...pathOf(ancestors), '__proto__']),
          reason: 'the key "__proto__" cannot be used: JavaScript gives it a special meaning, and what it holds would be dropped',
          hint: 'remove it (no field, header or parameter can be named __proto__)',
        }),
      );
    },
  });
  return out;
}

/** The field path (keys and list indexes) that a chain of YAML ancestors (document first) leads to. */
function pathOf(ancestors: readonly unknown[]): Path {
  const path: Path = [];
  ancestors.forEach((node, i) => {
    const child = ancestors[i + 1];
    if (isPair(node) && isScalar(node.key)) path.push(String(node.key.value));
    else if (isSeq(node) && child !== undefined) path.push(node.items.indexOf(child as never));
  });
  return path;
}

function jobParamsOf(item: unknown): JobParams | undefined {
  const job = (item as { job?: unknown } | null)?.job;
  if (job === undefined) return undefined;
  const r = jobSchema.safeParse(job);
  return r.success ? r.data : undefined;
}

function compiled(s: ValidatedSchedule, job: CompiledJob, source: ScheduleSource): CompiledSchedule {
  const { due: _due, ...definition } = s; // calendar and blackouts as written; what they name: calendars.ts
  const definitionHash = createHash('sha256').update(canonicalJson(definition)).digest('hex');
  return { ...definition, job, due: s.due, source, definitionHash };
}

/** JSON with object keys sorted at every level and `undefined` members left out. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort(compareCodeUnits)) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

function startsWith(path: Path, prefix: Path): boolean {
  return prefix.every((seg, i) => path[i] === seg);
}

/** YAML syntax errors, one per line (one mistake often yields several), with a hint for unquoted cron text. */
function yamlErrors(
  errs: YAMLError[],
  file: string,
  text: string,
  at: (offset: number) => { line: number; col: number },
): ConfigError[] {
  const seen = new Set<number>();
  const out: ConfigError[] = [];
  for (const err of errs) {
    const { line, col } = at(err.pos[0]);
    if (seen.has(line)) continue;
    seen.add(line);
    const lineText = text.split(/\r?\n/)[line - 1] ?? '';
    const unquoted = /^\s*(-\s+)?cron:\s*[*@]/.test(lineText);
    out.push(
      new ConfigError({
        code: 'YAML_SYNTAX',
        file,
        line,
        col,
        field: '',
        reason: `YAML: ${err.message}`,
        ...(unquoted ? { hint: 'quote cron expressions: * and @ cannot start a plain YAML value, e.g. cron: "*/5 * * * *"' } : {}),
        cause: err,
      }),
    );
  }
  return out;
}

/** Finds the YAML node for a zod path and reports 1-based positions. */
class Locator {
  constructor(
    private readonly doc: Document,
    private readonly at: (offset: number) => { line: number; col: number },
  ) {}

  /**
   * Position of the value at `path`; of its key when the value is empty or `atKey`; of the nearest existing
   * parent map or list when the key is missing. 1:1 for an empty document.
   */
  position(path: readonly (string | number)[], atKey: boolean): { line: number; col: number } {
    const found = this.find(path);
    const node = atKey || found.valueEmpty ? (found.key ?? found.node) : found.node;
    const offset = node?.range?.[0];
    return offset === undefined ? { line: 1, col: 1 } : this.at(offset);
  }

  /** True when the path leads to an existing key (its value may be empty). */
  exists(path: readonly (string | number)[]): boolean {
    return this.find(path).complete;
  }

  private find(path: readonly (string | number)[]): {
    node: Node | undefined;
    key: Node | undefined;
    complete: boolean;
    valueEmpty: boolean;
  } {
    let node = this.resolve(this.doc.contents ?? undefined);
    let key: Node | undefined;
    for (const seg of path) {
      if (isMap(node)) {
        const pair = this.pairIn(node, String(seg), 0);
        if (!pair) return { node, key: undefined, complete: false, valueEmpty: false };
        key = isScalar(pair.key) ? pair.key : undefined;
        const value = this.resolve((pair.value ?? undefined) as Node | undefined);
        if (value === undefined || (isScalar(value) && value.value === null && !value.source)) {
          const complete = seg === path[path.length - 1];
          return { node: key ?? node, key, complete, valueEmpty: true };
        }
        node = value;
      } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
        key = undefined;
        node = this.resolve(node.items[seg] as Node | undefined);
      } else {
        return { node, key: undefined, complete: false, valueEmpty: false };
      }
    }
    return { node, key, complete: true, valueEmpty: false };
  }

  /** The pair for `key` in `map`, looking into `<<` merge sources when the map does not set it itself. */
  private pairIn(map: YAMLMap, key: string, depth: number): Pair | undefined {
    const own = map.items.find((p) => isScalar(p.key) && typeof p.key.value !== 'symbol' && String(p.key.value) === key);
    if (own || depth > 10) return own;
    for (const p of map.items) {
      if (!isScalar(p.key) || typeof p.key.value !== 'symbol') continue; // the merge key << is a symbol
      const source = this.resolve((p.value ?? undefined) as Node | undefined);
      const sources = isSeq(source) ? source.items.map((n) => this.resolve(n as Node)) : [source];
      for (const m of sources) {
        const found = isMap(m) ? this.pairIn(m, key, depth + 1) : undefined;
        if (found) return found;
      }
    }
    return undefined;
  }

  private resolve(node: Node | undefined): Node | undefined {
    let n: unknown = node;
    for (let hops = 0; isAlias(n) && hops < 100; hops++) n = n.resolve(this.doc);
    return n as Node | undefined;
  }
}

function issueProblems(issue: z.core.$ZodIssue, data: unknown, locator: Locator, file: string): Problem[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const params = (issue as { params?: Record<string, unknown> }).params;
  const last = path[path.length - 1];

  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => {
      const allowed = allowedKeys(path, data);
      return {
        code: 'SCHEMA_INVALID' as const,
        path: [...path, k],
        reason: `unknown key "${k}"`,
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
    if (typeof last === 'string' && DURATION_KEYS.has(last) && typeof given === 'number') {
      return [
        {
          code: 'SCHEMA_INVALID',
          path,
          reason: `must be a duration with a unit, not the bare number ${given}`,
          hint: `write e.g. ${given}s or ${given}ms (units ms, s, m, h, d)`,
        },
      ];
    }
    const hint =
      issue.expected === 'boolean' && typeof given === 'string' && /^(yes|no|on|off|y|n)$/i.test(given)
        ? 'YAML 1.2 reads yes/no/on/off as text: write true or false'
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
function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object' && v !== null) return 'a map';
  if (typeof v === 'boolean') return String(v);
  return typeof v === 'number' ? 'a number' : typeof v === 'string' ? 'text' : `a ${typeof v}`;
}

function valueAt(data: unknown, path: readonly (string | number)[]): unknown {
  let v = data;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

/** Keys the schema allows in the map at `path` (best effort; [] when unknown). */
function allowedKeys(path: readonly (string | number)[], data: unknown): string[] {
  let schema: z.core.$ZodType | undefined = scheduleFileSchema;
  for (let i = 0; i <= path.length && schema; i++) {
    schema = unwrap(schema, valueAt(data, path.slice(0, i)));
    if (i === path.length) break;
    const seg = path[i];
    const def = schema._zod.def as { type: string; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType };
    if (def.type === 'object' && typeof seg === 'string') schema = def.shape?.[seg];
    else if (def.type === 'array' && typeof seg === 'number') schema = def.element;
    else schema = undefined;
  }
  const def = schema?._zod.def as { type: string; shape?: Record<string, unknown> } | undefined;
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
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

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
