/**
 * `kind: restore`: restores Kubernetes objects from a backup archive made by `kind: backup` (a local directory or
 * S3, encrypted or not): verified in full first, planned with a server-side-apply dry run (recorded as the result
 * when `dryRun: true`), applied in dependency order with owner references rewritten to the new uids, pruned within
 * the backup's own selection when asked, under a flock-wide lock per target cluster, resumable after a re-claim.
 * See run.ts for the rules.
 */
import path from 'node:path';
import { kubeClientFor } from '../kube-client.js';
import type { KeySource } from '../backup/encryption.js';
import { archiveLimits } from '../backup/limits.js';
import { storageFor } from '../backup/storage.js';
import { RESULT_LIMIT, type JobKind } from '../types.js';
import { openSource } from './open.js';
import { RestoreError, runRestore, type ActionCounts, type RestoreReport } from './run.js';
import { restoreJobSchema, type RestoreParams } from './schema.js';

export { RestoreError, runRestore, clusterIdOf, FIELD_MANAGER, type RestoreReport, type RestorePlan, type RestoreOptions, type ActionCounts, type PruneCandidate } from './run.js';
export { openSource, resolveBackupName, type OpenedSource } from './open.js';
export { memorySource, type BackupSource, type MemoryObject } from './source.js';
export { restoreJobSchema, type RestoreParams, LATEST_PREFIX } from './schema.js';

/** Compiled parameters: the validated block with the kubeconfig, key-file and local-storage paths made absolute. */
export type CompiledRestore = RestoreParams;

/** What a schedule run records: the report, cut to fit the run record's 4 KB. */
export type CompactReport = RestoreReport & { pruneOmitted?: number; protectedOmitted?: number; perKindOmitted?: boolean };

/**
 * The engine stores a result only when its JSON is at most {@link RESULT_LIMIT} characters: lists are cut to their first `keep`
 * entries (with `pruneOmitted`/`protectedOmitted` counts), then dropped, and if the per-kind counts are still too
 * long they are summed into one `*` entry (`perKindOmitted: true`). `cronflock restore --json` prints it whole.
 */
export function compactReport(r: RestoreReport, keep = 10, limit = RESULT_LIMIT): CompactReport {
  const out: CompactReport = { ...r, plan: { ...r.plan } };
  const cut = (n: number): void => {
    if (r.plan.prune.length > n) {
      out.plan.prune = r.plan.prune.slice(0, n);
      out.pruneOmitted = r.plan.prune.length - n;
    }
    if (r.plan.protected.length > n) {
      out.plan.protected = r.plan.protected.slice(0, n);
      out.protectedOmitted = r.plan.protected.length - n;
    }
  };
  cut(keep);
  if (JSON.stringify(out).length <= limit) return out;
  cut(0);
  if (JSON.stringify(out).length <= limit) return out;
  const total = (m: Record<string, ActionCounts>): Record<string, ActionCounts> => {
    const t: ActionCounts = { create: 0, update: 0, unchanged: 0, delete: 0 };
    for (const c of Object.values(m)) for (const k of Object.keys(t) as (keyof ActionCounts)[]) t[k] += c[k];
    return { '*': t };
  };
  out.plan.byKind = total(r.plan.byKind);
  if (r.done) out.done = total(r.done);
  out.perKindOmitted = true;
  return out;
}

/** The keys a restore may use: the current one first, then older ones. */
export function keySources(p: Pick<RestoreParams, 'encryption'>): KeySource[] {
  return p.encryption ? [p.encryption.key, ...(p.encryption.previousKeys ?? [])] : [];
}

/** The client the job uses: {@link kubeClientFor} (kept under this name for its importers). */
export const restoreClient = kubeClientFor;

/** Paths in a schedule file are relative to it: kubeconfig, key files and a local storage directory. */
function compile(p: RestoreParams, baseDir: string): CompiledRestore {
  const abs = (f: string): string => path.resolve(baseDir, f);
  const key = (k: KeySource): KeySource => ('file' in k ? { file: abs(k.file) } : k);
  return {
    ...p,
    ...(p.kubeconfig ? { kubeconfig: abs(p.kubeconfig) } : {}),
    storage: p.storage.type === 'local' ? { ...p.storage, directory: abs(p.storage.directory) } : p.storage,
    ...(p.encryption
      ? { encryption: { key: key(p.encryption.key), ...(p.encryption.previousKeys ? { previousKeys: p.encryption.previousKeys.map(key) } : {}) } }
      : {}),
  };
}

/** The `restore` job kind. */
export const restoreJob: JobKind<RestoreParams, CompiledRestore> = {
  kind: 'restore',
  schema: restoreJobSchema,
  compile: async (params, ctx) => compile(params, ctx.baseDir),
  run: async (ctx, p) => {
    if (!p.dryRun && !ctx.coordination) throw new RestoreError('NO_LOCK', 'this runner gives jobs no coordination (Redis lock): a restore cannot run here');
    const client = restoreClient(p);
    const storage = await storageFor(p.storage, { client, signal: ctx.signal });
    const opened = await openSource({ storage, backup: p.backup, keys: keySources(p), limits: archiveLimits(p.limits), client, signal: ctx.signal });
    const report = await runRestore({
      client,
      source: opened.source,
      backupName: opened.name,
      dryRun: p.dryRun,
      prune: p.prune,
      allowUnauthenticatedPrune: p.allowUnauthenticatedPrune,
      concurrency: p.concurrency,
      crdTimeoutMs: p.crdTimeout,
      ...(ctx.coordination
        ? { lock: { coordination: ctx.coordination, ttlMs: p.lockTtl, waitMs: p.lockWait, owner: `${ctx.replica} (${ctx.occurrence.key})`, scope: ctx.occurrence.key } }
        : {}),
      signal: ctx.signal,
      log: ctx.log,
    });
    ctx.log.info({ done: report.done, plan: report.plan.byKind, resumed: report.resumed }, report.dryRun ? 'restore planned (dry run)' : 'restore finished');
    return compactReport(report);
  },
};
