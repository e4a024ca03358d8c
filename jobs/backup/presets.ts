/**
 * Backup presets: named selections expanded into resource sets before a run.
 *
 * - `namespace-apps`: what makes up an application in its namespaces: ConfigMaps (but not the
 *   `kube-root-ca.crt` each namespace gets), Secrets (but not service-account tokens, which the cluster mints),
 *   Services, ServiceAccounts, PersistentVolumeClaims, Deployments, StatefulSets, DaemonSets, Jobs, CronJobs,
 *   Ingresses, NetworkPolicies, Roles, RoleBindings, HorizontalPodAutoscalers and PodDisruptionBudgets. Not Pods,
 *   ReplicaSets or Endpoints: their controllers make them again. Needs `namespaces` or `namespaceRegexp`.
 * - `cluster-config`: CRDs, ClusterRoles and ClusterRoleBindings (not the `system:` ones the API server
 *   reconciles), Namespaces (not kube-system, kube-public, kube-node-lease), StorageClasses, PriorityClasses (not
 *   `system-*`), admission webhooks and ValidatingAdmissionPolicies with their bindings.
 *
 * A preset's group/version the server does not serve is skipped (logged), not an error.
 */
import type { ResourceSet } from './format.js';
import type { BackupResourceSetParams } from './schema.js';

/** A resource set ready to resolve; `optional` sets are skipped when the server lacks their apiVersion. */
export interface ExpandedSet extends ResourceSet {
  /** The preset it came from, for logs. */
  preset?: string;
  /** True for preset parts: an apiVersion the server does not serve is skipped instead of failing. */
  optional?: boolean;
}

type Part = Pick<ResourceSet, 'apiVersion' | 'kinds' | 'fieldSelector' | 'excludeNameRegexps'>;

const NAMESPACE_APPS: Part[] = [
  { apiVersion: 'v1', kinds: ['ConfigMap'], excludeNameRegexps: ['^kube-root-ca\\.crt$'] },
  { apiVersion: 'v1', kinds: ['Secret'], fieldSelector: 'type!=kubernetes.io/service-account-token' },
  { apiVersion: 'v1', kinds: ['Service', 'ServiceAccount', 'PersistentVolumeClaim'] },
  { apiVersion: 'apps/v1', kinds: ['Deployment', 'StatefulSet', 'DaemonSet'] },
  { apiVersion: 'batch/v1', kinds: ['Job', 'CronJob'] },
  { apiVersion: 'networking.k8s.io/v1', kinds: ['Ingress', 'NetworkPolicy'] },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kinds: ['Role', 'RoleBinding'] },
  { apiVersion: 'autoscaling/v2', kinds: ['HorizontalPodAutoscaler'] },
  { apiVersion: 'policy/v1', kinds: ['PodDisruptionBudget'] },
];

const CLUSTER_CONFIG: Part[] = [
  { apiVersion: 'apiextensions.k8s.io/v1', kinds: ['CustomResourceDefinition'] },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kinds: ['ClusterRole', 'ClusterRoleBinding'], excludeNameRegexps: ['^system:'] },
  { apiVersion: 'v1', kinds: ['Namespace'], excludeNameRegexps: ['^kube-(system|public|node-lease)$'] },
  { apiVersion: 'storage.k8s.io/v1', kinds: ['StorageClass'] },
  { apiVersion: 'scheduling.k8s.io/v1', kinds: ['PriorityClass'], excludeNameRegexps: ['^system-'] },
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kinds: ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'],
  },
];

/** Expands presets into their resource sets (the set's namespace, name and label filters apply to each part). */
export function expandResourceSets(sets: readonly BackupResourceSetParams[]): ExpandedSet[] {
  const out: ExpandedSet[] = [];
  for (const s of sets) {
    const { preset, ...rest } = s;
    const common = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Omit<ResourceSet, 'apiVersion'>;
    if (!preset) {
      out.push({ ...common, apiVersion: s.apiVersion! });
      continue;
    }
    for (const part of preset === 'namespace-apps' ? NAMESPACE_APPS : CLUSTER_CONFIG) {
      const excl = [...(part.excludeNameRegexps ?? []), ...(common.excludeNameRegexps ?? [])];
      out.push({ ...common, ...part, ...(excl.length > 0 ? { excludeNameRegexps: excl } : {}), preset, optional: true });
    }
  }
  return out;
}
