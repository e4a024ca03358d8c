/**
 * A Schedule object through the schedule-file loader: the same zod pass, cross-field checks and job-kind
 * compile as a file's schedule, so a Schedule means what the same schedule in a file means. Errors are
 * reported with Kubernetes field paths (`spec.jitter`, `spec.job.url`, `metadata.name`).
 */
import { stringify } from 'yaml';
import { findJobKind } from '../../jobs/registry.js';
import { parseScheduleText, type CompiledSchedule } from '../config/load.js';
import { API_VERSION, KIND, sourceName, type ScheduleObject, type ScheduleRef } from './resource.js';

/** A Schedule as the loader saw it: compiled when valid, else the loader's messages. */
export interface LoadedSchedule {
  ref: ScheduleRef;
  /** `metadata.generation` (0 when the server sent none). */
  generation: number;
  /** The flock-wide schedule name: `metadata.name`. */
  name: string;
  /** The compiled schedule (its `source.file` is `Schedule <namespace>/<name>`); undefined when refused. */
  schedule?: CompiledSchedule;
  /** Why the loader refused it, one message per problem (`spec.<field>: reason (hint)`); empty when valid. */
  errors: string[];
}

/** Options of {@link loadScheduleObject}. */
export interface LoadScheduleOptions {
  /** Directory relative paths in the spec (a module's `path`, a `kubeconfig`) resolve against; default cwd. */
  baseDir?: string;
}

/**
 * Validates and compiles one Schedule object with the schedule-file loader. Never throws for bad input: the
 * loader's refusals are returned in `errors`. Before validation, {@link withScheduleDefaults} fills in the job
 * fields a Schedule implies.
 */
export async function loadScheduleObject(obj: ScheduleObject, options: LoadScheduleOptions = {}): Promise<LoadedSchedule> {
  const ref: ScheduleRef = { namespace: obj.metadata.namespace, name: obj.metadata.name, uid: obj.metadata.uid };
  const base = { ref, generation: obj.metadata.generation ?? 0, name: obj.metadata.name };
  const spec = obj.spec !== null && typeof obj.spec === 'object' ? obj.spec : {};
  const job = withScheduleDefaults(spec.job, ref);
  const text = stringify({ schedules: [{ name: obj.metadata.name, ...spec, ...(job === undefined ? {} : { job }) }] });
  const res = await parseScheduleText(text, sourceName(ref), { baseDir: options.baseDir ?? process.cwd() });
  if (res.errors.length > 0) {
    return {
      ...base,
      errors: res.errors.map((e) => `${kubeField(e.field)}${e.reason}${e.hint ? ` (${e.hint})` : ''}`),
    };
  }
  const schedule = res.schedules[0]!;
  // The loader's position is of the generated text, not of anything the user wrote.
  return { ...base, schedule: { ...schedule, source: { file: sourceName(ref), line: 0, col: 0 } }, errors: [] };
}

/** `schedules[0].job.url` → `spec.job.url: `; `schedules[0].name` → `metadata.name: `. */
function kubeField(field: string): string {
  const rest = field.replace(/^schedules\[0\]\.?/, '');
  if (rest === '') return field === '' ? '' : 'spec: ';
  return rest === 'name' ? 'metadata.name: ' : `spec.${rest}: `;
}

/**
 * What a Schedule implies for its job, for job kinds that take these fields (a Kubernetes CronJob's semantics:
 * its Jobs live in its namespace and are owned by it):
 * - `namespace`, when the kind has one and the spec sets none: the Schedule's namespace;
 * - `owner`, when the kind has one, the spec sets none and the job runs in the Schedule's namespace: the
 *   Schedule (apiVersion, kind, name, uid), so what the job creates is deleted with it.
 * Returns `job` unchanged for other kinds and for anything that is not a job block.
 */
export function withScheduleDefaults(job: unknown, ref: ScheduleRef): unknown {
  if (job === null || typeof job !== 'object' || Array.isArray(job)) return job;
  const params = job as Record<string, unknown>;
  const kind = typeof params.kind === 'string' ? findJobKind(params.kind) : undefined;
  const fields = kind ? schemaFields(kind.schema) : [];
  return addDefaults(params, fields, ref);
}

/** {@link withScheduleDefaults} for a kind whose fields are `fields` (pure). */
export function addDefaults(params: Record<string, unknown>, fields: readonly string[], ref: ScheduleRef): Record<string, unknown> {
  const out = { ...params };
  if (fields.includes('namespace') && out.namespace === undefined) out.namespace = ref.namespace;
  if (fields.includes('owner') && out.owner === undefined && (out.namespace ?? ref.namespace) === ref.namespace) {
    out.owner = { apiVersion: API_VERSION, kind: KIND, name: ref.name, uid: ref.uid };
  }
  return out;
}

/** The field names of an object schema (zod 4), or [] when it is not one. */
function schemaFields(schema: unknown): string[] {
  const shape = (schema as { _zod?: { def?: { shape?: Record<string, unknown> } } })._zod?.def?.shape;
  return shape ? Object.keys(shape) : [];
}
