/**
 * The plan: reads the live objects (paged lists where the backup has many of a kind), dry-runs a server-side apply
 * of each, and counts `create` / `update` / `unchanged` per kind; any refusal fails the restore before any write.
 * Prune candidates are prune.ts's.
 */
import { isK8sError, getObject, listPages, serverSideApply, type KubeObject } from '../../k8s/index.js';
import type { ManifestEntry } from '../backup/format.js';
import { content, seenOf, type Ctx, type Seen } from './context.js';
import { describe, kindKey, type OrderItem, type Step } from './order.js';
import { pool } from '../pool.js';
import { prepare } from './prepare.js';
import { planPrune } from './prune.js';
import { bump, FIELD_MANAGER, RestoreError, type RestorePlan } from './types.js';

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

/**
 * Plans the restore of `steps` (in order; each step's objects side by side, `ctx.o.concurrency` at a time), and
 * the prune candidates when prune is on. Records what it saw of each live object in `ctx.seen`.
 * @throws RestoreError `PLAN` listing (up to 20) objects the dry run refused; K8sError `ABORTED` on `ctx.signal`.
 */
export async function makePlan(ctx: Ctx, steps: Step<ManifestEntry>[], objectOf: Map<ManifestEntry, KubeObject>): Promise<RestorePlan> {
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
