/**
 * One attempt of a `kind: job` occurrence:
 *
 * 1. **Find or create the occurrence's Job** under its deterministic name (name.ts). If it exists, this claim
 *    adopts it (a re-claim after a crash or a hand-over): nothing is created twice, the API server's name
 *    uniqueness being a second fence behind the claim. An adopting claimant writes its fencing token into the
 *    Job's annotation (compare-and-set on the resourceVersion, only upwards); a claimant that finds a higher
 *    token there is stale and stops.
 * 2. **Before creating**, the schedule's other Jobs are checked against the concurrency policy, because a Job
 *    outlives the claim that created it (its claimant may have died, and the engine no longer counts it):
 *    Forbid: a live (unfinished) Job of the schedule makes this occurrence `skipped` (overlap); Replace: an
 *    occurrence that finds a Job of a later due time is `skipped` (superseded), and live Jobs are deleted with
 *    propagation `Foreground` and waited for until they are gone; backfill occurrences (which never skip or
 *    replace) wait for live Jobs to finish. Allow: nothing.
 * 3. **Wait** for the Job's `Complete` or `Failed` condition with a watch (watch.ts), not a poll loop. Complete:
 *    the attempt succeeds with a small report; Failed: it fails with the condition's reason and message; a Job
 *    deleted before it finished fails it.
 * 4. **History limits**: the schedule's oldest finished Jobs beyond the limits are deleted (history.ts).
 *
 * When the signal fires: the claim was lost, the replica hands the run over (SIGTERM), or the schedule's timeout
 * passed. The Job is NOT deleted: after a lost claim or a hand-over it keeps running and the next claimant
 * adopts it and waits for it; after a timeout, the Job's `activeDeadlineSeconds` (set from the schedule's
 * timeout) makes the Job controller stop it. Concurrency policy Replace deletes it when the newer occurrence
 * starts (step 2).
 */
import {
  createObject,
  deleteObject,
  getObject,
  isK8sError,
  listAll,
  patchObject,
  waitForObject,
  type KubeClient,
  type ObjectRef,
} from '../../k8s/index.js';
import { kubeClientFor } from '../kube-client.js';
import { JobSkippedError, type JobContext, type JobLogger } from '../types.js';
import { jobsBeyondHistory } from './history.js';
import { jobNameFor } from './name.js';
import {
  FENCING_TOKEN_ANNOTATION,
  OCCURRENCE_ANNOTATION,
  SCHEDULE_LABEL,
  SCHEDULED_TIME_ANNOTATION,
  type JobJobParams,
} from './schema.js';
import { jobOutcome, scheduledTimeMs, type BatchJob } from './state.js';

/** Field manager of the Jobs cronflock creates and patches. */
export const FIELD_MANAGER = 'cronflock';

/** The run's result in the run record (small: the record holds 4 KB). */
export interface JobRunReport {
  job: string;
  namespace: string;
  uid: string;
  /** True when this attempt found the Job already there (created by an earlier claimant) and waited for it. */
  adopted: boolean;
  /** Jobs of the schedule deleted first (concurrencyPolicy Replace). */
  replaced: string[];
  startTime?: string;
  completionTime?: string;
  succeeded: number;
  failed: number;
  /** Finished Jobs deleted by the history limits (after this one finished). */
  historyDeleted: string[];
}

/** A Job that failed, was deleted before it finished, or belongs to something else. */
export class JobRunError extends Error {
  constructor(
    readonly code: 'JOB_FAILED' | 'JOB_DELETED' | 'NAME_TAKEN' | 'STALE_CLAIMANT',
    message: string,
  ) {
    super(message);
    this.name = 'JobRunError';
  }
}

const JOB = { apiVersion: 'batch/v1', kind: 'Job' } as const;

/** The client the job uses: {@link kubeClientFor} (kept under this name for its importers). */
export const clientForJob = kubeClientFor;

/**
 * The Job manifest of an occurrence: the template's metadata and spec, the schedule label on the Job and its
 * pods, the occurrence, fencing-token and scheduled-time annotations, the owner, and `activeDeadlineSeconds`
 * from the schedule's timeout (rounded up to whole seconds; the template's own deadline wins when shorter).
 * Pure.
 */
export function jobManifest(ctx: Pick<JobContext, 'occurrence' | 'schedule'>, p: JobJobParams, namespace: string): BatchJob {
  const o = ctx.occurrence;
  const spec = structuredClone(p.jobTemplate.spec) as JobJobParams['jobTemplate']['spec'] & Record<string, unknown>;
  spec.template.metadata = { ...spec.template.metadata, labels: { ...spec.template.metadata?.labels, [SCHEDULE_LABEL]: o.schedule } };
  const timeoutMs = ctx.schedule?.timeoutMs ?? null;
  if (timeoutMs !== null) {
    const fromTimeout = Math.max(1, Math.ceil(timeoutMs / 1000));
    spec.activeDeadlineSeconds = Math.min(spec.activeDeadlineSeconds ?? fromTimeout, fromTimeout);
  }
  return {
    ...JOB,
    metadata: {
      name: jobNameFor(o),
      namespace,
      labels: { ...p.jobTemplate.metadata?.labels, [SCHEDULE_LABEL]: o.schedule, 'app.kubernetes.io/managed-by': 'cronflock' },
      annotations: {
        ...p.jobTemplate.metadata?.annotations,
        [OCCURRENCE_ANNOTATION]: o.key,
        [FENCING_TOKEN_ANNOTATION]: String(o.fencingToken),
        [SCHEDULED_TIME_ANNOTATION]: new Date(o.dueMs).toISOString(),
      },
      ...(p.owner ? { ownerReferences: [{ ...p.owner, controller: true, blockOwnerDeletion: true }] } : {}),
    } as BatchJob['metadata'],
    spec,
  };
}

/** Runs one attempt; see the module docs. Errors: {@link JobRunError}, {@link JobSkippedError}, `K8sError`s. */
export async function runJob(ctx: JobContext, p: JobJobParams): Promise<JobRunReport> {
  const { signal, log } = ctx;
  const client = clientForJob(p);
  const namespace = p.namespace ?? client.namespace;
  const manifest = jobManifest(ctx, p, namespace);
  const ref: ObjectRef = { ...JOB, namespace, name: manifest.metadata!.name! };
  const replaced: string[] = [];

  let job = await getJob(client, ref, signal);
  const adopted = job !== undefined;
  if (job) {
    job = await adopt(client, ref, job, ctx);
    log.info({ job: ref.name, namespace, createdBy: job.metadata?.annotations?.[FENCING_TOKEN_ANNOTATION] }, 'adopted the Job of this occurrence');
  } else {
    replaced.push(...(await applyConcurrencyPolicy(client, ctx, namespace, ref.name)));
    try {
      job = await createObject<BatchJob>(client, manifest as never, { fieldManager: FIELD_MANAGER, signal });
      log.info({ job: ref.name, namespace, activeDeadlineSeconds: manifest.spec?.activeDeadlineSeconds }, 'created the Job');
    } catch (e) {
      if (!isK8sError(e, 'CONFLICT')) throw e;
      // AlreadyExists: created between our get and create (a stale claimant of this occurrence): adopt it.
      job = await adopt(client, ref, (await getJob(client, ref, signal)) ?? {}, ctx);
    }
  }

  const uid = job.metadata?.uid;
  const final = await waitForObject<BatchJob, BatchJob | 'deleted'>(
    client,
    ref,
    // A Job being deleted will not finish: whoever deletes it (a person, a Replace) ends this run too.
    (j) => (!j || j.metadata?.uid !== uid || j.metadata?.deletionTimestamp ? 'deleted' : jobOutcome(j).state === 'running' ? undefined : j),
    { signal },
  );
  if (final === 'deleted') throw new JobRunError('JOB_DELETED', `Job ${namespace}/${ref.name} was deleted before it finished`);
  const historyDeleted = await applyHistoryLimits(client, ctx, p, namespace, log);
  const outcome = jobOutcome(final);
  if (outcome.state === 'failed') {
    throw new JobRunError('JOB_FAILED', `Job ${namespace}/${ref.name} failed: ${outcome.reason}${outcome.message ? `: ${outcome.message}` : ''}`);
  }
  const s = final.status ?? {};
  return {
    job: ref.name,
    namespace,
    uid: uid ?? '',
    adopted,
    replaced,
    ...(s.startTime ? { startTime: s.startTime } : {}),
    ...(s.completionTime ? { completionTime: s.completionTime } : {}),
    succeeded: s.succeeded ?? 0,
    failed: s.failed ?? 0,
    historyDeleted,
  };
}

async function getJob(client: KubeClient, ref: ObjectRef, signal: AbortSignal): Promise<BatchJob | undefined> {
  try {
    return await getObject<BatchJob>(client, ref, { signal });
  } catch (e) {
    if (isK8sError(e, 'NOT_FOUND')) return undefined;
    throw e;
  }
}

/**
 * Takes over an existing Job of this occurrence: checks it is this occurrence's (same name, other occurrence:
 * `NAME_TAKEN`), and raises its fencing-token annotation to ours with a resourceVersion precondition (a higher
 * token there: `STALE_CLAIMANT`).
 */
async function adopt(client: KubeClient, ref: ObjectRef, found: BatchJob, ctx: JobContext): Promise<BatchJob> {
  const { occurrence: o, signal } = ctx;
  let job = found;
  for (;;) {
    const owner = job.metadata?.annotations?.[OCCURRENCE_ANNOTATION];
    if (owner !== o.key) {
      throw new JobRunError(
        'NAME_TAKEN',
        `Job ${ref.namespace}/${ref.name} exists but runs ${owner ? `occurrence ${owner}` : 'no cronflock occurrence'}, not ${o.key}: delete or rename it`,
      );
    }
    const token = Number(job.metadata?.annotations?.[FENCING_TOKEN_ANNOTATION] ?? 0);
    if (token > o.fencingToken) {
      throw new JobRunError('STALE_CLAIMANT', `Job ${ref.namespace}/${ref.name} was adopted by fencing token ${token}, newer than this claim's ${o.fencingToken}`);
    }
    if (token === o.fencingToken) return job;
    try {
      return await patchObject<BatchJob>(
        client,
        ref,
        { metadata: { resourceVersion: job.metadata?.resourceVersion, annotations: { [FENCING_TOKEN_ANNOTATION]: String(o.fencingToken) } } },
        { fieldManager: FIELD_MANAGER, signal },
      );
    } catch (e) {
      if (!isK8sError(e, 'CONFLICT')) throw e;
      const again = await getJob(client, ref, signal); // changed meanwhile (status, another claimant): look again
      if (!again) throw new JobRunError('JOB_DELETED', `Job ${ref.namespace}/${ref.name} was deleted while being adopted`);
      job = again;
    }
  }
}

/** The schedule's Jobs in `namespace`, other than `ownName`. */
async function otherJobs(client: KubeClient, schedule: string, namespace: string, ownName: string, signal: AbortSignal): Promise<BatchJob[]> {
  const { items } = await listAll<BatchJob>(client, { ...JOB, namespace, labelSelector: `${SCHEDULE_LABEL}=${schedule}`, signal });
  return items.filter((j) => j.metadata?.name !== ownName);
}

/**
 * The concurrency policy against the Jobs that exist (see the module docs, step 2). Returns the names of the
 * Jobs deleted under Replace. Throws {@link JobSkippedError} for overlap (Forbid) and superseded (Replace).
 */
async function applyConcurrencyPolicy(client: KubeClient, ctx: JobContext, namespace: string, ownName: string): Promise<string[]> {
  const policy = ctx.schedule?.concurrencyPolicy ?? 'Allow';
  if (policy === 'Allow') return [];
  const { occurrence: o, signal, log } = ctx;
  const others = await otherJobs(client, o.schedule, namespace, ownName, signal);
  const live = others.filter((j) => jobOutcome(j).state === 'running');
  const describe = (j: BatchJob): string => `Job ${j.metadata?.name} (${j.metadata?.annotations?.[OCCURRENCE_ANNOTATION] ?? 'no occurrence'})`;
  if ((o.origin ?? 'schedule') === 'backfill') {
    // Backfill never skips or replaces (as in the claim script): it waits for the live Jobs to finish.
    for (const j of live) {
      log.info({ job: j.metadata?.name }, `backfill: waiting for live ${describe(j)} to finish (concurrencyPolicy ${policy})`);
      await waitForObject(client, { ...JOB, namespace, name: j.metadata!.name! }, (x) =>
        !x || x.metadata?.uid !== j.metadata?.uid || jobOutcome(x).state !== 'running' ? true : undefined, { signal });
    }
    return [];
  }
  if (policy === 'Forbid') {
    if (live.length > 0) throw new JobSkippedError(`overlap: ${describe(live[0]!)} still running (concurrencyPolicy Forbid)`);
    return [];
  }
  // Replace.
  const replaced: string[] = [];
  if ((o.origin ?? 'schedule') === 'schedule') {
    const newer = others.find((j) => scheduledTimeMs(j) > o.dueMs);
    // A newer occurrence already replaced this one's (never created, or deleted) Job: running it now would undo that.
    if (newer) throw new JobSkippedError(`superseded: newer ${describe(newer)} exists (concurrencyPolicy Replace)`);
  }
  for (const j of live) {
    const name = j.metadata!.name!;
    const uid = j.metadata?.uid;
    log.info({ job: name }, `replacing ${describe(j)}: deleting it (propagation Foreground) and waiting until it is gone`);
    const r = await deleteObject(client, { ...JOB, namespace, name }, { propagationPolicy: 'Foreground', ...(uid ? { preconditions: { uid } } : {}), signal });
    if (r.outcome === 'deleted') {
      // Foreground: the garbage collector deletes the Job's pods first, then the Job.
      await waitForObject(client, { ...JOB, namespace, name }, (x) => (!x || x.metadata?.uid !== uid ? true : undefined), { signal });
    }
    replaced.push(name);
  }
  return replaced;
}

/** Deletes the schedule's finished Jobs beyond the history limits (Background propagation, uid precondition). */
async function applyHistoryLimits(client: KubeClient, ctx: JobContext, p: JobJobParams, namespace: string, log: JobLogger): Promise<string[]> {
  const { occurrence: o, signal } = ctx;
  const deleted: string[] = [];
  try {
    const { items } = await listAll<BatchJob>(client, { ...JOB, namespace, labelSelector: `${SCHEDULE_LABEL}=${o.schedule}`, signal });
    for (const j of jobsBeyondHistory(items, { successful: p.successfulJobsHistoryLimit, failed: p.failedJobsHistoryLimit })) {
      const name = j.metadata!.name!;
      const uid = j.metadata?.uid;
      const r = await deleteObject(client, { ...JOB, namespace, name }, { propagationPolicy: 'Background', ...(uid ? { preconditions: { uid } } : {}), signal });
      if (r.outcome === 'deleted') deleted.push(name);
    }
  } catch (e) {
    // The occurrence's own result stands; the next run prunes again.
    log.warn({ err: (e as Error).message }, 'history limits: could not delete old Jobs');
  }
  if (deleted.length > 0) log.info({ deleted }, 'history limits: deleted old Jobs');
  return deleted;
}
