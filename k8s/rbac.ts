/**
 * RBAC rules as `cronflock rbac` prints them: what a job needs, collected per scope (cluster-wide or per
 * namespace), merged without over-granting, and rendered as a ClusterRole and Roles. Pure: no I/O. The job kinds
 * say what they need (jobs/cleanup/rbac.ts, jobs/backup/rbac.ts, jobs/restore/rbac.ts).
 *
 * Resource names come from discovery when a cluster is at hand; without one, from the kind by Kubernetes'
 * pluralisation rule ({@link guessResource}).
 */

/** One RBAC rule (`resourceNames` limits it to those objects). */
export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** What a set of jobs needs: cluster-wide rules, and rules per namespace. */
export interface RbacNeeds {
  cluster: RbacRule[];
  namespaced: Map<string, RbacRule[]>;
}

/** No rules. */
export function emptyNeeds(): RbacNeeds {
  return { cluster: [], namespaced: new Map() };
}

/**
 * Resource name of a kind without discovery: lower case; `y` after a consonant → `ies`; `s`, `x`, `z`, `ch`,
 * `sh` → `es`; else `s` (right for the built-in kinds and most CRDs). A name that starts lower-case is taken as
 * a resource name already (backup sets accept `configmaps` as well as `ConfigMap`).
 */
export function guessResource(kind: string): string {
  if (/^[a-z]/.test(kind)) return kind;
  const k = kind.toLowerCase();
  if (k === 'endpoints') return k;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  return `${k}s`;
}

const union = (a: readonly string[], b: readonly string[]): string[] => [...new Set([...a, ...b])].sort();

/**
 * Adds `verbs` on `resource` of `group` to `rules`. Without `resourceNames` it merges into the rule for the same
 * group and resource; with them, into the rule for the same group, resource and verbs (so naming an object never
 * widens what another rule grants on other objects).
 */
export function addRule(rules: RbacRule[], group: string, resource: string, verbs: readonly string[], resourceNames?: readonly string[]): void {
  const named = resourceNames !== undefined && resourceNames.length > 0;
  const key = [...verbs].sort().join(',');
  const same = rules.find(
    (r) => r.apiGroups[0] === group && r.resources[0] === resource && (named ? r.resourceNames !== undefined && r.verbs.join(',') === key : r.resourceNames === undefined),
  );
  if (same) {
    same.verbs = union(same.verbs, verbs);
    if (named) same.resourceNames = union(same.resourceNames!, resourceNames);
  } else rules.push({ apiGroups: [group], resources: [resource], verbs: [...verbs].sort(), ...(named ? { resourceNames: [...resourceNames].sort() } : {}) });
}

/** The rules of `scope` (undefined: cluster-wide) in `needs`, created when missing. */
export function rulesOf(needs: RbacNeeds, namespace: string | undefined): RbacRule[] {
  if (namespace === undefined) return needs.cluster;
  let rules = needs.namespaced.get(namespace);
  if (!rules) needs.namespaced.set(namespace, (rules = []));
  return rules;
}

/** `b` merged into `a` (returned). */
export function mergeNeeds(a: RbacNeeds, b: RbacNeeds): RbacNeeds {
  const merge = (into: RbacRule[], from: RbacRule[]): void => {
    for (const r of from) addRule(into, r.apiGroups[0]!, r.resources[0]!, r.verbs, r.resourceNames);
  };
  merge(a.cluster, b.cluster);
  for (const [ns, rules] of b.namespaced) merge(rulesOf(a, ns), rules);
  return a;
}

/**
 * Drops named rules another rule of the same scope (or the ClusterRole) already grants: `get secrets [key]` next
 * to `get, list secrets`. A namespace left without rules is dropped too.
 */
export function simplifyNeeds(needs: RbacNeeds): RbacNeeds {
  const covers = (pool: RbacRule[], r: RbacRule): boolean =>
    pool.some((o) => o !== r && o.resourceNames === undefined && o.apiGroups[0] === r.apiGroups[0] && o.resources[0] === r.resources[0] && r.verbs.every((v) => o.verbs.includes(v)));
  const keep = (rules: RbacRule[], extra: RbacRule[]): RbacRule[] => rules.filter((r) => r.resourceNames === undefined || !(covers(rules, r) || covers(extra, r)));
  const out: RbacNeeds = { cluster: keep(needs.cluster, []), namespaced: new Map() };
  for (const [ns, rules] of needs.namespaced) {
    const kept = keep(rules, needs.cluster);
    if (kept.length > 0) out.namespaced.set(ns, kept);
  }
  return out;
}

const yamlName = (s: string): string => (/^[a-z0-9][a-z0-9.-]*$/.test(s) ? s : JSON.stringify(s));

function yamlRules(rules: RbacRule[]): string {
  return rules
    .map(
      (r) =>
        `  - apiGroups: [${r.apiGroups.map((g) => JSON.stringify(g)).join(', ')}]\n` +
        `    resources: [${r.resources.join(', ')}]\n` +
        (r.resourceNames ? `    resourceNames: [${r.resourceNames.map(yamlName).join(', ')}]\n` : '') +
        `    verbs: [${r.verbs.join(', ')}]\n`,
    )
    .join('');
}

/**
 * The manifests for `needs` as YAML documents: a ClusterRole `name` for what spans all namespaces (or is
 * cluster-scoped), and a Role `name` in each namespace for what only that namespace needs (bind the ClusterRole
 * with a ClusterRoleBinding, each Role with a RoleBinding in its namespace).
 */
export function rbacYaml(needs: RbacNeeds, name: string): string {
  const docs: string[] = [];
  if (needs.cluster.length > 0) {
    docs.push(`apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ${name}\nrules:\n${yamlRules(needs.cluster)}`);
  }
  for (const [ns, rules] of needs.namespaced) {
    docs.push(`apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nrules:\n${yamlRules(rules)}`);
  }
  return docs.join('---\n');
}
