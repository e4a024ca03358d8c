/**
 * What the restore relies on in a backup's objects beyond what the reader checked (jobs/backup/reader.ts: each
 * object's apiVersion, kind, namespace and name are its manifest entry's), checked before anything is planned:
 *
 * - **Kinds.** The entry's `resource` and `namespaced` are not in the object, and the restore acts on them:
 *   prune keeps an object when the backup has one of the same resource and name, and a CRD in the backup is
 *   recognised by `<resource>.<group>`. A ConfigMap entry claiming resource `clusterrolebindings` would make
 *   prune delete the live ConfigMap it restores. The authority is the target's discovery; for a kind it does not
 *   serve yet, the CRD in the backup that defines it (`spec.names.plural`, `spec.scope`); a kind neither knows is
 *   left to the plan, which refuses it.
 * - **Owner references**, which the restore reads before the server sees the object (to order owners first and
 *   rewrite their uids): a list of objects with string `apiVersion`, `kind`, `name` and `uid`.
 */
import { z } from 'zod';
import { isK8sError, type KubeClient, type KubeObject } from '../../k8s/index.js';
import type { ManifestEntry } from '../backup/format.js';

/** One object of the backup. */
export interface CheckItem {
  entry: ManifestEntry;
  object: KubeObject;
}

interface Crd {
  spec?: { group?: string; scope?: string; names?: { kind?: string; plural?: string }; versions?: { name?: string }[] };
}

const scope = (namespaced: boolean): string => (namespaced ? 'namespaced' : 'cluster-scoped');

const ownerReferences = z.array(
  z.object({ apiVersion: z.string().min(1), kind: z.string().min(1), name: z.string().min(1), uid: z.string().min(1), controller: z.boolean().optional() }),
);

/**
 * What is wrong with the backup's objects (see the module docs), one line each (at most `max`, then a count),
 * naming the file: `configmaps.#v1/shop/a.json: …`. Empty when nothing is. Errors: those of discovery other
 * than `RESOURCE_UNKNOWN` (e.g. `FORBIDDEN`).
 */
export async function objectProblems(client: KubeClient, items: readonly CheckItem[], signal?: AbortSignal, max = 5): Promise<string[]> {
  const problems: string[] = [];
  for (const { entry, object } of items) {
    const refs = object.metadata?.ownerReferences;
    if (refs === undefined) continue;
    const r = ownerReferences.safeParse(refs);
    if (!r.success) {
      const i = r.error.issues[0]!;
      problems.push(`${entry.path}: metadata.ownerReferences${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}: ${i.message}`);
    }
  }
  const crds = items.filter((i) => i.entry.group === 'apiextensions.k8s.io' && i.entry.kind === 'CustomResourceDefinition').map((i) => i.object as Crd);
  // One question per kind; every entry of the kind must then say the same.
  const byKind = new Map<string, { resource: string; namespaced: boolean; source: string } | null>();
  for (const { entry: e } of items) {
    const apiVersion = e.group ? `${e.group}/${e.version}` : e.version;
    const key = `${apiVersion} ${e.kind}`;
    let served = byKind.get(key);
    if (served === undefined) {
      served = null;
      try {
        const info = await client.discovery.resolve(apiVersion, e.kind, signal);
        served = { resource: info.resource, namespaced: info.namespaced, source: 'the target cluster serves' };
      } catch (err) {
        if (!isK8sError(err, 'RESOURCE_UNKNOWN')) throw err;
        const crd = crds.find((c) => c.spec?.group === e.group && c.spec?.names?.kind === e.kind && c.spec?.versions?.some((v) => v.name === e.version));
        if (crd) served = { resource: crd.spec?.names?.plural ?? '', namespaced: crd.spec?.scope === 'Namespaced', source: 'its CRD in the backup defines' };
      }
      byKind.set(key, served);
    }
    if (served && (served.resource !== e.resource || served.namespaced !== e.namespaced)) {
      problems.push(`${e.path}: its manifest entry says ${e.kind} (${apiVersion}) is resource ${e.resource}, ${scope(e.namespaced)}; ${served.source} it as ${served.resource}, ${scope(served.namespaced)}`);
    }
  }
  return problems.length > max ? [...problems.slice(0, max), `and ${problems.length - max} more`] : problems;
}
