/**
 * From resource sets to objects: kinds resolved through discovery (any built-in or CRD kind of the set's
 * apiVersion), objects streamed from paged lists (label and field selectors sent to the server; names,
 * namespaces, excludes and the exclude label checked here), each object yielded once even when several sets
 * select it or a 410 restarts a list. Never holds a list: one page at a time, plus one key per object seen.
 */
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import { listPages, type KubeClient, type ResourceInfo } from '../../k8s/index.js';
import { BackupError } from './errors.js';
import { EXCLUDE_LABEL, type ResourceSet } from './format.js';
import type { ExpandedSet } from './presets.js';

/** One resource of one set, ready to list. */
export interface Target {
  set: ExpandedSet;
  /** Index of the set in the expanded list (for messages). */
  index: number;
  info: ResourceInfo;
}

/** Called for a preset part skipped because the server does not serve it. */
export type SkipLog = (msg: string) => void;

function kindMatches(names: readonly string[] | undefined, info: Pick<ResourceInfo, 'kind' | 'resource'>): boolean {
  return !!names && (names.includes(info.kind) || names.includes(info.resource));
}

/**
 * Resolves every set's kinds through discovery. Errors: `BackupError` `INVALID` naming the set
 * (`resourceSets[i]`) when the server does not serve its apiVersion or one of its `kinds` (with the kinds it
 * does serve), except for preset parts, which are skipped with `onSkip`; errors of the discovery request.
 */
export async function resolveTargets(client: Pick<KubeClient, 'discovery'>, sets: readonly ExpandedSet[], signal?: AbortSignal, onSkip?: SkipLog): Promise<Target[]> {
  const out: Target[] = [];
  for (const [index, set] of sets.entries()) {
    const where = `resourceSets[${index}]${set.preset ? ` (preset ${set.preset})` : ''}`;
    const all = (await client.discovery.resources(set.apiVersion, signal)).filter((r) => r.verbs.includes('list'));
    if (all.length === 0) {
      if (set.optional) {
        onSkip?.(`${where}: the server does not serve ${set.apiVersion}; skipped`);
        continue;
      }
      throw new BackupError('INVALID', `${where}.apiVersion: the server does not serve ${set.apiVersion} (is the CRD or API group installed?)`);
    }
    for (const k of set.kinds ?? []) {
      if (all.some((r) => r.kind === k || r.resource === k)) continue;
      if (set.optional) onSkip?.(`${where}: the server serves no kind ${k} in ${set.apiVersion}; skipped`);
      else throw new BackupError('INVALID', `${where}.kinds: the server serves no kind ${k} in ${set.apiVersion} (kinds: ${all.map((r) => r.kind).sort().join(', ')})`);
    }
    const kindsRe = set.kindsRegexp !== undefined ? new RegExp(set.kindsRegexp, 'u') : undefined;
    for (const info of all) {
      const byName = set.kinds !== undefined || kindsRe !== undefined ? kindMatches(set.kinds, info) || (!!kindsRe && (kindsRe.test(info.kind) || kindsRe.test(info.resource))) : true;
      if (!byName || kindMatches(set.excludeKinds, info)) continue;
      out.push({ set, index, info });
    }
  }
  return out;
}

/** Compiled regular expressions of a set (compiled once per target, not per object). */
interface Matcher {
  nameRe?: RegExp;
  nsRe?: RegExp;
  excludeNameRes: RegExp[];
}

function matcherOf(set: ResourceSet): Matcher {
  return {
    ...(set.nameRegexp !== undefined ? { nameRe: new RegExp(set.nameRegexp, 'u') } : {}),
    ...(set.namespaceRegexp !== undefined ? { nsRe: new RegExp(set.namespaceRegexp, 'u') } : {}),
    excludeNameRes: (set.excludeNameRegexps ?? []).map((r) => new RegExp(r, 'u')),
  };
}

function matches(set: ResourceSet, m: Matcher, namespaced: boolean, md: V1ObjectMeta | undefined): boolean {
  const name = md?.name ?? '';
  if (md?.labels?.[EXCLUDE_LABEL] === 'true') return false;
  if ((set.names !== undefined || m.nameRe) && !(set.names?.includes(name) || m.nameRe?.test(name))) return false;
  if (m.excludeNameRes.some((r) => r.test(name))) return false;
  if (namespaced) {
    const ns = md?.namespace ?? '';
    if ((set.namespaces !== undefined || m.nsRe) && !(set.namespaces?.includes(ns) || m.nsRe?.test(ns))) return false;
    if (set.excludeNamespaces?.includes(ns)) return false;
  }
  return true;
}

/**
 * Whether an object of a resolved kind is selected by `set`, judging by what can be checked on the object:
 * names, namespaces, excludes and the `cronflock.io/exclude-from-backup: "true"` label (kinds, `labelSelector`
 * and `fieldSelector` are the server's part and not checked here). For a restore's prune, which must stay inside
 * the backup's own selection.
 */
export function objectMatchesSet(set: ResourceSet, info: Pick<ResourceInfo, 'namespaced'>, metadata: V1ObjectMeta | undefined): boolean {
  return matches(set, matcherOf(set), info.namespaced, metadata);
}

/** One selected object and the resource serving it. */
export interface SelectedObject<T> {
  info: ResourceInfo;
  object: T;
}

/** Options of {@link selectObjects}. */
export interface SelectOptions {
  /** Objects per list request. */
  pageSize: number;
  /** List metadata only (for counting). */
  metadataOnly?: boolean;
  signal?: AbortSignal;
}

/**
 * Streams the selected objects of `targets`, each (group, resource, namespace, name) once, in target order.
 * A set with `namespaces` (and no `namespaceRegexp`) is listed namespace by namespace; others across all
 * namespaces, filtered here. Errors: those of `listPages` (e.g. `FORBIDDEN`, `ABORTED`).
 */
export async function* selectObjects<T extends KubernetesObject = KubernetesObject>(client: KubeClient, targets: readonly Target[], options: SelectOptions): AsyncGenerator<SelectedObject<T>> {
  const seen = new Set<string>();
  for (const t of targets) {
    const m = matcherOf(t.set);
    const { info, set } = t;
    const namespaces: (string | undefined)[] =
      info.namespaced && set.namespaces && set.namespaceRegexp === undefined ? set.namespaces.filter((n) => !set.excludeNamespaces?.includes(n)) : [info.namespaced ? '' : undefined];
    for (const namespace of namespaces) {
      for await (const page of listPages<T>(client, {
        apiVersion: info.apiVersion,
        kind: info.kind,
        ...(namespace !== undefined ? { namespace } : {}),
        ...(set.labelSelector ? { labelSelector: set.labelSelector } : {}),
        ...(set.fieldSelector ? { fieldSelector: set.fieldSelector } : {}),
        limit: options.pageSize,
        metadataOnly: options.metadataOnly ?? false,
        ...(options.signal ? { signal: options.signal } : {}),
      })) {
        for (const o of page.items) {
          if (!matches(set, m, info.namespaced, o.metadata)) continue;
          const key = `${info.group}/${info.version}/${info.resource}/${info.namespaced ? (o.metadata?.namespace ?? '') : ''}/${o.metadata?.name ?? ''}`;
          if (seen.has(key)) continue;
          seen.add(key);
          yield { info, object: o };
        }
      }
    }
  }
}
