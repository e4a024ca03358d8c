/**
 * The shapes of a restore: its inputs, its plan and report with their per-kind counts, the error that stops it, and
 * the field manager of its applies. No logic besides counting.
 */
import type { KubeClient } from '../../k8s/index.js';
import type { JobCoordination, JobLogger } from '../types.js';
import type { BackupSource } from './source.js';

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

/** Zero counts. */
export const empty = (): ActionCounts => ({ create: 0, update: 0, unchanged: 0, delete: 0 });
/** Adds `n` (default 1) to action `a` of kind `key` in `m`, creating the kind's counts when absent. */
export const bump = (m: Record<string, ActionCounts>, key: string, a: keyof ActionCounts, n = 1): void => {
  (m[key] ??= empty())[a] += n;
};
