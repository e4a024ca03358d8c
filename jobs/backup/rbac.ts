/**
 * The RBAC a backup needs (printed by `cronflock rbac`), and what it and a restore share: the kinds a selection
 * covers, with where their objects are, and the Secrets a job reads by name.
 *
 * A backup needs `list` on each selected kind: in each namespace a set lists by name (it lists them one by one,
 * jobs/backup/selection.ts), else cluster-wide; `get` on namespace `kube-system` (the cluster id); `get` on the
 * Secrets named for its key and its S3 credentials. Discovery needs nothing: every authenticated user may read it.
 *
 * Kinds come from discovery when a cluster is at hand, exactly as the backup resolves them (`resolveTargets`:
 * `kindsRegexp` and "every kind of the group/version" included, preset parts the server lacks skipped); without
 * one, from the kinds a set names (k8s/rbac.ts `guessResource`, namespaced assumed), and a set that names none
 * is refused: only discovery can say which kinds it covers.
 */
import type { KubeClient } from '../../k8s/index.js';
import { addRule, emptyNeeds, guessResource, rulesOf, type RbacNeeds } from '../../k8s/rbac.js';
import type { KeySource } from './encryption.js';
import { isBackupError } from './errors.js';
import { expandResourceSets, type ExpandedSet } from './presets.js';
import type { BackupParams } from './schema.js';
import { resolveTargets } from './selection.js';
import type { StorageParams } from './storage.js';

/** A schedule file that `cronflock rbac` cannot answer for (message names the schedule and field). */
export class RbacError extends Error {
  readonly code = 'RBAC';
  constructor(message: string) {
    super(message);
    this.name = 'RbacError';
  }
}

/** One kind a selection covers, and where its objects are. */
export interface SelectedKind {
  group: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  /** The namespaces its objects are listed in, one by one; undefined: all namespaces (or cluster-scoped). */
  namespaces?: string[];
}

/** How to resolve kinds: discovery of a cluster, or none. */
export interface KindResolution {
  discovery?: Pick<KubeClient, 'discovery'>;
  /** Notes for the user (a part skipped, a resource name guessed). */
  warn: (message: string) => void;
}

/** The namespaces a set lists one by one (selection.ts `selectObjects`), or undefined for all. */
function namespacesOf(set: ExpandedSet, namespaced: boolean): string[] | undefined {
  if (!namespaced || !set.namespaces || set.namespaceRegexp !== undefined) return undefined;
  return set.namespaces.filter((n) => !set.excludeNamespaces?.includes(n));
}

const kindNamed = (names: readonly string[] | undefined, k: string, resource: string): boolean => !!names && (names.includes(k) || names.includes(resource));

/**
 * The kinds `sets` cover (see the module docs). `strict`: as the backup resolves them (an unknown kind or
 * apiVersion of a set that is not a preset part is an error); not strict (a restore, whose kinds may come with a
 * CRD of the backup): a kind the server does not serve is named by the pluralisation rule when the set names it,
 * and left out with a warning when not. `where` prefixes messages, e.g. `schedule nightly`. Errors:
 * {@link RbacError} for a set that names no kinds without discovery; those of `resolveTargets` (strict).
 */
export async function selectedKinds(sets: readonly ExpandedSet[], where: string, strict: boolean, r: KindResolution): Promise<SelectedKind[]> {
  const out: SelectedKind[] = [];
  const guess = (set: ExpandedSet, k: string): SelectedKind => {
    const namespaces = namespacesOf(set, true);
    return { group: set.apiVersion.includes('/') ? set.apiVersion.split('/')[0]! : '', resource: guessResource(k), kind: k, namespaced: true, ...(namespaces ? { namespaces } : {}) };
  };
  if (!r.discovery) {
    for (const [i, set] of sets.entries()) {
      if (set.kinds === undefined || set.kindsRegexp !== undefined) {
        const how = set.kindsRegexp !== undefined ? `by kindsRegexp ${JSON.stringify(set.kindsRegexp)}` : `as every kind of ${set.apiVersion}`;
        throw new RbacError(`${where}: resourceSets[${i}] selects kinds ${how}: only the cluster's discovery can say which; give --kubeconfig or --discover`);
      }
      for (const k of set.kinds) if (!kindNamed(set.excludeKinds, k, guessResource(k))) out.push(guess(set, k));
    }
    return out;
  }
  const resolvable = strict ? sets : sets.map((s) => ({ ...s, optional: true }));
  const targets = await resolveTargets(r.discovery, resolvable, undefined, (msg) => r.warn(`${where}: ${msg}`));
  for (const t of targets) {
    const namespaces = namespacesOf(t.set, t.info.namespaced);
    out.push({ group: t.info.group, resource: t.info.resource, kind: t.info.kind, namespaced: t.info.namespaced, ...(namespaces ? { namespaces } : {}) });
  }
  if (!strict) {
    for (const [i, set] of sets.entries()) {
      for (const k of set.kinds ?? []) {
        if (targets.some((t) => t.index === i && (t.info.kind === k || t.info.resource === k)) || kindNamed(set.excludeKinds, k, guessResource(k))) continue;
        const g = guess(set, k);
        r.warn(`${where}: resourceSets[${i}]: the cluster does not serve ${k} in ${set.apiVersion} (yet): named ${g.resource}, namespaced, by the pluralisation rule`);
        out.push(g);
      }
    }
  }
  return out;
}

/** Grants `verbs` on kind `k` where its objects are: a Role per namespace it is listed in, else the ClusterRole. */
export function grantKind(needs: RbacNeeds, k: SelectedKind, verbs: readonly string[]): void {
  for (const ns of k.namespaces ?? [undefined]) addRule(rulesOf(needs, ns), k.group, k.resource, verbs);
}

/** `get` on the Secrets a job reads by name: its keys' and its S3 credentials' (a Role in each Secret's namespace). */
export function grantNamedSecrets(needs: RbacNeeds, keys: readonly KeySource[], storage: StorageParams): void {
  for (const k of keys) if ('secret' in k) addRule(rulesOf(needs, k.secret.namespace), '', 'secrets', ['get'], [k.secret.name]);
  if (storage.type === 's3' && storage.credentials && 'secret' in storage.credentials) {
    const { namespace, name } = storage.credentials.secret;
    addRule(rulesOf(needs, namespace), '', 'secrets', ['get'], [name]);
  }
}

/** The permissions of `jobs`, backups named by schedule (see the module docs). Errors: those of {@link selectedKinds}. */
export async function backupRbacNeeds(jobs: readonly { schedule: string; params: BackupParams }[], r: KindResolution): Promise<RbacNeeds> {
  const needs = emptyNeeds();
  for (const { schedule, params } of jobs) {
    addRule(needs.cluster, '', 'namespaces', ['get'], ['kube-system']);
    let kinds: SelectedKind[];
    try {
      kinds = await selectedKinds(expandResourceSets(params.resourceSets), `schedule ${schedule}`, true, r);
    } catch (e) {
      // What the backup itself would fail with (an unknown kind), said for this schedule.
      if (isBackupError(e, 'INVALID')) throw new RbacError(`schedule ${schedule}: ${e.message}`);
      throw e;
    }
    for (const k of kinds) grantKind(needs, k, ['list']);
    grantNamedSecrets(needs, params.encryption ? [params.encryption.key] : [], params.storage);
  }
  return needs;
}
