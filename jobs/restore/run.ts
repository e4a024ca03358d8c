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
 */
import { createHash } from 'node:crypto';
import { linkedSignal, type LinkedSignal } from '../../runner/time/deadline.js';
import { clusterIdentity } from '../../k8s/cluster.js';
import {
  deleteObject,
  getObject,
  isK8sError,
  listPages,
  serverSideApply,
  type KubeClient,
  type KubeObject,
  type PartialObjectMetadata,
} from '../../k8s/index.js';
import { isBackupError } from '../backup/errors.js';
import { STRIPPED_METADATA_FIELDS, type BackupManifest, type ManifestEntry } from '../backup/format.js';
import { PROTECT_KEY, PROTECTED_NAMESPACES } from '../cleanup/schema.js';
import type { JobCheckpoints, JobCoordination, JobLock, JobLogger } from '../types.js';
import { canonicalJson } from '../../runner/text/canonical-json.js';
import { objectProblems } from './check.js';
import { describe, kindKey, orderSteps, type OrderItem, type Step } from './order.js';
import { resolveTargets, selectObjects } from '../backup/selection.js';
import type { BackupSource } from './source.js';
import { sleep } from '../../runner/time/wait.js';

/** Field manager of every apply. */
export const FIELD_MANAGER = 'cronflock';

/** A restore that stopped; `code` says why (nothing was applied unless the code is `APPLY` or `LOCK_LOST`). */
export class RestoreError extends Error {
  constructor(
    /**
     * `PLAN`: the dry run refused objects (nothing applied); `APPLY`: an apply or delete failed part-way (what was
     * done is checkpointed: run again to resume); `CRD_TIMEOUT`: a CRD did not become Established in time;
     * `LOCK_LOST`: the lock was lost (another holder resumes); `NO_LOCK`: no coordination was given;
     * `BACKUP`: the backup cannot be read (unknown, wrong key, damaged); `UNAUTHENTICATED`: prune was asked from
     * a plain (unauthenticated) archive without `allowUnauthenticatedPrune`.
     */
    readonly code: 'PLAN' | 'APPLY' | 'CRD_TIMEOUT' | 'LOCK_LOST' | 'NO_LOCK' | 'BACKUP' | 'UNAUTHENTICATED',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RestoreError';
  }
}

/** Per-kind counts of a plan or of what a restore did. */
export interface ActionCounts {
  create: number;
  update: number;
  unchanged: number;
  delete: number;
}

/** An object prune would delete (with the preconditions seen when planning). */
export interface PruneCandidate {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid: string;
  resourceVersion: string;
}

/** The plan: what the restore would do, per kind (`Kind` or `Kind.group`). */
export interface RestorePlan {
  byKind: Record<string, ActionCounts>;
  /** Objects counted `create` without a dry run (their CRD or namespace is created by this restore). */
  unvalidated: number;
  /** Prune candidates (empty without prune). */
  prune: PruneCandidate[];
  /** Objects prune would have deleted but are protected (`cronflock.io/protect: "true"`), as `Kind ns/name`. */
  protected: string[];
}

/** What {@link runRestore} returns (and a schedule run records as its result). */
export interface RestoreReport {
  backup: string;
  /** Target cluster id (its kube-system namespace uid). */
  clusterId: string;
  /** The cluster the backup was taken from. */
  sourceClusterId: string;
  dryRun: boolean;
  prune: boolean;
  plan: RestorePlan;
  /** What was done, per kind, in the plan's terms (absent for a dry run). Includes work resumed from checkpoints. */
  done?: Record<string, ActionCounts>;
  /** Prune deletes not done because the object changed or was re-created since the plan. */
  pruneChanged: number;
  /** Prune deletes accepted but still pending (finalizers). */
  prunePending: number;
  /**
   * Owner references of the objects applied by this attempt (not those resumed from checkpoints): rewritten to an
   * owner restored from the backup, kept to a live owner, dropped (owner in neither), with up to 5 examples.
   */
  ownerReferences: { rewritten: number; live: number; dropped: number; droppedExamples: string[] };
  /** Objects (and prune deletes) taken as done from an earlier holder's checkpoints. */
  resumed: number;
  /** Fencing token of the restore lock (absent for a dry run). */
  fencingToken?: number;
  durationMs: number;
}

/** Inputs of {@link runRestore}. */
export interface RestoreOptions {
  client: KubeClient;
  source: BackupSource;
  /** Human name of the backup, for the report. */
  backupName: string;
  dryRun: boolean;
  prune: boolean;
  /**
   * Prune even when the source is not authenticated (a plain archive: its selection, which prune deletes within,
   * could have been written by anyone who can write to the storage); default false.
   */
  allowUnauthenticatedPrune?: boolean;
  /** Applies and deletes in flight at once; default 5. */
  concurrency?: number;
  /** How long a restored CRD may take to become Established, ms; default 60 000. */
  crdTimeoutMs?: number;
  /** The lock (required unless dryRun). */
  lock?: {
    coordination: JobCoordination;
    /** Lease in ms; default 15 000. */
    ttlMs?: number;
    /** How long to wait for another restore of the same cluster, ms; default 0 (refuse at once). */
    waitMs?: number;
    owner?: string;
    /** Names the work for checkpoints: the same scope resumes (e.g. the occurrence key). */
    scope: string;
  };
  signal: AbortSignal;
  log: JobLogger;
}

interface Loaded {
  entry: ManifestEntry;
  object: KubeObject;
}

const empty = (): ActionCounts => ({ create: 0, update: 0, unchanged: 0, delete: 0 });
const bump = (m: Record<string, ActionCounts>, key: string, a: keyof ActionCounts, n = 1): void => {
  (m[key] ??= empty())[a] += n;
};

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
      if (checkpoints) {
        const seen = [...ctx.seen.entries()];
        for (let i = 0; i < seen.length; i += 500) {
          await checkpoints.set(Object.fromEntries(seen.slice(i, i + 500).map(([path, v]) => [`l:${path}`, v ? `${v.uid} ${v.hash}` : '-'])));
        }
        await checkpoints.set({ plan: JSON.stringify(plan) });
      }
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

/** Checkpoint scope: the caller's scope plus what makes two restores different work. */
function checkpointScope(scope: string, m: BackupManifest, prune: boolean): string {
  const h = createHash('sha256').update(JSON.stringify([m.name, m.createdAt, m.objects.length, prune])).digest('hex').slice(0, 16);
  return `${scope.replace(/\s+/g, '_')}:${h}`;
}

/** Shared state of one restore. */
class Ctx {
  readonly refs = { rewritten: 0, live: 0, dropped: 0, droppedExamples: [] as string[] };
  /** original uid → uid on the target (applied, or dry-run answer). */
  readonly uidMap = new Map<string, string>();
  readonly crdNames: Set<string>;
  readonly backupNamespaces: Set<string>;
  /** Per object path: the live object's uid and content hash when planned (null: absent). */
  readonly seen = new Map<string, Seen | null>();
  private readonly nsExists = new Map<string, Promise<boolean>>();

  constructor(
    readonly o: RestoreOptions,
    readonly signal: AbortSignal,
    readonly manifest: BackupManifest,
    readonly state: Map<string, string>,
    readonly checkpoints: JobCheckpoints | undefined,
  ) {
    this.crdNames = new Set(manifest.objects.filter((e) => e.kind === 'CustomResourceDefinition').map((e) => e.name));
    this.backupNamespaces = new Set(manifest.objects.filter((e) => e.kind === 'Namespace' && e.group === '').map((e) => e.name));
  }

  get client(): KubeClient {
    return this.o.client;
  }

  namespaceExists(ns: string): Promise<boolean> {
    let p = this.nsExists.get(ns);
    if (!p) {
      p = getObject(this.client, { apiVersion: 'v1', kind: 'Namespace', name: ns }, { signal: this.signal }).then(
        () => true,
        (e: unknown) => {
          if (isK8sError(e, 'NOT_FOUND')) return false;
          throw e;
        },
      );
      this.nsExists.set(ns, p);
    }
    return p;
  }

  /** What the plan saw of an object: from this run's plan, or from the checkpoints of the one resumed. */
  seenAtPlan(path: string): Seen | null {
    const mine = this.seen.get(path);
    if (mine !== undefined) return mine;
    const saved = this.state.get(`l:${path}`);
    if (!saved || saved === '-') return null;
    const [uid, hash] = saved.split(' ') as [string, string];
    return { uid, hash };
  }

  /** True when the backup has the CRD that defines this entry's kind. */
  crdInBackup(e: ManifestEntry): boolean {
    return this.crdNames.has(`${e.resource}.${e.group}`);
  }
}

function ownerRefs(obj: KubeObject): { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[] {
  return (obj.metadata?.ownerReferences ?? []) as { apiVersion: string; kind: string; name: string; uid: string }[];
}

/**
 * The object to apply: the stored one without server fields (defensively; the writer strips them), with the
 * entry's namespace, owner references rewritten (see the module docs), and a Service's allocated `clusterIP(s)`
 * left to the target cluster (unless headless), as Velero does: the source's IP may be taken or outside the
 * target's service range.
 */
async function prepare(ctx: Ctx, entry: ManifestEntry, stored: KubeObject, dry: boolean): Promise<KubeObject> {
  const obj = structuredClone(stored) as KubeObject & { status?: unknown; spec?: Record<string, unknown> };
  delete obj.status;
  const md = { ...(obj.metadata ?? {}) } as Record<string, unknown>;
  for (const f of STRIPPED_METADATA_FIELDS) delete md[f];
  md.name = entry.name;
  if (entry.namespaced) md.namespace = entry.namespace;
  const refs = ownerRefs(stored);
  if (refs.length > 0) {
    const kept: unknown[] = [];
    for (const r of refs) {
      const mapped = ctx.uidMap.get(r.uid);
      if (mapped) {
        kept.push({ ...r, uid: mapped });
        if (!dry) ctx.refs.rewritten++;
        continue;
      }
      const live = await liveOwnerUid(ctx, r, entry);
      if (live) {
        kept.push({ ...r, uid: live });
        if (!dry) ctx.refs.live++;
      } else if (!dry) {
        ctx.refs.dropped++;
        if (ctx.refs.droppedExamples.length < 5) ctx.refs.droppedExamples.push(`${describe(entry)} → ${r.kind} ${r.name}`);
      }
    }
    if (kept.length > 0) md.ownerReferences = kept;
    else delete md.ownerReferences;
  }
  obj.metadata = md as KubeObject['metadata'];
  if (entry.group === '' && entry.kind === 'Service' && obj.spec && obj.spec.clusterIP !== 'None') {
    delete obj.spec.clusterIP;
    delete obj.spec.clusterIPs;
  }
  return obj;
}

async function liveOwnerUid(ctx: Ctx, r: { apiVersion: string; kind: string; name: string }, entry: ManifestEntry): Promise<string | undefined> {
  try {
    const owner = await getObject(ctx.client, { apiVersion: r.apiVersion, kind: r.kind, name: r.name, ...(entry.namespace ? { namespace: entry.namespace } : {}) }, { signal: ctx.signal });
    return owner.metadata?.uid;
  } catch (e) {
    if (isK8sError(e, 'NOT_FOUND', 'RESOURCE_UNKNOWN')) return undefined;
    throw e;
  }
}

/** Hash of an object's content for "did anything change": server-owned metadata and status aside. */
function content(obj: KubeObject | undefined): string {
  if (!obj) return '';
  // apiVersion and kind aside too: list items do not carry them
  const { status: _status, apiVersion: _a, kind: _k, ...rest } = obj as KubeObject & { status?: unknown };
  const md = { ...(rest.metadata ?? {}) } as Record<string, unknown>;
  for (const f of ['resourceVersion', 'generation', 'managedFields', 'creationTimestamp', 'uid', 'selfLink']) delete md[f];
  return createHash('sha256').update(canonicalJson({ ...rest, metadata: md })).digest('hex').slice(0, 32);
}

/** What the plan keeps of a live object. */
interface Seen {
  uid: string;
  /** {@link content} hash. */
  hash: string;
}

function seenOf(obj: KubeObject | undefined): Seen | null {
  return obj ? { uid: obj.metadata?.uid ?? '', hash: content(obj) } : null;
}

/**
 * Reads the live objects of the backup's kinds and namespaces with one paged list per (kind, namespace) that has
 * more than a few objects in the backup, instead of one read per object; records each backed-up object's uid and
 * content hash (or absence) in `ctx.seen`. Kinds not served yet (CRDs of the backup) and missing namespaces are
 * left to the per-object path.
 */
async function indexLive(ctx: Ctx, entries: ManifestEntry[]): Promise<void> {
  const groups = new Map<string, ManifestEntry[]>();
  for (const e of entries) {
    const k = `${e.group}/${e.version}/${e.kind}/${e.namespace ?? ''}`;
    const g = groups.get(k);
    if (g) g.push(e);
    else groups.set(k, [e]);
  }
  for (const g of groups.values()) {
    if (g.length <= 5) continue;
    const e = g[0]!;
    if (e.namespace && !(await ctx.namespaceExists(e.namespace))) continue;
    const byName = new Map(g.map((x) => [x.name, x]));
    const found = new Map<string, Seen>();
    try {
      for await (const page of listPages<KubeObject>(ctx.client, {
        apiVersion: e.group ? `${e.group}/${e.version}` : e.version,
        kind: e.kind,
        ...(e.namespaced ? { namespace: e.namespace! } : {}),
        signal: ctx.signal,
      })) {
        if (page.index === 0) found.clear();
        for (const o of page.items) if (byName.has(o.metadata?.name ?? '')) found.set(o.metadata!.name!, seenOf(o)!);
      }
    } catch (err) {
      if (isK8sError(err, 'RESOURCE_UNKNOWN')) continue;
      throw err;
    }
    for (const x of g) ctx.seen.set(x.path, found.get(x.name) ?? null);
  }
}

async function getLive(ctx: Ctx, entry: ManifestEntry, obj: KubeObject): Promise<KubeObject | undefined> {
  try {
    return await getObject<KubeObject>(ctx.client, { apiVersion: obj.apiVersion!, kind: obj.kind!, name: entry.name, ...(entry.namespace ? { namespace: entry.namespace } : {}) }, { signal: ctx.signal });
  } catch (e) {
    if (isK8sError(e, 'NOT_FOUND')) return undefined;
    throw e;
  }
}

/** Runs `fn` over `items` with at most `n` in flight; rejects with the first error after the others settle. */
async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  let first: unknown;
  const worker = async (): Promise<void> => {
    while (i < items.length && first === undefined) {
      const t = items[i++]!;
      try {
        await fn(t);
      } catch (e) {
        first ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  if (first !== undefined) throw first;
}

async function makePlan(ctx: Ctx, steps: Step<ManifestEntry>[], objectOf: Map<ManifestEntry, KubeObject>): Promise<RestorePlan> {
  const plan: RestorePlan = { byKind: {}, unvalidated: 0, prune: [], protected: [] };
  const refused: string[] = [];
  await indexLive(ctx, steps.flatMap((s) => s.items.map((i) => i.entry)));
  for (const step of steps) {
    await pool(step.items, ctx.o.concurrency ?? 5, async ({ entry }: OrderItem) => {
      const stored = objectOf.get(entry)!;
      const key = kindKey(entry);
      if (entry.namespace && !(await ctx.namespaceExists(entry.namespace))) {
        if (ctx.backupNamespaces.has(entry.namespace)) {
          bump(plan.byKind, key, 'create');
          plan.unvalidated++;
        } else refused.push(`${describe(entry)}: namespace ${entry.namespace} does not exist and the backup has no Namespace ${entry.namespace}: create it first`);
        return;
      }
      let live: Seen | null;
      try {
        live = ctx.seen.has(entry.path) ? ctx.seen.get(entry.path)! : seenOf(await getLive(ctx, entry, stored));
      } catch (e) {
        if (isK8sError(e, 'RESOURCE_UNKNOWN') && ctx.crdInBackup(entry)) {
          bump(plan.byKind, key, 'create');
          plan.unvalidated++;
          return;
        }
        refused.push(`${describe(entry)}: ${(e as Error).message}`);
        return;
      }
      const obj = await prepare(ctx, entry, stored, true);
      let answer: KubeObject;
      try {
        answer = await serverSideApply(ctx.client, obj, { fieldManager: FIELD_MANAGER, force: true, dryRun: true, signal: ctx.signal });
      } catch (e) {
        refused.push(`${describe(entry)}: ${(e as Error).message}`);
        return;
      }
      // Dependents planned later see the uid their owner would have (the live one, or the dry run's).
      if (answer.metadata?.uid) ctx.uidMap.set(entry.uid, answer.metadata.uid);
      ctx.seen.set(entry.path, live);
      bump(plan.byKind, key, !live ? 'create' : live.hash === content(answer) ? 'unchanged' : 'update');
    });
  }
  if (refused.length > 0) {
    throw new RestoreError(
      'PLAN',
      `the dry run refused ${refused.length} object(s); nothing was applied:\n  ${refused.slice(0, 20).join('\n  ')}${refused.length > 20 ? `\n  … and ${refused.length - 20} more` : ''}`,
    );
  }
  ctx.uidMap.clear();
  if (ctx.o.prune) await planPrune(ctx, plan);
  return plan;
}

const KUBERNETES_MADE = (kind: string, name: string, obj: { type?: string }): boolean =>
  (kind === 'ServiceAccount' && name === 'default') ||
  (kind === 'ConfigMap' && name === 'kube-root-ca.crt') ||
  (kind === 'Secret' && obj.type === 'kubernetes.io/service-account-token');

async function planPrune(ctx: Ctx, plan: RestorePlan): Promise<void> {
  const inBackup = new Set(ctx.manifest.objects.map((e) => `${e.group}/${e.resource}/${e.namespace ?? ''}/${e.name}`));
  // The backup's own selection, read now with the backup's selector (a kind the cluster does not serve has
  // nothing to prune).
  const sets = ctx.manifest.selection.resourceSets.map((s) => ({ ...s, optional: true }));
  const targets = await resolveTargets(ctx.client, sets, ctx.signal);
  for await (const { info, object } of selectObjects<PartialObjectMetadata>(ctx.client, targets, { pageSize: 500, metadataOnly: true, signal: ctx.signal })) {
    const md = object.metadata;
    const name = md.name ?? '';
    const ns = info.namespaced ? md.namespace : undefined;
    if (inBackup.has(`${info.group}/${info.resource}/${ns ?? ''}/${name}`)) continue;
    if (info.kind === 'Namespace' && info.group === '') continue;
    if (info.kind === 'CustomResourceDefinition') continue;
    if (ns && (PROTECTED_NAMESPACES as readonly string[]).includes(ns)) continue;
    if (md.deletionTimestamp) continue;
    if (md.ownerReferences?.some((r) => r.controller)) continue;
    if (KUBERNETES_MADE(info.kind, name, object as { type?: string })) continue;
    const label = `${kindKey(info)} ${ns ? `${ns}/` : ''}${name}`;
    if (md.labels?.[PROTECT_KEY] === 'true' || md.annotations?.[PROTECT_KEY] === 'true') {
      plan.protected.push(label);
      continue;
    }
    plan.prune.push({
      apiVersion: info.apiVersion,
      kind: info.kind,
      ...(ns ? { namespace: ns } : {}),
      name,
      uid: md.uid ?? '',
      resourceVersion: md.resourceVersion ?? '',
    });
    bump(plan.byKind, kindKey(info), 'delete');
  }
  // The deletes are part of the plan: dry-run them too (permissions, admission), so a prune that could not run
  // fails here, before any write.
  const refused: string[] = [];
  await pool(plan.prune, ctx.o.concurrency ?? 5, async (c) => {
    try {
      await deleteObject(ctx.client, c, { preconditions: { uid: c.uid }, propagationPolicy: 'Background', dryRun: true, signal: ctx.signal });
    } catch (e) {
      refused.push(`delete ${c.kind} ${c.namespace ? `${c.namespace}/` : ''}${c.name}: ${(e as Error).message}`);
    }
  });
  if (refused.length > 0) {
    throw new RestoreError('PLAN', `the dry run refused ${refused.length} prune delete(s); nothing was applied:\n  ${refused.slice(0, 20).join('\n  ')}${refused.length > 20 ? `\n  … and ${refused.length - 20} more` : ''}`);
  }
}

/** Waits until CRD `name` reports `Established=True`. Errors: `CRD_TIMEOUT`. */
async function waitEstablished(ctx: Ctx, name: string): Promise<void> {
  const timeoutMs = ctx.o.crdTimeoutMs ?? 60_000;
  const end = performance.now() + timeoutMs;
  for (;;) {
    const crd = await getObject<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(
      ctx.client,
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name },
      { signal: ctx.signal },
    );
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) {
      ctx.o.log.info({ crd: name, waitedMs: Math.round(performance.now() - (end - timeoutMs)) }, 'restore: CRD established');
      return;
    }
    if (performance.now() > end) throw new RestoreError('CRD_TIMEOUT', `CRD ${name} did not become Established within ${timeoutMs} ms; its objects were not applied`);
    await sleep(100, ctx.signal);
    ctx.signal.throwIfAborted();
  }
}

async function applyAll(ctx: Ctx, steps: Step<ManifestEntry>[], objectOf: Map<ManifestEntry, KubeObject>, report: RestoreReport): Promise<void> {
  const done = report.done!;
  for (const step of steps) {
    const crds: string[] = [];
    await pool(step.items, ctx.o.concurrency ?? 5, async ({ entry }: OrderItem) => {
      const key = kindKey(entry);
      const saved = ctx.state.get(`o:${entry.path}`);
      if (saved) {
        const [action, uid] = saved.split(' ') as [keyof ActionCounts, string];
        if (uid) ctx.uidMap.set(entry.uid, uid);
        bump(done, key, action);
        report.resumed++;
        return;
      }
      const stored = objectOf.get(entry)!;
      let action: keyof ActionCounts;
      let result: KubeObject;
      try {
        result = await serverSideApply(ctx.client, await prepare(ctx, entry, stored, false), { fieldManager: FIELD_MANAGER, force: true, signal: ctx.signal });
        // Counted against what the plan saw (no read before each apply): absent then, or another uid now
        // (deleted and re-created since), is a create.
        const seen = ctx.seenAtPlan(entry.path);
        action = !seen || seen.uid !== result.metadata?.uid ? 'create' : seen.hash === content(result) ? 'unchanged' : 'update';
      } catch (e) {
        if (ctx.signal.aborted) throw e;
        throw new RestoreError('APPLY', `applying ${describe(entry)} failed: ${(e as Error).message} (what was applied is checkpointed; run the restore again to resume)`, { cause: e });
      }
      const uid = result.metadata?.uid ?? '';
      ctx.uidMap.set(entry.uid, uid);
      // One checkpoint per object, right after its apply: a holder killed in between leaves at most the objects
      // in flight to be applied again by the next one (idempotent, and counted once: only the next one records them).
      await ctx.checkpoints?.set({ [`o:${entry.path}`]: `${action} ${uid}` });
      bump(done, key, action);
      if (entry.kind === 'CustomResourceDefinition') crds.push(entry.name);
    });
    for (const name of crds) await waitEstablished(ctx, name);
    if (crds.length > 0) ctx.client.discovery.invalidate();
    ctx.o.log.info({ phase: step.phase, depth: step.depth, objects: step.items.length }, 'restore: step applied');
  }
}

async function pruneAll(ctx: Ctx, candidates: PruneCandidate[], report: RestoreReport): Promise<void> {
  const done = report.done!;
  await pool(candidates, ctx.o.concurrency ?? 5, async (c) => {
    const field = `d:${c.apiVersion}/${c.kind}/${c.namespace ?? ''}/${c.name}`;
    const key = kindKey({ kind: c.kind, group: c.apiVersion.includes('/') ? c.apiVersion.split('/')[0]! : '' });
    const saved = ctx.state.get(field);
    let outcome = saved;
    if (saved) report.resumed++;
    else {
      try {
        const r = await deleteObject(ctx.client, c, { preconditions: { uid: c.uid, resourceVersion: c.resourceVersion }, propagationPolicy: 'Background', signal: ctx.signal });
        outcome = r.outcome === 'deleted' && r.pending ? 'pending' : r.outcome;
      } catch (e) {
        if (ctx.signal.aborted) throw e;
        throw new RestoreError('APPLY', `pruning ${c.kind} ${c.namespace ? `${c.namespace}/` : ''}${c.name} failed: ${(e as Error).message}`, { cause: e });
      }
      await ctx.checkpoints?.set({ [field]: outcome! });
    }
    if (outcome === 'changed') report.pruneChanged++;
    else {
      bump(done, key, 'delete');
      if (outcome === 'pending') report.prunePending++;
    }
  });
}
