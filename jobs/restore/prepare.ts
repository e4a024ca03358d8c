/**
 * The object to apply, from the stored one: server fields stripped, the entry's name and namespace, owner
 * references rewritten to the target's uids (or dropped), a Service's allocated cluster IPs left to the target.
 */
import { getObject, isK8sError, type KubeObject } from '../../k8s/index.js';
import { STRIPPED_METADATA_FIELDS, type ManifestEntry } from '../backup/format.js';
import type { Ctx } from './context.js';
import { describe } from './order.js';

/** The owner references of `obj` as stored (empty when none). */
export function ownerRefs(obj: KubeObject): { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[] {
  return (obj.metadata?.ownerReferences ?? []) as { apiVersion: string; kind: string; name: string; uid: string }[];
}

/**
 * The object to apply: the stored one without server fields (defensively; the writer strips them), with the
 * entry's namespace, owner references rewritten (see the module docs), and a Service's allocated `clusterIP(s)`
 * left to the target cluster (unless headless), as Velero does: the source's IP may be taken or outside the
 * target's service range.
 */
export async function prepare(ctx: Ctx, entry: ManifestEntry, stored: KubeObject, dry: boolean): Promise<KubeObject> {
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
