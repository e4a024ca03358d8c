/**
 * The `Schedule` custom resource (group `cronflock.io`): its API coordinates and the shape of its objects.
 *
 * A Schedule's `spec` is exactly one schedule of a schedule file without `name` (the same zod schema, so one
 * definition has one meaning everywhere); its name is `metadata.name`. Its `status` is written by the
 * replicas (status.ts).
 *
 * Naming: the flock-wide schedule name of a Schedule is its `metadata.name`, unique across every source of
 * the flock (files and every watched namespace), exactly as a name must be unique across files. Why not
 * `<namespace>.<name>`: a schedule moved from a file into a Schedule keeps its name, so it keeps its occurrence
 * keys, run records and metrics, and while both definitions exist both are refused (the running one goes on),
 * so a move never runs an occurrence twice; names stay DNS-1123 labels (they become Kubernetes label values,
 * ≤ 63 characters). Flocks that need the same name in several namespaces are separate flocks
 * (`--watch-namespaces`, a label selector, and their own `--namespace` in Redis).
 */

/** API group of cronflock's resources. */
export const GROUP = 'cronflock.io';
/** The served and stored version. `v1alpha1`: a new API, whose shape may still change before `v1`. */
export const VERSION = 'v1alpha1';
/** `apiVersion` of Schedule objects. */
export const API_VERSION = `${GROUP}/${VERSION}`;
/** Kind of the resource. */
export const KIND = 'Schedule';
/** Plural resource name (URLs, RBAC). */
export const PLURAL = 'schedules';
/** Name of the CustomResourceDefinition. */
export const CRD_NAME = `${PLURAL}.${GROUP}`;

/** `metadata` fields cronflock reads. */
export interface ScheduleMeta {
  name: string;
  namespace: string;
  uid: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  /** Set when the object is being deleted (a string in JSON; typed as client-node types it). */
  deletionTimestamp?: Date;
}

/** A condition of a Schedule (`metav1.Condition`). */
export interface ScheduleCondition {
  /** `Ready`, `Invalid` or `Suspended`. */
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  /** RFC 3339. */
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** One run of the schedule that holds a claim now (`status.active[]`). */
export interface ActiveRun {
  /** Occurrence key `<schedule>@<due ISO>`. */
  occurrence: string;
  /** RFC 3339. */
  dueTime: string;
  replica: string;
  fencingToken: number;
  attempt: number;
  /** RFC 3339, on the Redis clock. */
  startTime: string;
}

/** The latest final outcome (by due time, then fencing token) of the schedule (`status.lastResult`). */
export interface LastResult {
  occurrence: string;
  dueTime: string;
  /** `succeeded`, `failed`, `missed` or `skipped`. */
  state: string;
  /** Why it failed, was missed or skipped. */
  reason?: string;
  replica?: string;
  fencingToken?: number;
  attempt?: number;
  /** First start minus fire time, as a duration (`12ms`, `3s`). */
  lateness?: string;
  startTime?: string;
  endTime?: string;
}

/** Outcome counts of one hour (`status.recent[]`), for the last-24-hours counters. */
export interface HourCount {
  /** Start of the hour, RFC 3339. */
  hour: string;
  succeeded: number;
  failed: number;
  missed: number;
  skipped: number;
}

/** `status` of a Schedule, as written by the replicas. */
export interface ScheduleStatus {
  observedGeneration?: number;
  lastScheduleTime?: string;
  lastSuccessfulTime?: string;
  nextDueTime?: string;
  nextFireTime?: string;
  active?: ActiveRun[];
  activeCount?: number;
  lastResult?: LastResult;
  /** Outcomes of the last 24 hours, summed over {@link ScheduleStatus.recent}. */
  last24h?: { succeeded: number; failed: number; missed: number; skipped: number };
  /** Per-hour counts the last-24-hours sums are made of (at most 25 hours). */
  recent?: HourCount[];
  conditions?: ScheduleCondition[];
}

/** A Schedule object as read from the API server. */
export interface ScheduleObject {
  apiVersion: string;
  kind: string;
  metadata: ScheduleMeta;
  spec: Record<string, unknown>;
  status?: ScheduleStatus;
}

/** The identity of a Schedule object: namespace, name and uid (a re-created object has a new uid). */
export interface ScheduleRef {
  namespace: string;
  name: string;
  uid: string;
}

/** `<namespace>/<name>` of a Schedule, for messages and maps. */
export function refKey(ref: { namespace: string; name: string }): string {
  return `${ref.namespace}/${ref.name}`;
}

/** How a Schedule's definition is named where a file's would be (`source.file` of its compiled schedule). */
export function sourceName(ref: { namespace: string; name: string }): string {
  return `Schedule ${refKey(ref)}`;
}
