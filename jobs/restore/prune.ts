/**
 * Prune: which live objects the backup's own selection covers now but the backup does not hold (never the
 * protected, the namespaced-away, the controller-owned or what Kubernetes makes itself), dry-run as part of the plan;
 * then their deletes with uid and resourceVersion preconditions, checkpointed one by one.
 */
import { deleteObject, type PartialObjectMetadata } from '../../k8s/index.js';
import { resolveTargets, selectObjects } from '../backup/selection.js';
import { PROTECT_KEY, PROTECTED_NAMESPACES } from '../cleanup/schema.js';
import type { Ctx } from './context.js';
import { kindKey } from './order.js';
import { pool } from '../pool.js';
import { bump, RestoreError, type PruneCandidate, type RestorePlan, type RestoreReport } from './types.js';

const KUBERNETES_MADE = (kind: string, name: string, obj: { type?: string }): boolean =>
  (kind === 'ServiceAccount' && name === 'default') ||
  (kind === 'ConfigMap' && name === 'kube-root-ca.crt') ||
  (kind === 'Secret' && obj.type === 'kubernetes.io/service-account-token');

/**
 * Adds the prune candidates (and the protected objects) to `plan`, and dry-runs their deletes.
 * @throws RestoreError `PLAN` when the dry run refuses a delete (nothing was applied).
 */
export async function planPrune(ctx: Ctx, plan: RestorePlan): Promise<void> {
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

/**
 * Deletes `candidates` (checkpointed, resumable), counting deletes, changed and pending ones into `report`.
 * @throws RestoreError `APPLY` when a delete fails (what was done is checkpointed).
 */
export async function pruneAll(ctx: Ctx, candidates: PruneCandidate[], report: RestoreReport): Promise<void> {
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
