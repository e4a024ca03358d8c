/**
 * The RBAC a restore needs (printed by `cronflock rbac`). What it restores is what the backup schedule it
 * restores from selects (the manifest's selection is that schedule's), so its kinds come from that schedule:
 * `backup: latest:<schedule>`, or an archive name, which starts with the schedule's name.
 *
 * Per kind in scope: `get`, `list` (the plan reads live objects, with paged lists where a kind has several),
 * `create` and `patch` (server-side apply: `patch`, and `create` for an object that does not exist), in each
 * namespace the selection lists by name, else cluster-wide; with prune also `delete` (never on Namespaces and
 * CRDs, which prune never deletes). Namespaces: `get` on `kube-system` (the cluster id) and on the namespaces
 * objects are restored into (all, unless every set lists its namespaces); restoring Namespaces or CRDs is
 * covered by their kinds. The Secrets of its keys and S3 credentials: `get` by name. The per-cluster lock is
 * in Redis: nothing in Kubernetes.
 *
 * Not covered: an owner reference to a kind outside the backup makes the restore read that owner (`get` on
 * its kind): grant it if the restore fails with `forbidden` on one.
 */
import { addRule, emptyNeeds, type RbacNeeds } from '../../k8s/rbac.js';
import { parseBackupName } from '../backup/format.js';
import type { ExpandedSet } from '../backup/presets.js';
import { grantKind, grantNamedSecrets, selectedKinds, type KindResolution } from '../backup/rbac.js';
import { LATEST_PREFIX, type RestoreParams } from './schema.js';

/** The backup schedule whose archives `backup` (a restore's `backup:`) names; undefined when it names none. */
export function backupScheduleOf(backup: string): string | undefined {
  if (backup.startsWith(LATEST_PREFIX)) return backup.slice(LATEST_PREFIX.length);
  return parseBackupName(backup)?.schedule;
}

/** Kinds a restore never deletes (run.ts `planPrune`): a delete would cascade to everything in them. */
const NEVER_PRUNED = new Set(['/Namespace', 'apiextensions.k8s.io/CustomResourceDefinition']);

/**
 * The permissions of `jobs`: each restore schedule with the (expanded) selection of the backup schedule it
 * restores from. Errors: those of `selectedKinds`.
 */
export async function restoreRbacNeeds(
  jobs: readonly { schedule: string; params: RestoreParams; selection: readonly ExpandedSet[] }[],
  r: KindResolution,
): Promise<RbacNeeds> {
  const needs = emptyNeeds();
  for (const { schedule, params, selection } of jobs) {
    addRule(needs.cluster, '', 'namespaces', ['get'], ['kube-system']);
    const kinds = await selectedKinds(selection, `schedule ${schedule}`, false, r);
    const namespaces = new Set<string>();
    let allNamespaces = false;
    for (const k of kinds) {
      const prune = params.prune && !NEVER_PRUNED.has(`${k.group}/${k.kind}`);
      grantKind(needs, k, ['create', 'get', 'list', 'patch', ...(prune ? ['delete'] : [])]);
      if (!k.namespaced) continue;
      if (k.namespaces) for (const n of k.namespaces) namespaces.add(n);
      else allNamespaces = true;
    }
    // The restore asks whether each object's namespace exists before it plans the object.
    if (allNamespaces) addRule(needs.cluster, '', 'namespaces', ['get']);
    else if (namespaces.size > 0) addRule(needs.cluster, '', 'namespaces', ['get'], [...namespaces]);
    grantNamedSecrets(needs, params.encryption ? [params.encryption.key, ...(params.encryption.previousKeys ?? [])] : [], params.storage);
  }
  return needs;
}
