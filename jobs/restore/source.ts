/**
 * Where a restore reads a backup from: anything with a manifest and its verified objects. The backup reader's
 * `OpenedBackup` (jobs/backup/format.ts, reader.ts) is one; {@link memorySource} builds one from objects in
 * memory (tests, and restoring objects a program already holds), with the same stripping and layout as the
 * backup writer.
 */
import type { ResourceInfo } from '../../k8s/index.js';
import { FORMAT_VERSION, storedObject, type BackupManifest, type BackupObject, type BackupSelection } from '../backup/format.js';

/** A backup as the restore reads it: the manifest, and every object once (checked against its entry). */
export interface BackupSource {
  manifest: BackupManifest;
  /**
   * Whether what the source says comes from someone trusted: true for an encrypted archive (authenticated by
   * AES-GCM under the key) and for objects a program holds itself; false for a plain archive, which anyone who
   * can write to its storage can make. Prune (which deletes by the manifest's selection) needs it.
   */
  authenticated: boolean;
  objects(options?: { signal?: AbortSignal }): AsyncIterable<BackupObject>;
}

/** One object for {@link memorySource}: a live object (server fields are stripped) and its resource. */
export interface MemoryObject {
  info: Pick<ResourceInfo, 'group' | 'version' | 'resource' | 'kind' | 'namespaced'>;
  object: Record<string, unknown>;
}

/**
 * A {@link BackupSource} over objects in memory, as the backup writer would have stored them (stripped, original
 * uid in the manifest). Authenticated: the caller holds the objects itself. `TypeError` for an object without a name (or a namespaced one without a namespace).
 */
export function memorySource(
  objects: MemoryObject[],
  o: { name: string; clusterId: string; selection: BackupSelection },
): BackupSource {
  const stored: BackupObject[] = objects.map(({ info, object }) => {
    const { data, entry } = storedObject(info, object);
    return { entry, object: JSON.parse(data.toString('utf8')) as Record<string, unknown> };
  });
  const counts: Record<string, number> = {};
  for (const { entry } of stored) {
    const k = entry.group ? `${entry.resource}.${entry.group}` : entry.resource;
    counts[k] = (counts[k] ?? 0) + 1;
  }
  const manifest: BackupManifest = {
    formatVersion: FORMAT_VERSION,
    cronflockVersion: 'memory',
    kubernetesVersion: '',
    clusterId: o.clusterId,
    createdAt: new Date().toISOString(),
    schedule: null,
    occurrence: null,
    dueTime: null,
    manual: true,
    name: o.name,
    selection: o.selection,
    encryption: null,
    objects: stored.map((s) => s.entry),
    counts,
  };
  return {
    manifest,
    authenticated: true,
    async *objects() {
      for (const s of stored) yield { entry: s.entry, object: structuredClone(s.object) };
    },
  };
}
