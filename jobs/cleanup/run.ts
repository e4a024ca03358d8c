/**
 * One cleanup run: preflight access reviews, a paged streaming scan that keeps only the selected objects'
 * references, the blast-radius check (before any write), then the action with bounded concurrency and
 * preconditions from the scan. Returns the report (report.ts) that the engine stores in the run record.
 */
import {
  canI,
  deleteObject,
  isK8sError,
  listPages,
  patchObject,
  resolveFor,
  type KubeClient,
  type ResourceInfo,
} from '../../k8s/index.js';
import { kubeClientFor } from '../kube-client.js';
import { pool } from '../pool.js';
import type { JobContext } from '../types.js';
import { addUsage, expandSelector, judge, needsFullObjects, protectedSet, USAGE_KINDS, type ExpandedSelector, type Listed, type Usage } from './evaluate.js';
import { compileFilter, type CompiledFilter } from './filter.js';
import { Report, type CleanupReport } from './report.js';
import type { CleanupParams } from './schema.js';

/** A cleanup that stopped before writing anything (blast radius) or could not start (permissions). */
export class CleanupError extends Error {
  constructor(
    readonly code: 'BLAST_RADIUS' | 'PERMISSION_DENIED' | 'INVALID',
    message: string,
    /** The report as far as the run got (nothing was written when code is BLAST_RADIUS or PERMISSION_DENIED). */
    readonly report?: CleanupReport,
  ) {
    super(message);
    this.name = 'CleanupError';
  }
}

/** Compiled parameters: the validated block with the kubeconfig path made absolute. */
export type CompiledCleanup = CleanupParams;

interface Target {
  sel: ExpandedSelector;
  info: ResourceInfo;
  nameRe?: RegExp;
  filter?: CompiledFilter;
  /** Namespaces to list one by one; undefined = all namespaces at once (or a cluster-scoped kind). */
  namespaces?: string[];
}

interface Candidate {
  info: ResourceInfo;
  namespace?: string;
  name: string;
  uid: string;
  resourceVersion: string;
}

/** Verb (and subresource) the action needs on the selected resource. */
function actionVerb(p: CompiledCleanup): { verb: string; subresource?: string } | undefined {
  switch (p.action) {
    case 'delete':
      return { verb: 'delete' };
    case 'scale':
      return { verb: 'patch', subresource: 'scale' };
    case 'patch':
      return { verb: 'patch' };
    default:
      return undefined;
  }
}

function resourceName(info: ResourceInfo, subresource?: string): string {
  return `${info.resource}${info.group ? `.${info.group}` : ''}${subresource ? `/${subresource}` : ''}`;
}

/** The client the job uses: {@link kubeClientFor} (kept under this name for its importers). */
export const clientForJob = kubeClientFor;

/** Resolves each selector's kind and namespaces (a namespaceSelector lists Namespaces). */
async function resolveTargets(client: KubeClient, p: CompiledCleanup, signal: AbortSignal): Promise<Target[]> {
  const out: Target[] = [];
  for (const raw of p.resources) {
    const sel = expandSelector(raw);
    const info = await resolveFor(client, sel, 'list', signal);
    if (p.action === 'scale' && !info.subresources.includes('scale')) {
      throw new CleanupError('INVALID', `${sel.kind} (${sel.apiVersion}) has no scale subresource: it cannot be scaled`);
    }
    const t: Target = {
      sel,
      info,
      ...(sel.nameRegex ? { nameRe: new RegExp(sel.nameRegex, 'u') } : {}),
      ...(sel.filter ? { filter: compileFilter(sel.filter) } : {}),
    };
    if (info.namespaced && sel.namespaces) t.namespaces = sel.namespaces.filter((n) => !sel.excludeNamespaces.includes(n));
    out.push(t);
  }
  return out;
}

async function selectNamespaces(client: KubeClient, selector: string, exclude: string[], signal: AbortSignal): Promise<string[]> {
  const names: string[] = [];
  for await (const page of listPages(client, { apiVersion: 'v1', kind: 'Namespace', labelSelector: selector, metadataOnly: true, signal })) {
    if (page.index === 0) names.length = 0;
    for (const n of page.items) if (n.metadata?.name && !exclude.includes(n.metadata.name)) names.push(n.metadata.name);
  }
  return names;
}

/**
 * Asks the server (SelfSubjectAccessReview) for every permission the run needs; returns one message per
 * missing permission, e.g. `missing permission: delete jobs.batch in namespace "team-a"`. Resolves the
 * namespaces of `namespaceSelector`s on the way (when Namespaces may be listed), into `targets`.
 */
export async function preflight(client: KubeClient, p: CompiledCleanup, targets: Target[], signal: AbortSignal): Promise<string[]> {
  const write = p.action === 'plan' ? undefined : actionVerb(p);
  const seen = new Map<string, boolean>();
  const missing: string[] = [];
  const ask = async (verb: string, info: Pick<ResourceInfo, 'resource' | 'group' | 'namespaced'>, namespace?: string, subresource?: string): Promise<boolean> => {
    const key = `${verb} ${info.group}/${info.resource}/${subresource ?? ''} ${namespace ?? '*'}`;
    const known = seen.get(key);
    if (known !== undefined) return known;
    const d = await canI(client, {
      verb,
      resource: info.resource,
      group: info.group,
      ...(namespace !== undefined ? { namespace } : {}),
      ...(subresource ? { subresource } : {}),
      signal,
    });
    seen.set(key, d.allowed);
    if (d.allowed) return true;
    const where = !info.namespaced ? '(cluster-scoped)' : namespace !== undefined ? `in namespace "${namespace}"` : 'in all namespaces';
    missing.push(`missing permission: ${verb} ${resourceName(info as ResourceInfo, subresource)} ${where}`);
    return false;
  };
  for (const t of targets) {
    if (t.info.namespaced && t.sel.namespaceSelector && t.namespaces === undefined) {
      if (!(await ask('list', { resource: 'namespaces', group: '', namespaced: false }))) continue;
      t.namespaces = await selectNamespaces(client, t.sel.namespaceSelector, t.sel.excludeNamespaces, signal);
    }
    const where: (string | undefined)[] = t.info.namespaced ? (t.namespaces ?? [undefined]) : [undefined];
    const usageInfos = isUnused(t.sel) ? await Promise.all(USAGE_KINDS.map((k) => resolveFor(client, k, 'list', signal))) : [];
    for (const ns of where) {
      await ask('list', t.info, ns);
      if (write) await ask(write.verb, t.info, ns, write.subresource);
      for (const u of usageInfos) await ask('list', u, ns);
    }
  }
  return missing;
}

/** Runs one cleanup (see the module docs). */
export async function runCleanup(ctx: JobContext, p: CompiledCleanup, client: KubeClient = clientForJob(p)): Promise<CleanupReport> {
  const signal = ctx.signal;
  const report = new Report(p.action, p.dryRun, p.reportObjects);
  const safety = { protectedNamespaces: protectedSet(p.protectedNamespaces, p.allowProtectedNamespaces) };
  const targets = await resolveTargets(client, p, signal);

  const missing = await preflight(client, p, targets, signal);
  if (missing.length > 0) throw new CleanupError('PERMISSION_DENIED', `preflight failed:\n${missing.join('\n')}`);

  // Scan: stream pages, keep only the references of selected objects.
  const candidates: Candidate[] = [];
  const seenUids = new Set<string>();
  const now = Date.now();
  for (const t of targets) {
    const namespaces = t.info.namespaced ? t.namespaces : undefined;
    const usage = isUnused(t.sel) ? await collectUsage(client, namespaces, p.pageSize, signal) : undefined;
    for (const ns of namespaces ?? ['']) {
      let passStart = { candidates: candidates.length, mark: report.mark() };
      for await (const page of listPages<Listed>(client, {
        apiVersion: t.sel.apiVersion,
        kind: t.sel.kind,
        namespace: ns,
        ...(t.sel.labelSelector ? { labelSelector: t.sel.labelSelector } : {}),
        ...(t.sel.fieldSelector ? { fieldSelector: t.sel.fieldSelector } : {}),
        limit: p.pageSize,
        metadataOnly: !needsFullObjects(t.sel, p.action),
        signal,
      })) {
        if (page.index === 0 && page.restarts > 0) {
          // The snapshot expired and the list restarted: forget what the expired pass selected.
          for (const c of candidates.splice(passStart.candidates)) seenUids.delete(c.uid);
          report.reset(passStart.mark);
        }
        if (page.index === 0) passStart = { candidates: candidates.length, mark: report.mark() };
        for (const o of page.items) {
          report.scanned++;
          const v = judge(o, t.sel, now, safety, t.nameRe, usage, t.filter);
          if (v.verdict === 'ignore') continue;
          const meta = o.metadata ?? {};
          const line = { kind: t.info.kind, ...(meta.namespace ? { namespace: meta.namespace } : {}), name: meta.name ?? '', uid: meta.uid ?? '' };
          if (seenUids.has(line.uid)) continue; // selected by an earlier selector too
          seenUids.add(line.uid);
          report.matched++;
          if (v.verdict === 'error') {
            report.error(line, v.reason);
            continue;
          }
          if (v.verdict === 'skip') {
            report.skip(line, v.reason);
            continue;
          }
          if (p.action === 'scale' && (o.spec as { replicas?: number } | undefined)?.replicas === 0) {
            report.skip(line, 'already scaled to zero');
            continue;
          }
          if (p.action === 'patch' && alreadyPatched(meta, p)) {
            report.skip(line, 'already patched');
            continue;
          }
          candidates.push({
            info: t.info,
            ...(meta.namespace ? { namespace: meta.namespace } : {}),
            name: line.name,
            uid: line.uid,
            resourceVersion: meta.resourceVersion ?? '',
          });
        }
      }
    }
  }

  // Blast radius: decided on the whole selection, before any write.
  const percent = report.scanned === 0 ? 0 : (candidates.length * 100) / report.scanned;
  if (p.action !== 'plan' && (candidates.length > p.maxCount || percent > p.maxPercent)) {
    const why =
      candidates.length > p.maxCount
        ? `${candidates.length} objects selected, more than maxCount ${p.maxCount}`
        : `${candidates.length} of ${report.scanned} scanned objects selected (${percent.toFixed(1)}%), more than maxPercent ${p.maxPercent}`;
    report.aborted = `blast radius: ${why}; nothing was changed`;
    throw new CleanupError('BLAST_RADIUS', report.aborted, report.result());
  }

  // Act, `concurrency` writes at a time; an abort starts nothing new and waits for the writes in flight.
  await pool(candidates, p.concurrency, (c) => act(client, p, c, report, ctx, signal), signal);
  const result = report.result();
  ctx.log.info({ scanned: result.scanned, matched: result.matched, acted: result.acted, skipped: result.skipped, errored: result.errored }, 'cleanup finished');
  return result;
}

function isUnused(s: ExpandedSelector): boolean {
  return s.preset === 'unused-configmaps' || s.preset === 'unused-secrets';
}

/** What the Pods, workload pod templates and ServiceAccounts of `namespaces` (undefined = all) reference. */
async function collectUsage(client: KubeClient, namespaces: string[] | undefined, pageSize: number, signal: AbortSignal): Promise<Usage> {
  const usage: Usage = { configMaps: new Set(), secrets: new Set() };
  for (const k of USAGE_KINDS) {
    for (const ns of namespaces ?? ['']) {
      for await (const page of listPages<Listed>(client, { ...k, namespace: ns, limit: pageSize, signal })) {
        for (const o of page.items) addUsage(o, usage);
      }
    }
  }
  return usage;
}

function alreadyPatched(meta: Listed['metadata'] & object, p: CompiledCleanup): boolean {
  const same = (want: Record<string, string | null> | undefined, have: Record<string, string> | undefined) =>
    Object.entries(want ?? {}).every(([k, v]) => (v === null ? have?.[k] === undefined : have?.[k] === v));
  return same(p.patch?.labels, meta.labels) && same(p.patch?.annotations, meta.annotations);
}

async function act(client: KubeClient, p: CompiledCleanup, c: Candidate, report: Report, ctx: JobContext, signal: AbortSignal): Promise<void> {
  const ref = { apiVersion: c.info.apiVersion, kind: c.info.kind, name: c.name, ...(c.namespace ? { namespace: c.namespace } : {}) };
  const line = { kind: c.info.kind, ...(c.namespace ? { namespace: c.namespace } : {}), name: c.name, uid: c.uid };
  if (p.action === 'plan') {
    report.done(line, 'planned');
    return;
  }
  try {
    if (p.action === 'delete') {
      const out = await deleteObject(client, ref, {
        preconditions: { uid: c.uid, resourceVersion: c.resourceVersion },
        propagationPolicy: p.propagationPolicy,
        dryRun: p.dryRun,
        signal,
      });
      if (out.outcome === 'changed') report.skip(line, 'changed since scan');
      else report.done(line, p.dryRun ? 'would delete' : out.outcome === 'gone' ? 'gone' : out.pending ? 'deleting' : 'deleted');
    } else if (p.action === 'scale') {
      await patchObject(client, ref, { metadata: { uid: c.uid, resourceVersion: c.resourceVersion }, spec: { replicas: 0 } }, { subresource: 'scale', dryRun: p.dryRun, fieldManager: 'cronflock', signal });
      report.done(line, p.dryRun ? 'would scale to zero' : 'scaled to zero');
    } else {
      const patch = { metadata: { resourceVersion: c.resourceVersion, ...(p.patch?.labels ? { labels: p.patch.labels } : {}), ...(p.patch?.annotations ? { annotations: p.patch.annotations } : {}) } };
      await patchObject(client, ref, patch, { dryRun: p.dryRun, fieldManager: 'cronflock', signal });
      report.done(line, p.dryRun ? 'would patch' : 'patched');
    }
  } catch (e) {
    if (signal.aborted) throw e;
    if (isK8sError(e, 'NOT_FOUND')) report.done(line, 'gone');
    else if (isK8sError(e, 'CONFLICT')) report.skip(line, 'changed since scan');
    else {
      report.error(line, e instanceof Error ? e.message : String(e));
      ctx.log.warn({ object: line, error: e instanceof Error ? e.message : String(e) }, 'cleanup action failed');
    }
  }
}
