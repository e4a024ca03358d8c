/**
 * The order a restore applies objects in. Pure: no I/O.
 *
 * Phases (after backup-restore-operator's and Velero's restore orders):
 *   0 CustomResourceDefinitions (the restore then waits until each is `Established`, so its kinds are served)
 *   1 Namespaces
 *   2 other cluster-scoped objects (ClusterRoles, StorageClasses, PriorityClasses, ...)
 *   3 namespaced objects workloads depend on: ServiceAccounts, Secrets, ConfigMaps, PersistentVolumeClaims,
 *     Roles, RoleBindings, LimitRanges, ResourceQuotas, Services, Endpoints(lices), NetworkPolicies
 *   4 every other namespaced object (Deployments, StatefulSets, Jobs, custom objects, ...)
 *   5 admission webhooks and APIServices, last: applied earlier, a webhook whose service is not restored yet
 *     would reject (failurePolicy Fail) or skip every later write, and an unavailable APIService breaks discovery.
 *
 * Owner references override the phases: an object whose owner is in the backup is applied after it (its own
 * phase or its owner's, whichever is later, one level deeper), because the reference must carry the owner's
 * new uid, which exists only once the owner is applied.
 */
import type { ManifestEntry } from '../backup/format.js';

/** The phase number of a kind (see the module docs). */
export function phaseOf(e: Pick<ManifestEntry, 'group' | 'kind' | 'namespaced'>): number {
  if (e.group === 'apiextensions.k8s.io' && e.kind === 'CustomResourceDefinition') return 0;
  if (e.group === '' && e.kind === 'Namespace') return 1;
  if (LAST.has(`${e.kind}.${e.group}`)) return 5;
  if (!e.namespaced) return 2;
  if (FOUNDATIONS.has(`${e.kind}.${e.group}`)) return 3;
  return 4;
}

const LAST = new Set([
  'ValidatingWebhookConfiguration.admissionregistration.k8s.io',
  'MutatingWebhookConfiguration.admissionregistration.k8s.io',
  'ValidatingAdmissionPolicy.admissionregistration.k8s.io',
  'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io',
  'MutatingAdmissionPolicy.admissionregistration.k8s.io',
  'MutatingAdmissionPolicyBinding.admissionregistration.k8s.io',
  'APIService.apiregistration.k8s.io',
]);

const FOUNDATIONS = new Set([
  'ServiceAccount.',
  'Secret.',
  'ConfigMap.',
  'PersistentVolumeClaim.',
  'LimitRange.',
  'ResourceQuota.',
  'Service.',
  'Endpoints.',
  'EndpointSlice.discovery.k8s.io',
  'Role.rbac.authorization.k8s.io',
  'RoleBinding.rbac.authorization.k8s.io',
  'NetworkPolicy.networking.k8s.io',
]);

/** One object to restore with what ordering needs: its entry and the original uids of its owners. */
export interface OrderItem<E extends ManifestEntry = ManifestEntry> {
  entry: E;
  /** `metadata.ownerReferences[].uid` of the backed-up object (original uids). */
  ownerUids: string[];
}

/** A step of the restore: objects that can be applied together (none owns another of the same step). */
export interface Step<E extends ManifestEntry = ManifestEntry> {
  phase: number;
  /** 0 for objects without an owner in the backup; owner depth + 1 otherwise. */
  depth: number;
  items: OrderItem<E>[];
}

/**
 * Groups the objects into steps in apply order: by (phase, depth) where an object with owners in the backup gets
 * phase = max(own phase, owners' phases) and depth = max(owners' depth in that phase) + 1. Within a step, the
 * manifest order is kept. Throws `RangeError` when owner references form a cycle (Kubernetes forbids them, so a
 * cycle means a damaged backup).
 */
export function orderSteps<E extends ManifestEntry>(items: OrderItem<E>[]): Step<E>[] {
  const byUid = new Map(items.map((it) => [it.entry.uid, it]));
  const rank = new Map<OrderItem<E>, { phase: number; depth: number }>();
  const visiting = new Set<OrderItem<E>>();
  const rankOf = (it: OrderItem<E>): { phase: number; depth: number } => {
    const known = rank.get(it);
    if (known) return known;
    if (visiting.has(it)) throw new RangeError(`owner references form a cycle through ${describe(it.entry)}`);
    visiting.add(it);
    let phase = phaseOf(it.entry);
    let depth = 0;
    const owners = it.ownerUids.map((u) => byUid.get(u)).filter((o): o is OrderItem<E> => o !== undefined && o !== it);
    const ranks = owners.map(rankOf);
    for (const r of ranks) phase = Math.max(phase, r.phase);
    for (const r of ranks) if (r.phase === phase) depth = Math.max(depth, r.depth + 1);
    visiting.delete(it);
    const r = { phase, depth };
    rank.set(it, r);
    return r;
  };
  const steps = new Map<string, Step<E>>();
  for (const it of items) {
    const r = rankOf(it);
    const k = `${r.phase}:${r.depth}`;
    let s = steps.get(k);
    if (!s) steps.set(k, (s = { ...r, items: [] }));
    s.items.push(it);
  }
  return [...steps.values()].sort((a, b) => a.phase - b.phase || a.depth - b.depth);
}

/** `Kind[.group] [namespace/]name`, for messages. */
export function describe(e: Pick<ManifestEntry, 'kind' | 'group' | 'namespace' | 'name'>): string {
  return `${kindKey(e)} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
}

/** `Kind` for the core group, `Kind.group` otherwise: the key of per-kind counts in plans and reports. */
export function kindKey(e: Pick<ManifestEntry, 'kind' | 'group'>): string {
  return e.group ? `${e.kind}.${e.group}` : e.kind;
}
