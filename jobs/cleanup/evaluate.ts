/**
 * Pure decisions of a cleanup: when an object finished, when its TTL annotation expires, whether a selector
 * selects it, and which safety rule (if any) keeps it. No I/O: the run streams list pages through these.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { parseDurationMs } from '../../runner/time/duration.js';
import type { CompiledFilter } from './filter.js';
import { PROTECT_KEY, PROTECTED_NAMESPACES, type CleanupSelector } from './schema.js';

/** An object as listed (full or metadata-only). */
export interface Listed {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** A selector with its preset expanded: apiVersion and kind always set. */
export interface ExpandedSelector extends CleanupSelector {
  apiVersion: string;
  kind: string;
  /** Pod phases the object must be in (finished-pods). */
  phases?: string[];
}

/** Expands a preset into the selector it stands for; other selectors pass through. */
export function expandSelector(s: CleanupSelector): ExpandedSelector {
  switch (s.preset) {
    case 'finished-jobs':
      return { ...s, apiVersion: 'batch/v1', kind: 'Job', from: 'finished' };
    case 'finished-pods':
      return { ...s, apiVersion: 'v1', kind: 'Pod', from: 'finished', phases: ['Succeeded', 'Failed'] };
    case 'unused-configmaps':
      return { ...s, apiVersion: 'v1', kind: 'ConfigMap' };
    case 'unused-secrets':
      return { ...s, apiVersion: 'v1', kind: 'Secret' };
    default:
      return { ...s, apiVersion: s.apiVersion!, kind: s.kind! };
  }
}

/** True when the selector must read more than metadata (status for finish times, spec for scale). */
export function needsFullObjects(s: ExpandedSelector, action: string): boolean {
  return s.from === 'finished' || s.phases !== undefined || action === 'scale' || s.preset === 'unused-secrets' || s.filter !== undefined;
}

interface Condition {
  type?: string;
  status?: string;
  lastTransitionTime?: string;
}

function ms(t: unknown): number | undefined {
  if (typeof t !== 'string') return undefined;
  const v = Date.parse(t);
  return Number.isFinite(v) ? v : undefined;
}

/**
 * When the object finished (ms), or undefined while it runs or never finishes:
 * - Job: `lastTransitionTime` of its `Complete` or `Failed` condition with status True (a failed Job has no
 *   `completionTime`);
 * - Pod in phase Succeeded/Failed: the latest container `finishedAt` (init and app containers); an evicted Pod
 *   without terminated containers: its latest condition transition;
 * - other kinds: a `Complete`/`Failed`/`Succeeded` condition with status True.
 */
export function finishedAtMs(o: Listed, kind: string): number | undefined {
  const status = o.status ?? {};
  if (kind === 'Pod') {
    const phase = status.phase;
    if (phase !== 'Succeeded' && phase !== 'Failed') return undefined;
    const all = [
      ...((status.initContainerStatuses as unknown[]) ?? []),
      ...((status.containerStatuses as unknown[]) ?? []),
      ...((status.ephemeralContainerStatuses as unknown[]) ?? []),
    ] as { state?: { terminated?: { finishedAt?: string } } }[];
    const times = all.map((c) => ms(c.state?.terminated?.finishedAt)).filter((t): t is number => t !== undefined);
    if (times.length > 0) return Math.max(...times);
    const conds = ((status.conditions as Condition[]) ?? []).map((c) => ms(c.lastTransitionTime)).filter((t): t is number => t !== undefined);
    return conds.length > 0 ? Math.max(...conds) : undefined;
  }
  const types = kind === 'Job' ? ['Complete', 'Failed'] : ['Complete', 'Failed', 'Succeeded'];
  const done = ((status.conditions as Condition[]) ?? []).filter((c) => types.includes(c.type ?? '') && c.status === 'True');
  const times = done.map((c) => ms(c.lastTransitionTime)).filter((t): t is number => t !== undefined);
  return times.length > 0 ? Math.max(...times) : undefined;
}

/** kube-janitor style TTL (`30m`, `24h`, `7d`, `2w`, or `forever`), in ms; undefined when not a duration. */
export function parseTtlMs(text: string): number | undefined {
  const t = text.trim();
  const weeks = /^(\d+)w$/.exec(t);
  if (weeks) return Number(weeks[1]) * 7 * 86_400_000;
  try {
    return parseDurationMs(t);
  } catch {
    return undefined;
  }
}

/** An absolute time (`2026-01-02`, `2026-01-02T15:04`, `2026-01-02T15:04:05Z`); undefined when not one. */
export function parseExpiry(text: string): number | undefined {
  const t = text.trim();
  if (/^\d{4}-\d{2}-\d{2}$/.test(t)) return Date.parse(`${t}T00:00:00Z`);
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(t)) return Date.parse(`${t}:00Z`);
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(t)) return Date.parse(t);
  return undefined;
}

/**
 * When the object expires by its TTL annotation, as ms; `null` when it has none (or `forever`); a string with
 * the reason when an annotation cannot be read. Durations count from `creationTimestamp`:
 * `cronflock.io/ttl` and `janitor/ttl` are durations, `janitor/expires` an absolute time,
 * `cleanup.kyverno.io/ttl` either.
 */
export function ttlExpiry(meta: V1ObjectMeta): number | null | string {
  const a = meta.annotations ?? {};
  const created = ms(meta.creationTimestamp as unknown as string) ?? ms(String(meta.creationTimestamp ?? ''));
  const out: number[] = [];
  for (const key of ['cronflock.io/ttl', 'janitor/ttl'] as const) {
    const v = a[key];
    if (v === undefined || v.trim() === 'forever') continue;
    const d = parseTtlMs(v);
    if (d === undefined || created === undefined) return `annotation ${key}: "${v}" is not a duration`;
    out.push(created + d);
  }
  const exp = a['janitor/expires'];
  if (exp !== undefined) {
    const at = parseExpiry(exp);
    if (at === undefined) return `annotation janitor/expires: "${exp}" is not a time`;
    out.push(at);
  }
  const ky = a['cleanup.kyverno.io/ttl'];
  if (ky !== undefined) {
    const at = parseExpiry(ky);
    const d = at === undefined ? parseTtlMs(ky) : undefined;
    if (at !== undefined) out.push(at);
    else if (d !== undefined && created !== undefined) out.push(created + d);
    else return `annotation cleanup.kyverno.io/ttl: "${ky}" is neither a duration nor a time`;
  }
  return out.length > 0 ? Math.min(...out) : null;
}

/** What a selector makes of one object. */
export type Verdict =
  | { verdict: 'ignore' }
  | { verdict: 'error'; reason: string }
  | { verdict: 'skip'; reason: string }
  | { verdict: 'match' };

/** Safety options of a job (see schema.ts). */
export interface Safety {
  protectedNamespaces: ReadonlySet<string>;
}

/** The protected namespaces of a job: the built-in ones and its own, minus those it is allowed. */
export function protectedSet(extra: readonly string[], allowed: readonly string[]): Set<string> {
  const s = new Set<string>([...PROTECTED_NAMESPACES, ...extra]);
  for (const a of allowed) s.delete(a);
  return s;
}

/**
 * Decides one object: `ignore` when the selector does not select it (name, namespace, age, phase, TTL);
 * `skip` with the reason when it is selected but a safety rule keeps it; `error` when it cannot be judged
 * (a TTL annotation that does not parse); `match` otherwise.
 */
export function judge(o: Listed, s: ExpandedSelector, nowMs: number, safety: Safety, nameRe?: RegExp, usage?: Usage, filter?: CompiledFilter): Verdict {
  const meta = o.metadata ?? {};
  const name = meta.name ?? '';
  const ns = meta.namespace;
  if (nameRe && !nameRe.test(name)) return { verdict: 'ignore' };
  if (s.preset === 'unused-configmaps' && (name === 'kube-root-ca.crt' || usage?.configMaps.has(`${ns}/${name}`))) return { verdict: 'ignore' };
  if (s.preset === 'unused-secrets') {
    const type = (o as { type?: string }).type ?? '';
    if (NEVER_UNUSED_SECRET_TYPES.includes(type) || usage?.secrets.has(`${ns}/${name}`)) return { verdict: 'ignore' };
  }
  if (ns !== undefined && s.excludeNamespaces.includes(ns)) return { verdict: 'ignore' };
  if (s.phases && !s.phases.includes(String(o.status?.phase ?? ''))) return { verdict: 'ignore' };
  if (s.olderThan !== undefined) {
    const since = s.from === 'finished' ? finishedAtMs(o, s.kind) : ms(String(meta.creationTimestamp ?? ''));
    if (since === undefined || nowMs - since < s.olderThan) return { verdict: 'ignore' };
  }
  if (s.ttl) {
    const exp = ttlExpiry(meta);
    if (typeof exp === 'string') return { verdict: 'error', reason: exp };
    if (exp === null || exp > nowMs) return { verdict: 'ignore' };
  }
  if (filter) {
    const keep = filter(o, nowMs);
    if (typeof keep === 'string') return { verdict: 'error', reason: keep };
    if (!keep) return { verdict: 'ignore' };
  }
  // Safety, in order of strength: nothing overrides the protect mark or a protected namespace.
  if (meta.labels?.[PROTECT_KEY] === 'true' || meta.annotations?.[PROTECT_KEY] === 'true') return { verdict: 'skip', reason: 'protected' };
  if (ns !== undefined && safety.protectedNamespaces.has(ns)) return { verdict: 'skip', reason: 'protected namespace' };
  if (s.kind === 'Namespace' && s.apiVersion === 'v1' && safety.protectedNamespaces.has(name)) return { verdict: 'skip', reason: 'protected namespace' };
  if (meta.deletionTimestamp && !s.includeTerminating) return { verdict: 'skip', reason: 'terminating' };
  const controller = (meta.ownerReferences ?? []).find((r) => r.controller === true);
  if (controller) {
    const cronJob = controller.kind === 'CronJob' && controller.apiVersion.startsWith('batch/');
    const allowed = s.preset === 'finished-jobs' && cronJob ? s.includeCronJobOwned : s.includeControlled;
    if (!allowed) return { verdict: 'skip', reason: cronJob ? 'owned by a CronJob' : `controlled by ${controller.kind}` };
  }
  return { verdict: 'match' };
}

/** Secret types that are never "unused": Helm release records and service-account tokens. */
export const NEVER_UNUSED_SECRET_TYPES = ['helm.sh/release.v1', 'kubernetes.io/service-account-token'];

/** Kinds whose specs can reference ConfigMaps and Secrets (pod templates, Pods, ServiceAccounts). */
export const USAGE_KINDS = [
  { apiVersion: 'v1', kind: 'Pod' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'apps/v1', kind: 'ReplicaSet' },
  { apiVersion: 'batch/v1', kind: 'Job' },
  { apiVersion: 'batch/v1', kind: 'CronJob' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
] as const;

/** ConfigMaps and Secrets referenced somewhere, as `namespace/name`. */
export interface Usage {
  configMaps: Set<string>;
  secrets: Set<string>;
}

const CM_KEYS = new Set(['configMap', 'configMapRef', 'configMapKeyRef']);
const SECRET_KEYS = new Set(['secret', 'secretRef', 'secretKeyRef', 'nodePublishSecretRef', 'nodeStageSecretRef', 'controllerPublishSecretRef', 'controllerExpandSecretRef', 'nodeExpandSecretRef']);

/**
 * Adds what `o` references to `usage`: anywhere in its spec (so pod templates of Deployments, StatefulSets,
 * DaemonSets, ReplicaSets, Jobs and CronJobs, and Pods: volumes, projected sources, env, envFrom,
 * imagePullSecrets, CSI secret refs), and a ServiceAccount's `secrets` and `imagePullSecrets`.
 */
export function addUsage(o: Listed & { secrets?: { name?: string }[]; imagePullSecrets?: { name?: string }[] }, usage: Usage): void {
  const ns = o.metadata?.namespace ?? '';
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x);
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (typeof x === 'object' && x !== null && !Array.isArray(x)) {
        const ref = x as { name?: unknown; secretName?: unknown };
        if (CM_KEYS.has(k) && typeof ref.name === 'string') usage.configMaps.add(`${ns}/${ref.name}`);
        if (SECRET_KEYS.has(k)) {
          const n = typeof ref.secretName === 'string' ? ref.secretName : ref.name;
          if (typeof n === 'string') usage.secrets.add(`${ns}/${n}`);
        }
      }
      if (k === 'imagePullSecrets' && Array.isArray(x)) for (const s of x as { name?: unknown }[]) if (typeof s?.name === 'string') usage.secrets.add(`${ns}/${s.name}`);
      walk(x);
    }
  };
  walk(o.spec);
  for (const s of [...(o.secrets ?? []), ...(o.imagePullSecrets ?? [])]) if (s.name) usage.secrets.add(`${ns}/${s.name}`);
}
