/**
 * `cronflock convert`: Kubernetes CronJobs (batch/v1, batch/v1beta1) to Schedules that do the same with
 * `kind: job`, and a note for everything that has no equivalent. Pure (no I/O).
 *
 * Mapping (Kubernetes CronJob semantics → a Schedule's spec):
 * - `metadata.name`, `namespace`, `labels` and `annotations` are kept (except kubectl's
 *   last-applied-configuration and what the server sets: uid, resourceVersion, managedFields, …; owner
 *   references are dropped with a note). A name with dots (allowed for CronJobs, not for schedule names,
 *   which are DNS-1123 labels) gets `-` instead, with a note.
 * - `spec.schedule` → `cron`; a `CRON_TZ=<zone>` or `TZ=<zone>` prefix → `timeZone` (both a prefix and
 *   `spec.timeZone` is refused, as the API server refuses it); `spec.timeZone` → `timeZone`; `@midnight` →
 *   `@daily` (the same time); `@every <duration>` has no equivalent (it counts from when the controller
 *   started, not from the clock): refused.
 * - `startingDeadlineSeconds` → `startingDeadline` (seconds). CronJob counts it from the scheduled time,
 *   cronflock from the fire time; they are the same here (no jitter is set).
 * - `concurrencyPolicy` and `suspend` → the same fields (same meanings).
 * - `jobTemplate` → `job.jobTemplate` (`kind: job`; its `metadata` keeps labels and annotations),
 *   `successfulJobsHistoryLimit` and `failedJobsHistoryLimit` → the same fields of `job`.
 * - Not set, because cronflock's defaults are CronJob's behaviour: `catchUp: latest` (after downtime, the
 *   latest missed due time runs), `onResume: latest`, `concurrencyPolicy: Allow`, no jitter. Without a
 *   `timeZone`, a CronJob runs in the kube-controller-manager's zone (usually UTC) and a Schedule in UTC.
 */
import { formatDurationMs } from '../time/duration.js';
import { API_VERSION, KIND } from './resource.js';

/** A document to convert: where it comes from (for messages) and its parsed content. */
export interface SourceDocument {
  /** e.g. `cronjobs.yaml#2` or `<stdin>#1`. */
  source: string;
  object: unknown;
}

/** Something the user should know about one document. `error`: it was not converted. */
export interface ConvertNote {
  source: string;
  /** `CronJob <namespace>/<name>`, when the document is one. */
  subject?: string;
  level: 'warning' | 'error';
  message: string;
}

/** One converted CronJob. */
export interface ConvertedSchedule {
  source: string;
  /** `CronJob <namespace>/<name>`. */
  subject: string;
  /** The Schedule manifest. */
  schedule: { apiVersion: string; kind: string; metadata: Record<string, unknown>; spec: Record<string, unknown> };
  /** Warnings about this CronJob (also in `notes`). */
  warnings: string[];
}

/** What {@link convertCronJobs} returns. */
export interface ConvertResult {
  schedules: ConvertedSchedule[];
  notes: ConvertNote[];
}

const CRONJOB_API_VERSIONS = new Set(['batch/v1', 'batch/v1beta1', 'batch/v2alpha1']);
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const SPEC_FIELDS = new Set(['schedule', 'timeZone', 'startingDeadlineSeconds', 'concurrencyPolicy', 'suspend', 'jobTemplate', 'successfulJobsHistoryLimit', 'failedJobsHistoryLimit']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Converts every CronJob in `docs` (a `List` or `CronJobList` is looked into; other kinds are skipped with a
 * warning; empty documents are ignored). Never throws for bad input: what cannot be converted is an `error`
 * note and is left out.
 */
export function convertCronJobs(docs: readonly SourceDocument[]): ConvertResult {
  const out: ConvertResult = { schedules: [], notes: [] };
  for (const d of docs) {
    if (d.object === null || d.object === undefined) continue;
    if (!isObj(d.object)) {
      out.notes.push({ source: d.source, level: 'warning', message: 'not a Kubernetes object: skipped' });
      continue;
    }
    const kind = d.object.kind;
    if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(d.object.items)) {
      d.object.items.forEach((item, i) => convertOne({ source: `${d.source} items[${i}]`, object: item }, out));
    } else convertOne(d, out);
  }
  return out;
}

function convertOne(d: SourceDocument, out: ConvertResult): void {
  const o = d.object as Obj;
  if (o.kind !== 'CronJob' || !CRONJOB_API_VERSIONS.has(String(o.apiVersion))) {
    out.notes.push({ source: d.source, level: 'warning', message: `${String(o.apiVersion ?? '?')} ${String(o.kind ?? '?')} is not a CronJob: skipped` });
    return;
  }
  const meta = isObj(o.metadata) ? o.metadata : {};
  const spec = isObj(o.spec) ? o.spec : {};
  const subject = `CronJob ${typeof meta.namespace === 'string' ? `${meta.namespace}/` : ''}${String(meta.name ?? '?')}`;
  const warnings: string[] = [];
  const errors: string[] = [];

  // metadata
  let name = typeof meta.name === 'string' ? meta.name : '';
  if (name === '') errors.push('metadata.name is missing');
  else if (name.includes('.')) {
    const renamed = name.replace(/\./g, '-');
    warnings.push(`metadata.name "${name}" has dots, which a schedule name (a DNS-1123 label) cannot have: the Schedule is named "${renamed}"`);
    name = renamed;
  }
  // Built from scratch: what the server sets (uid, resourceVersion, managedFields, …) is left behind.
  const metadata: Obj = { name };
  if (typeof meta.namespace === 'string') metadata.namespace = meta.namespace;
  if (isObj(meta.labels) && Object.keys(meta.labels).length > 0) metadata.labels = meta.labels;
  if (isObj(meta.annotations)) {
    const annotations = Object.fromEntries(Object.entries(meta.annotations).filter(([k]) => k !== LAST_APPLIED));
    if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  }
  if (Array.isArray(meta.ownerReferences) && meta.ownerReferences.length > 0) {
    warnings.push('metadata.ownerReferences dropped: the Schedule is not owned by what owned the CronJob');
  }

  // schedule and time zone
  const s: Obj = {};
  let cron = typeof spec.schedule === 'string' ? spec.schedule.trim() : '';
  if (cron === '') errors.push('spec.schedule is missing');
  const prefix = /^(CRON_TZ|TZ)=(\S+)\s+(.*)$/.exec(cron);
  if (prefix) {
    if (typeof spec.timeZone === 'string') errors.push(`spec.schedule has a ${prefix[1]}= prefix and spec.timeZone is set too (the API server refuses both)`);
    s.cron = prefix[3]!.trim();
    s.timeZone = prefix[2];
    cron = String(s.cron);
  } else if (cron !== '') s.cron = cron;
  if (/^@every\s/i.test(cron)) {
    errors.push(`spec.schedule "${cron}" has no equivalent: @every counts from when the CronJob controller started, not from the clock; write the times out (e.g. "*/15 * * * *" for @every 15m)`);
  } else if (/^@midnight$/i.test(cron)) s.cron = '@daily';
  if (typeof spec.timeZone === 'string' && !prefix) s.timeZone = spec.timeZone;

  // policies
  if (typeof spec.startingDeadlineSeconds === 'number') {
    if (spec.startingDeadlineSeconds > 0) s.startingDeadline = formatDurationMs(spec.startingDeadlineSeconds * 1000);
    else errors.push(`spec.startingDeadlineSeconds ${spec.startingDeadlineSeconds}: a starting deadline must be longer than 0`);
  }
  if (spec.concurrencyPolicy !== undefined) s.concurrencyPolicy = spec.concurrencyPolicy;
  if (spec.suspend !== undefined) s.suspend = spec.suspend;

  // the job
  const template = isObj(spec.jobTemplate) ? spec.jobTemplate : undefined;
  if (!template) errors.push('spec.jobTemplate is missing');
  const job: Obj = { kind: 'job' };
  if (template) {
    const t: Obj = {};
    if (isObj(template.metadata)) {
      const tm: Obj = {};
      for (const k of ['labels', 'annotations']) if (isObj(template.metadata[k])) tm[k] = template.metadata[k];
      const dropped = Object.keys(template.metadata).filter((k) => k !== 'labels' && k !== 'annotations' && k !== 'creationTimestamp');
      if (dropped.length > 0) warnings.push(`spec.jobTemplate.metadata.${dropped.join(', ')} dropped: cronflock names each Job and puts it in the Schedule's namespace`);
      if (Object.keys(tm).length > 0) t.metadata = tm;
    }
    if (template.spec !== undefined) t.spec = withoutNullCreationTimestamps(template.spec);
    job.jobTemplate = t;
  }
  for (const k of ['successfulJobsHistoryLimit', 'failedJobsHistoryLimit']) if (spec[k] !== undefined) job[k] = spec[k];
  s.job = job;
  const unknown = Object.keys(spec).filter((k) => !SPEC_FIELDS.has(k));
  if (unknown.length > 0) warnings.push(`spec.${unknown.join(', spec.')} has no equivalent: dropped`);

  for (const w of warnings) out.notes.push({ source: d.source, subject, level: 'warning', message: w });
  if (errors.length > 0) {
    for (const e of errors) out.notes.push({ source: d.source, subject, level: 'error', message: `${e}; not converted` });
    return;
  }
  out.schedules.push({ source: d.source, subject, schedule: { apiVersion: API_VERSION, kind: KIND, metadata, spec: s }, warnings });
}

/** `kubectl get -o yaml` writes `creationTimestamp: null` into templates' metadata: noise, left out. */
function withoutNullCreationTimestamps(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNullCreationTimestamps);
  if (!isObj(v)) return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k, x]) => !(k === 'creationTimestamp' && x === null))
      .map(([k, x]) => [k, withoutNullCreationTimestamps(x)]),
  );
}
