/**
 * Helpers of the restore tests: snapshot live objects into an in-memory backup source (stripped as the backup
 * writer strips them), empty a namespace (there is no controller-manager: objects are deleted one by one), and
 * compare restored objects with the originals field by field, server-set fields aside.
 */
import { expect } from 'vitest';
import { deleteObject, getObject, type KubeClient, type KubeObject } from '../../k8s/index.js';
import type { BackupSelection } from '../../jobs/backup/format.js';
import { memorySource, type BackupSource, type MemoryObject } from '../../jobs/restore/source.js';
import type { JobLogger } from '../../jobs/types.js';

/** A logger that keeps lines (for assertions) and prints nothing. */
export function memoryLog(): JobLogger & { lines: unknown[] } {
  const lines: unknown[] = [];
  const add = (obj: object | string, msg?: string): void => void lines.push({ obj, msg });
  return { lines, info: add, warn: add, error: add, debug: add };
}

/** A reference to a live object. */
export interface Ref {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** Reads the objects and their resources: what a backup of them would hold. */
export async function snapshot(client: KubeClient, refs: Ref[]): Promise<MemoryObject[]> {
  const out: MemoryObject[] = [];
  for (const r of refs) {
    const info = await client.discovery.resolve(r.apiVersion, r.kind);
    out.push({ info, object: await getObject(client, r) });
  }
  return out;
}

/** An in-memory backup of `objects` taken from `clusterId` with `selection`. */
export function sourceOf(objects: MemoryObject[], selection: BackupSelection, clusterId = 'source-cluster', name = 'test-backup'): BackupSource {
  return memorySource(objects, { name, clusterId, selection });
}

/** Deletes each object (no controller-manager: no garbage collection, so dependents go one by one). */
export async function deleteAll(client: KubeClient, refs: Ref[]): Promise<void> {
  for (const r of refs) await deleteObject(client, r, { gracePeriodSeconds: 0 });
}

/** Fields the server sets or that a restore cannot keep, removed before comparing. */
export function comparable(o: KubeObject): Record<string, unknown> {
  const c = structuredClone(o) as Record<string, unknown> & { metadata: Record<string, unknown> };
  delete c.status;
  for (const f of ['uid', 'resourceVersion', 'creationTimestamp', 'generation', 'managedFields', 'selfLink']) delete c.metadata[f];
  // a Service gets a cluster IP from the target's range (the restore leaves it to the cluster)
  if (c.kind === 'Service' && c.spec && typeof c.spec === 'object') {
    delete (c.spec as Record<string, unknown>).clusterIP;
    delete (c.spec as Record<string, unknown>).clusterIPs;
  }
  // owner references are compared by what they point at; their uids are checked separately
  if (Array.isArray(c.metadata.ownerReferences)) {
    c.metadata.ownerReferences = (c.metadata.ownerReferences as Record<string, unknown>[]).map(({ uid: _u, ...rest }) => rest);
  }
  return c;
}

/** Asserts that `after` is `before` field by field (see {@link comparable}). */
export function expectSameObject(before: KubeObject, after: KubeObject): void {
  expect(comparable(after), `${before.kind} ${before.metadata?.name}`).toEqual(comparable(before));
}
