/**
 * The minimal RBAC for cleanup jobs: which verbs on which resources in which namespaces they need (the same
 * set the preflight asks about), printed as a ClusterRole for selectors that span all namespaces, select
 * namespaces by label or name cluster-scoped kinds, and a Role per namespace for selectors that list theirs.
 *
 * Resource names come from discovery when a cluster is at hand (`resolve`); without one, from the kind by
 * Kubernetes' pluralisation rule (lower case; `y` → `ies`; `s`, `x`, `z`, `ch`, `sh` → `es`; else `s`), which
 * is right for the built-in kinds cleanup is used on and for most CRDs.
 */
import { splitApiVersion } from '../../k8s/index.js';
import { expandSelector, USAGE_KINDS } from './evaluate.js';
import type { CleanupParams } from './schema.js';

/** One RBAC rule. */
export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** What a set of cleanup jobs needs: cluster-wide rules, and rules per namespace. */
export interface RbacNeeds {
  cluster: RbacRule[];
  namespaced: Map<string, RbacRule[]>;
}

/** Resource name of a kind without discovery (see the module docs). */
export function guessResource(kind: string): string {
  const k = kind.toLowerCase();
  if (k === 'endpoints') return k;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  return `${k}s`;
}

function addRule(rules: RbacRule[], group: string, resource: string, verbs: string[]): void {
  const same = rules.find((r) => r.apiGroups[0] === group && r.resources[0] === resource);
  if (same) same.verbs = [...new Set([...same.verbs, ...verbs])].sort();
  else rules.push({ apiGroups: [group], resources: [resource], verbs: [...verbs].sort() });
}

/**
 * The permissions `jobs` need. `resolve(apiVersion, kind)` gives the resource name and scope (discovery);
 * without it, {@link guessResource} and namespaced are assumed.
 */
export async function rbacNeeds(
  jobs: CleanupParams[],
  resolve?: (apiVersion: string, kind: string) => Promise<{ resource: string; namespaced: boolean }>,
): Promise<RbacNeeds> {
  const needs: RbacNeeds = { cluster: [], namespaced: new Map() };
  for (const p of jobs) {
    for (const raw of p.resources) {
      const s = expandSelector(raw);
      const { group } = splitApiVersion(s.apiVersion);
      const r = resolve ? await resolve(s.apiVersion, s.kind) : { resource: guessResource(s.kind), namespaced: true };
      const writes: [string, string[]][] =
        p.action === 'delete' ? [[r.resource, ['delete']]] : p.action === 'patch' ? [[r.resource, ['patch']]] : p.action === 'scale' ? [[`${r.resource}/scale`, ['patch']]] : [];
      const usage =
        s.preset === 'unused-configmaps' || s.preset === 'unused-secrets'
          ? await Promise.all(
              USAGE_KINDS.map(async (k) => ({ group: splitApiVersion(k.apiVersion).group, resource: resolve ? (await resolve(k.apiVersion, k.kind)).resource : guessResource(k.kind) })),
            )
          : [];
      const grant = (rules: RbacRule[]): void => {
        addRule(rules, group, r.resource, ['list']);
        for (const [res, verbs] of writes) addRule(rules, group, res, verbs);
        for (const u of usage) addRule(rules, u.group, u.resource, ['list']);
      };
      if (!r.namespaced || !s.namespaces) {
        if (r.namespaced && s.namespaceSelector) addRule(needs.cluster, '', 'namespaces', ['list']);
        grant(needs.cluster);
      } else {
        for (const ns of s.namespaces.filter((n) => !s.excludeNamespaces.includes(n))) {
          const rules = needs.namespaced.get(ns) ?? [];
          grant(rules);
          needs.namespaced.set(ns, rules);
        }
      }
    }
  }
  return needs;
}

function yamlRules(rules: RbacRule[]): string {
  return rules
    .map(
      (r) =>
        `  - apiGroups: [${r.apiGroups.map((g) => JSON.stringify(g)).join(', ')}]\n` +
        `    resources: [${r.resources.join(', ')}]\n` +
        `    verbs: [${r.verbs.join(', ')}]\n`,
    )
    .join('');
}

/**
 * The manifests for `needs` as YAML documents: a ClusterRole `name` for what spans all namespaces (or is
 * cluster-scoped), and a Role `name` in each namespace for what only those namespaces need (bind the
 * ClusterRole with a ClusterRoleBinding, each Role with a RoleBinding in its namespace).
 */
export function rbacYaml(needs: RbacNeeds, name = 'cronflock-cleanup'): string {
  const docs: string[] = [];
  if (needs.cluster.length > 0) {
    docs.push(`apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ${name}\nrules:\n${yamlRules(needs.cluster)}`);
  }
  for (const [ns, rules] of needs.namespaced) {
    docs.push(`apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nrules:\n${yamlRules(rules)}`);
  }
  return docs.join('---\n');
}
