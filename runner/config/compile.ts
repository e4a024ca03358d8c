/**
 * Compile and hash: each job kind's load-time `compile` over the job blocks of a file, and the compiled schedule
 * with its definition hash (sha256 of the canonical JSON of the definition as written).
 */
import { hash } from 'node:crypto';
import { findJobKind, jobKinds } from '../../jobs/registry.js';
import { JobCompileError } from '../../jobs/types.js';
import { canonicalJson } from '../text/canonical-json.js';
import type { CompiledJob, CompiledSchedule, ScheduleSource } from './load.js';
import type { Problem } from './messages.js';
import { catchUpSchema, concurrencyPolicySchema, jobSchema, onResumeSchema, type JobParams, type ValidatedSchedule } from './schema.js';
import { startsWith, type Path } from './yaml-position.js';

/**
 * Runs each job kind's load-time compile for every job block that is valid on its own (even when other parts of
 * the file are not, so that one pass reports everything); kinds without `compile` keep their validated parameters.
 * They run side by side (a kind bounds its own parallelism, e.g. module checks) and share the load's `memo`.
 * A refused compile becomes a `JOB_INVALID` problem pushed onto `problems` (never thrown).
 * @param items the raw `schedules` list; `validated` the schema's output when the whole file parsed.
 * @returns the compiled job of each list index that compiled.
 */
export async function compileJobs(
  items: readonly unknown[],
  validated: readonly ValidatedSchedule[] | undefined,
  problems: Problem[],
  baseDir: string,
  memo: Map<string, Promise<unknown>>,
): Promise<Map<number, CompiledJob>> {
  const compiledJobs = new Map<number, CompiledJob>();
  const compiles: Promise<void>[] = [];
  const jobProblems = problems.filter((p) => p.path[0] === 'schedules' && p.path[2] === 'job');
  for (const [i, item] of items.entries()) {
    const jobPath: Path = ['schedules', i, 'job'];
    if (jobProblems.some((p) => startsWith(p.path, jobPath))) continue;
    const params = validated ? validated[i]?.job : jobParamsOf(item);
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
  return compiledJobs;
}

function jobParamsOf(item: unknown): JobParams | undefined {
  const job = (item as { job?: unknown } | null)?.job;
  if (job === undefined) return undefined;
  const r = jobSchema.safeParse(job);
  return r.success ? r.data : undefined;
}

/** A schedule ready to run: its definition as validated, the compiled job, and the definition hash (hex sha256). */
export function compiled(s: ValidatedSchedule, job: CompiledJob, source: ScheduleSource): CompiledSchedule {
  const { due: _due, ...definition } = s; // calendar and blackouts as written; what they name: calendars.ts
  const definitionHash = hash('sha256', canonicalJson(definition), 'hex');
  return shareStrings({ ...definition, job, due: s.due, source, definitionHash });
}

/** One string per value of the enum fields (the schema's own literals). */
const ENUM_STRINGS = new Map<string, string>([...catchUpSchema.options, ...concurrencyPolicySchema.options, ...onResumeSchema.options].map((v) => [v, v]));

/**
 * Makes `s`'s cron, zone and policy strings the shared ones: the compiled cron's expression and zone (one per
 * distinct expression and zone, ../schedule/cron.ts) where they are equal, the schema's literals for the policies.
 * Parsed YAML, structured-clone messages from the loader processes and JSON give every schedule copies of its
 * own (~110 bytes a schedule: ~11 MB at 100,000 schedules). Changes `s` in place (no field is added or removed,
 * the values stay equal) and returns it.
 */
export function shareStrings<S extends Pick<CompiledSchedule, 'cron' | 'timeZone' | 'catchUp' | 'concurrencyPolicy' | 'onResume' | 'due'>>(s: S): S {
  if (s.cron === s.due.expression) s.cron = s.due.expression;
  if (s.timeZone === s.due.timeZone) s.timeZone = s.due.timeZone;
  const catchUp = ENUM_STRINGS.get(s.catchUp);
  if (catchUp !== undefined) s.catchUp = catchUp as S['catchUp'];
  const concurrencyPolicy = ENUM_STRINGS.get(s.concurrencyPolicy);
  if (concurrencyPolicy !== undefined) s.concurrencyPolicy = concurrencyPolicy as S['concurrencyPolicy'];
  const onResume = ENUM_STRINGS.get(s.onResume);
  if (onResume !== undefined) s.onResume = onResume as S['onResume'];
  return s;
}


/** `kind: <name>` as a file may write it (block or flow, quoted or not): enough to tell that a kind may be used. */
const kindWritten = (kind: string): RegExp => new RegExp(`\\bkind["']?\\s*:\\s*["']?${kind}\\b`);
const KIND_WRITTEN = new Map<string, RegExp>();

/**
 * Calls the `prepare` of each job kind that `text` (a schedule file about to be parsed) may use, so that their
 * set-up runs beside the parse (`JobKind.prepare`, jobs/types.ts). A guess from the text: a mention that is not a job
 * costs the set-up once; a kind written otherwise (an alias) only loses the head start.
 */
export function prepareJobKinds(text: string): void {
  for (const k of jobKinds) {
    if (!k.prepare) continue;
    let re = KIND_WRITTEN.get(k.kind);
    if (!re) KIND_WRITTEN.set(k.kind, (re = kindWritten(k.kind)));
    if (re.test(text)) k.prepare();
  }
}
