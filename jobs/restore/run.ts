/**
 * One restore: read the whole backup (verified by the reader), plan with a server-side-apply dry run, then apply
 * in order under a flock-wide lock, prune if asked, and report.
 *
 * - **Trust.** Before anything is planned: prune from a source that is not authenticated (a plain archive) is
 *   refused unless `allowUnauthenticatedPrune`; the reader has checked sizes, the manifest and each object against
 *   its entry; check.ts checks each entry's resource and scope against the target (or the backup's CRD) and the
 *   owner references. A failure is "damaged archive <name>: <what>; nothing was applied".
 *
 * - **Plan.** Read the live objects (one paged list per kind and namespace with more than five objects in the
 *   backup, else one read per object; absent: `create`), then server-side apply each with `dryRun=All`; the answer
 *   compared with the live object (content only: resourceVersion, generation, managedFields, creationTimestamp,
 *   uid and status aside) says `update` or `unchanged`. The plan keeps each object's live uid and content hash. Objects the dry run
 *   cannot check because this restore first creates what they need (their CRD, their namespace) are counted
 *   `create` and `unvalidated`. Any other refusal (invalid object, missing namespace that the backup does not
 *   have, forbidden) fails the restore before any write, with one line per object. Prune candidates are computed
 *   here, with the uid and resourceVersion seen, and shown in the plan.
 * - **Apply.** Server-side apply, field manager `cronflock`, `force: true`: a restore makes the objects what the
 *   backup says, so fields another manager (kubectl, a controller) took over are taken back instead of failing
 *   with 409 conflicts. Same order as order.ts; after the CRD phase, each CRD must report `Established` before
 *   anything else is applied. One request per object: counts compare the apply's answer with what the plan saw
 *   (same uid and content hash: `unchanged`; same uid: `update`; otherwise `create`), so the plan's counts are
 *   what the restore does when nothing changed in between.
 * - **Owner references.** An owner in the backup is applied first and the reference gets its new uid; an owner
 *   not in the backup but present in the cluster (same kind, name, namespace) keeps the reference with the live
 *   uid; any other reference is dropped (and counted): a reference to a missing owner would let the garbage
 *   collector delete the restored object.
 * - **Prune** (off by default) deletes objects that the backup's own selection selects now but that the backup
 *   does not contain, with uid and resourceVersion preconditions from the plan (an object changed since is kept
 *   and counted `changed`). Never: objects marked `cronflock.io/protect: "true"` (label or annotation, listed in
 *   the plan as protected), Namespaces and CRDs (a delete cascades to everything in them), objects in
 *   kube-system/kube-public/kube-node-lease, objects with a controller owner (their controller manages them),
 *   objects already being deleted, and what Kubernetes makes itself (`default` ServiceAccounts,
 *   `kube-root-ca.crt`, service-account token Secrets). Finalizers are never removed: an object with finalizers
 *   stays Terminating until its controller lets it go (counted `pending`).
 * - **Lock and resume.** Not for dry runs. The lock `restore:<cluster id>` (the kube-system namespace uid) is
 *   held for the whole restore and renewed; when it is lost the restore stops. Progress is checkpointed beside the
 *   lock (fenced: a stale holder's checkpoint is refused) after each step: the plan, each applied object's action
 *   and new uid, each prune outcome. A later holder with the same checkpoint scope (the same occurrence, or the
 *   same CLI restore) resumes: it reuses the plan, skips what is done and rebuilds the uid map from the
 *   checkpoints, so nothing is counted or deleted twice. Finished restores clear their checkpoints.
 *
 * This module orchestrates; the parts live beside it: types.ts (inputs, plan, report, error), plan.ts, prepare.ts
 * (the object to apply), apply.ts, prune.ts, checkpoints.ts, context.ts (shared state, content hash); the worker
 * pool is ../pool.ts, shared with cleanup.
 */
import { linkedSignal, type LinkedSignal } from '../../runner/time/deadline.js';
import { clusterIdentity } from '../../k8s/cluster.js';
import type { KubeClient, KubeObject } from '../../k8s/index.js';
import { isBackupError } from '../backup/errors.js';
import type { ManifestEntry } from '../backup/format.js';
import type { JobCheckpoints, JobLock } from '../types.js';
import { applyAll } from './apply.js';
import { objectProblems } from './check.js';
import { checkpointScope, savePlan } from './checkpoints.js';
import { Ctx } from './context.js';
import { orderSteps, type Step } from './order.js';
import { makePlan } from './plan.js';
import { ownerRefs } from './prepare.js';
import { pruneAll } from './prune.js';
import { RestoreError, type RestoreOptions, type RestorePlan, type RestoreReport } from './types.js';

export { FIELD_MANAGER, RestoreError, type ActionCounts, type PruneCandidate, type RestoreOptions, type RestorePlan, type RestoreReport } from './types.js';

interface Loaded {
  entry: ManifestEntry;
  object: KubeObject;
}

/** The target cluster's id: the uid of its kube-system namespace. Errors: those of {@link clusterIdentity}. */
export async function clusterIdOf(client: KubeClient, signal?: AbortSignal): Promise<string> {
  return (await clusterIdentity(client, signal)).clusterId;
}

/**
 * Restores a backup; see the module docs. Errors: {@link RestoreError} (codes above), `LOCK_HELD` from the lock
 * when another restore of the cluster runs, `ABORTED` K8sErrors when `signal` fires.
 */
export async function runRestore(o: RestoreOptions): Promise<RestoreReport> {
  const t0 = performance.now();
  const { client, log } = o;
  const manifest = o.source.manifest;
  if (o.prune && !o.source.authenticated && !o.allowUnauthenticatedPrune) {
    throw new RestoreError(
      'UNAUTHENTICATED',
      `backup ${o.backupName} is a plain archive: it is checked for damage, not authenticated (whoever can write to its storage can make one), and prune deletes what its manifest's selection covers. ` +
        'Restore without prune, encrypt your backups (encryption.key: an encrypted archive is authenticated), or allow it (allowUnauthenticatedPrune: true, --allow-unauthenticated-prune); nothing was applied',
    );
  }
  const clusterId = await clusterIdOf(client, o.signal);
  const loaded: Loaded[] = [];
  try {
    for await (const { entry, object } of o.source.objects({ signal: o.signal })) loaded.push({ entry, object: object as KubeObject });
  } catch (e) {
    const what = isBackupError(e, 'VERIFY', 'LIMIT') ? e.message : `backup ${o.backupName}: ${(e as Error).message}`;
    throw new RestoreError('BACKUP', `${what}; nothing was applied`, { cause: e });
  }
  const damaged = (what: string, cause?: unknown): RestoreError =>
    new RestoreError('BACKUP', `damaged archive ${o.backupName}: ${what}; nothing was applied`, cause !== undefined ? { cause } : undefined);
  const problems = await objectProblems(client, loaded, o.signal);
  if (problems.length > 0) throw damaged(problems.join('; '));
  let steps: Step<ManifestEntry>[];
  try {
    steps = orderSteps<ManifestEntry>(loaded.map((l) => ({ entry: l.entry, ownerUids: ownerRefs(l.object).map((r) => r.uid) })));
  } catch (e) {
    throw damaged(`${(e as Error).message} (Kubernetes forbids cyclic owners)`, e);
  }
  const objectOf = new Map(loaded.map((l) => [l.entry, l.object]));
  log.info({ backup: o.backupName, objects: loaded.length, clusterId, sourceClusterId: manifest.clusterId }, 'restore: backup read and verified');

  let lock: JobLock | undefined;
  let checkpoints: JobCheckpoints | undefined;
  let signal = o.signal;
  let linked: LinkedSignal | undefined;
  let state = new Map<string, string>();
  if (!o.dryRun) {
    if (!o.lock) throw new RestoreError('NO_LOCK', 'a restore needs the flock lock (coordination): run it from a schedule or `cronflock restore`');
    lock = await o.lock.coordination.lock(`restore:${clusterId}`, {
      ttlMs: o.lock.ttlMs ?? 15_000,
      waitMs: o.lock.waitMs ?? 0,
      signal: o.signal,
      ...(o.lock.owner ? { owner: o.lock.owner } : {}),
    });
    // Plain listeners we hold, not AbortSignal.any (its weak references can miss an abort: runner/time/deadline.ts).
    linked = linkedSignal([o.signal, lock.signal]);
    signal = linked.signal;
    checkpoints = lock.checkpoints(checkpointScope(o.lock.scope, manifest, o.prune));
    state = await checkpoints.getAll();
    log.info({ fencingToken: lock.fencingToken, resumedFields: state.size }, state.size > 0 ? 'restore: lock taken; resuming' : 'restore: lock taken');
  }
  try {
    const ctx = new Ctx(o, signal, manifest, state, checkpoints);
    let plan: RestorePlan;
    const saved = state.get('plan');
    if (saved) plan = JSON.parse(saved) as RestorePlan;
    else {
      plan = await makePlan(ctx, steps, objectOf);
      if (checkpoints) await savePlan(checkpoints, ctx.seen, plan);
    }
    const report: RestoreReport = {
      backup: o.backupName,
      clusterId,
      sourceClusterId: manifest.clusterId,
      dryRun: o.dryRun,
      prune: o.prune,
      plan,
      pruneChanged: 0,
      prunePending: 0,
      ownerReferences: ctx.refs,
      resumed: 0,
      ...(lock ? { fencingToken: lock.fencingToken } : {}),
      durationMs: 0,
    };
    if (!o.dryRun) {
      report.done = {};
      await applyAll(ctx, steps, objectOf, report);
      if (o.prune) await pruneAll(ctx, plan.prune, report);
      await checkpoints?.clear();
    }
    report.durationMs = Math.round(performance.now() - t0);
    return report;
  } catch (e) {
    if (lock?.signal.aborted && !o.signal.aborted) {
      throw new RestoreError('LOCK_LOST', `${(lock.signal.reason as Error).message}; the restore stopped (a later holder resumes from the checkpoints)`, { cause: e });
    }
    throw e;
  } finally {
    linked?.dispose();
    await lock?.release();
  }
}
