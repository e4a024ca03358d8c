/**
 * Apply: server-side applies each step's objects (field manager cronflock, force), checkpoints each one right
 * after its apply, counts it against what the plan saw, and waits for restored CRDs to become Established.
 */
import type { KubeObject } from '../../k8s/index.js';
import type { ManifestEntry } from '../backup/format.js';
import { getObject, serverSideApply } from '../../k8s/index.js';
import { content, type Ctx } from './context.js';
import { describe, kindKey, type OrderItem, type Step } from './order.js';
import { pool } from '../pool.js';
import { prepare } from './prepare.js';
import { bump, FIELD_MANAGER, RestoreError, type ActionCounts, type RestoreReport } from './types.js';
import { sleep } from '../../runner/time/wait.js';

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

/**
 * Applies `steps` in order (objects resumed from the checkpoints are counted, not applied again) into
 * `report.done`. Errors: RestoreError `APPLY` (resumable) or `CRD_TIMEOUT`; K8sError `ABORTED` on `ctx.signal`.
 */
export async function applyAll(ctx: Ctx, steps: Step<ManifestEntry>[], objectOf: Map<ManifestEntry, KubeObject>, report: RestoreReport): Promise<void> {
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
