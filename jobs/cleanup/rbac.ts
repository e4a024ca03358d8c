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
import { addRule, guessResource, rbacYaml as renderRbac, type RbacNeeds, type RbacRule } from '../../k8s/rbac.js';
import { expandSelector, USAGE_KINDS } from './evaluate.js';
import type { CleanupParams } from './schema.js';

export { guessResource, type RbacNeeds, type RbacRule } from '../../k8s/rbac.js';

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

/** The manifests for `needs` (k8s/rbac.ts `rbacYaml`), named `cronflock-cleanup` unless `name` is given. */
export function rbacYaml(needs: RbacNeeds, name = 'cronflock-cleanup'): string {
  return renderRbac(needs, name);
}
