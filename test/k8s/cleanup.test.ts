/**
 * `kind: cleanup` against the real kube-apiserver: selection, age from creation and from finishing, the
 * actions, dry run, the safety rules, the blast radius, preconditions, and the preflight access review.
 * Each test calls the registered kind's `run()` with a JobContext, as the engine does.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CleanupError, type CleanupReport } from '../../jobs/cleanup/index.js';
import {
  createObject,
  deleteObject,
  getObject,
  isK8sError,
  listAll,
  patchObject,
  type KubeClient,
  type KubeObject,
} from '../../k8s/index.js';
import { cleanupParams, jobContext, runCleanupJob } from './cleanup-support.js';
import { configMap, createAll, grantRole, job, pod, setJobFinished, setPodPhase } from './fixtures.js';
import { clientFor, testNamespace, uniqueName } from './harness.js';

const HOUR = 3_600_000;
const ago = (ms: number): Date => new Date(Date.now() - ms);

let admin: KubeClient;
beforeAll(() => {
  admin = clientFor('admin');
});

async function names(kind: 'ConfigMap' | 'Job' | 'Pod', namespace: string): Promise<string[]> {
  const apiVersion = kind === 'Job' ? 'batch/v1' : 'v1';
  const r = await listAll<KubeObject>(admin, { apiVersion, kind, namespace });
  return r.items.map((o) => o.metadata?.name ?? '').filter((n) => !(kind === 'ConfigMap' && n === 'kube-root-ca.crt')).sort();
}

const cmRef = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name });

describe('cleanup: age from finishing', () => {
  it('deletes a failed Job (no completionTime) 1 h after it failed and not before; running Jobs never finish', async () => {
    const ns = await testNamespace(admin, 'cl-age');
    await createAll(admin, [job(ns, 'failed-61m'), job(ns, 'failed-59m'), job(ns, 'complete-2h'), job(ns, 'running')]);
    const failed = await setJobFinished(admin, ns, 'failed-61m', 'Failed', ago(61 * 60_000));
    expect((failed.status as { completionTime?: string }).completionTime).toBeUndefined();
    await setJobFinished(admin, ns, 'failed-59m', 'Failed', ago(59 * 60_000));
    await setJobFinished(admin, ns, 'complete-2h', 'Complete', ago(2 * HOUR));
    const report = await runCleanupJob({
      resources: [{ apiVersion: 'batch/v1', kind: 'Job', namespaces: [ns], olderThan: '1h', from: 'finished' }],
      action: 'delete',
    });
    expect(report).toMatchObject({ action: 'delete', dryRun: false, scanned: 4, matched: 2, acted: 2, errored: 0, skipped: {} });
    expect(report.objects.map((o) => [o.name, o.result]).sort()).toEqual([
      ['complete-2h', 'deleted'],
      ['failed-61m', 'deleted'],
    ]);
    expect(await names('Job', ns)).toEqual(['failed-59m', 'running']);
  });

  it('preset finished-pods: Succeeded, Failed and Evicted Pods older than X by their latest finishedAt; running and recent ones stay', async () => {
    const ns = await testNamespace(admin, 'cl-pods');
    await createAll(admin, ['ok-old', 'failed-old', 'evicted-old', 'ok-new', 'running-old'].map((n) => pod(ns, n)));
    await setPodPhase(admin, ns, 'ok-old', 'Succeeded', ago(3 * HOUR));
    await setPodPhase(admin, ns, 'failed-old', 'Failed', ago(3 * HOUR));
    await setPodPhase(admin, ns, 'ok-new', 'Succeeded', ago(10 * 60_000));
    await setPodPhase(admin, ns, 'running-old', 'Running', ago(3 * HOUR));
    const t = new Date(Math.floor(ago(3 * HOUR).getTime() / 1000) * 1000).toISOString();
    // Evicted: phase Failed, reason Evicted, no terminated containers: the condition transition dates it.
    await patchObject(
      admin,
      { apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'evicted-old' },
      { status: { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.', conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: t }] } },
      { subresource: 'status' },
    );
    const report = await runCleanupJob({ resources: [{ preset: 'finished-pods', namespaces: [ns], olderThan: '1h' }], action: 'delete' });
    expect(report).toMatchObject({ scanned: 5, matched: 3, acted: 3 });
    expect(await names('Pod', ns)).toEqual(['ok-new', 'running-old']);
  });
});

describe('cleanup: safety', () => {
  it('leaves terminating and CronJob-owned Jobs alone (preset finished-jobs), unless CronJob-owned ones are asked for', async () => {
    const ns = await testNamespace(admin, 'cl-safe');
    const owner = { apiVersion: 'batch/v1', kind: 'CronJob', name: 'nightly', uid: '6b1f2a8e-0000-4000-8000-000000000001', controller: true };
    await createObject(admin, { ...job(ns, 'plain'), metadata: { name: 'plain', namespace: ns } });
    await createObject(admin, { ...job(ns, 'from-cron'), metadata: { name: 'from-cron', namespace: ns, ownerReferences: [owner] } });
    await createObject(admin, { ...job(ns, 'terminating'), metadata: { name: 'terminating', namespace: ns, finalizers: ['cronflock.test/hold'] } });
    for (const n of ['plain', 'from-cron', 'terminating']) await setJobFinished(admin, ns, n, 'Complete', ago(2 * HOUR));
    await deleteObject(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: ns, name: 'terminating' }, { propagationPolicy: 'Orphan' });

    const report = await runCleanupJob({ resources: [{ preset: 'finished-jobs', namespaces: [ns], olderThan: '1h' }], action: 'delete' });
    expect(report).toMatchObject({ matched: 3, acted: 1, skipped: { 'owned by a CronJob': 1, terminating: 1 } });
    expect(await names('Job', ns)).toEqual(['from-cron', 'terminating']);

    const again = await runCleanupJob({ resources: [{ preset: 'finished-jobs', namespaces: [ns], olderThan: '1h', includeCronJobOwned: true }], action: 'delete' });
    expect(again).toMatchObject({ acted: 1, skipped: { terminating: 1 } });
    expect(await names('Job', ns)).toEqual(['terminating']);
    await patchObject(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: ns, name: 'terminating' }, { metadata: { finalizers: null } });
  });

  it('skips the protect mark, other controllers and protected namespaces; allowProtectedNamespaces opts a namespace in', async () => {
    const ns = await testNamespace(admin, 'cl-prot');
    const prefix = uniqueName('cl');
    await createAll(admin, [
      configMap(ns, `${prefix}-plain`),
      configMap(ns, `${prefix}-marked`, {}, { 'cronflock.io/protect': 'true' }),
      { ...configMap(ns, `${prefix}-annotated`), metadata: { name: `${prefix}-annotated`, namespace: ns, annotations: { 'cronflock.io/protect': 'true' } } },
      {
        ...configMap(ns, `${prefix}-owned`),
        metadata: {
          name: `${prefix}-owned`,
          namespace: ns,
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: '6b1f2a8e-0000-4000-8000-000000000002', controller: true }],
        },
      },
      configMap('kube-system', `${prefix}-system`),
    ]);
    const resources = [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns, 'kube-system'], nameRegex: `^${prefix}-` }];
    const report = await runCleanupJob({ resources, action: 'delete' });
    expect(report).toMatchObject({ matched: 5, acted: 1, skipped: { protected: 2, 'controlled by Deployment': 1, 'protected namespace': 1 } });
    expect(await names('ConfigMap', ns)).toEqual([`${prefix}-annotated`, `${prefix}-marked`, `${prefix}-owned`]);
    await getObject(admin, cmRef('kube-system', `${prefix}-system`));

    const opted = await runCleanupJob({
      resources: [{ ...resources[0], includeControlled: true }],
      action: 'delete',
      allowProtectedNamespaces: ['kube-system'],
    });
    expect(opted).toMatchObject({ acted: 2, skipped: { protected: 2 } }); // nothing overrides the protect mark
    await expect(getObject(admin, cmRef('kube-system', `${prefix}-system`))).rejects.toSatisfy((e) => isK8sError(e, 'NOT_FOUND'));
  });

  it('a blast-radius abort (maxCount, maxPercent) writes nothing and says why', async () => {
    const ns = await testNamespace(admin, 'cl-blast');
    await createAll(admin, ['a', 'b', 'c', 'd', 'e'].map((n) => configMap(ns, `cm-${n}`)));
    const byCount = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^cm-' }], action: 'delete', maxCount: 3 }).catch(
      (e: unknown) => e,
    );
    expect(byCount).toBeInstanceOf(CleanupError);
    expect(byCount).toMatchObject({ code: 'BLAST_RADIUS', message: 'blast radius: 5 objects selected, more than maxCount 3; nothing was changed' });
    expect((byCount as CleanupError).report).toMatchObject({ scanned: 5, matched: 5, acted: 0 });

    const byPercent = await runCleanupJob({
      resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^cm-[a-d]$' }],
      action: 'patch',
      patch: { labels: { marked: 'x' } },
      maxPercent: 50,
    }).catch((e: unknown) => e);
    expect(byPercent).toMatchObject({ code: 'BLAST_RADIUS', message: 'blast radius: 4 of 5 scanned objects selected (80.0%), more than maxPercent 50; nothing was changed' });
    expect(await names('ConfigMap', ns)).toEqual(['cm-a', 'cm-b', 'cm-c', 'cm-d', 'cm-e']);
    const cms = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns });
    expect(cms.items.filter((o) => o.metadata?.labels?.marked)).toEqual([]);
  });
});

describe('cleanup: actions', () => {
  it('dryRun reports exactly what would be done and writes nothing; plan only reports', async () => {
    const ns = await testNamespace(admin, 'cl-dry');
    await createAll(admin, ['x', 'y'].map((n) => configMap(ns, n)));
    const before = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns });
    const dry = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^[xy]$' }], action: 'delete', dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, matched: 2, acted: 2 });
    expect(dry.objects.map((o) => [o.name, o.result]).sort()).toEqual([
      ['x', 'would delete'],
      ['y', 'would delete'],
    ]);
    const plan = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^[xy]$' }], action: 'plan' });
    expect(plan.objects.map((o) => o.result)).toEqual(['planned', 'planned']);
    const after = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns });
    expect(after.items.map((o) => o.metadata?.resourceVersion)).toEqual(before.items.map((o) => o.metadata?.resourceVersion));
  });

  it('a same-name re-created object, and one changed after the scan, survive (uid + resourceVersion preconditions)', async () => {
    const ns = await testNamespace(admin, 'cl-pre');
    const all = Array.from({ length: 12 }, (_, i) => `cm-${String(i).padStart(2, '0')}`);
    await createAll(admin, all.map((n) => configMap(ns, n, { gen: 'old' })));
    // One write at a time at 2 requests/s: the deletes run in name order over several seconds.
    const params = cleanupParams({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^cm-' }], action: 'delete', concurrency: 1 });
    const running = (await import('../../jobs/registry.js')).findJobKind('cleanup')!.run(jobContext(), { ...params, qps: 2 });
    for (;;) {
      const gone = await getObject(admin, cmRef(ns, 'cm-00')).then(() => false, () => true);
      if (gone) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await deleteObject(admin, cmRef(ns, 'cm-11'));
    const fresh = await createObject(admin, configMap(ns, 'cm-11', { gen: 'new' }));
    await patchObject(admin, cmRef(ns, 'cm-10'), { data: { gen: 'changed' } });
    await deleteObject(admin, cmRef(ns, 'cm-09')); // deleted by someone else (or a stalled earlier attempt): done
    const report = (await running) as CleanupReport;
    expect(report).toMatchObject({ acted: 10, errored: 0, skipped: { 'changed since scan': 2 } });
    expect(report.objects.filter((o) => o.name >= 'cm-09').map((o) => [o.name, o.result, o.reason])).toEqual([
      ['cm-09', 'gone', undefined],
      ['cm-10', 'skipped', 'changed since scan'],
      ['cm-11', 'skipped', 'changed since scan'],
    ]);
    const left = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: '' });
    const kept = left.items.filter((o) => o.metadata?.name?.startsWith('cm-'));
    expect(kept.map((o) => [o.metadata?.name, o.data])).toEqual([
      ['cm-10', { gen: 'changed' }],
      ['cm-11', { gen: 'new' }],
    ]);
    expect(kept[1]?.metadata?.uid).toBe(fresh.metadata?.uid);
  });

  it('scales to zero and patches labels/annotations, with server-side selection and namespace selection', async () => {
    const team = uniqueName('team');
    const nsA = await testNamespace(admin, 'cl-a');
    const nsB = await testNamespace(admin, 'cl-b');
    const nsC = await testNamespace(admin, 'cl-c');
    for (const ns of [nsA, nsB, nsC]) await patchObject(admin, { apiVersion: 'v1', kind: 'Namespace', name: ns }, { metadata: { labels: { team } } });
    const deploy = (ns: string, name: string, labels: Record<string, string>) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns, labels },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: 'registry.invalid/noop:1' }] } },
      },
    });
    await createAll(admin, [deploy(nsA, 'web', { idle: 'true' }), deploy(nsA, 'api', {}), deploy(nsB, 'web', { idle: 'true' }), deploy(nsC, 'web', { idle: 'true' })]);
    const report = await runCleanupJob({
      resources: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespaceSelector: `team=${team}`, excludeNamespaces: [nsC], labelSelector: 'idle=true' }],
      action: 'scale',
    });
    expect(report).toMatchObject({ scanned: 2, matched: 2, acted: 2 });
    const replicas = async (ns: string, name: string) =>
      ((await getObject<KubeObject>(admin, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name })).spec as { replicas: number }).replicas;
    expect([await replicas(nsA, 'web'), await replicas(nsA, 'api'), await replicas(nsB, 'web'), await replicas(nsC, 'web')]).toEqual([0, 3, 0, 3]);
    const again = await runCleanupJob({
      resources: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespaceSelector: `team=${team}`, excludeNamespaces: [nsC], labelSelector: 'idle=true' }],
      action: 'scale',
    });
    expect(again).toMatchObject({ acted: 0, skipped: { 'already scaled to zero': 2 } });

    const patched = await runCleanupJob({
      resources: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespaces: [nsA], fieldSelector: 'metadata.name=api' }],
      action: 'patch',
      patch: { labels: { 'cleanup/marked': 'yes', idle: null }, annotations: { 'cleanup/at': 'now' } },
    });
    expect(patched).toMatchObject({ scanned: 1, acted: 1 });
    const api = await getObject<KubeObject>(admin, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: nsA, name: 'api' });
    expect(api.metadata?.labels).toEqual({ 'cleanup/marked': 'yes' });
    expect(api.metadata?.annotations).toMatchObject({ 'cleanup/at': 'now' });
  });
});

describe('cleanup: TTL annotations', () => {
  it('deletes objects past cronflock.io/ttl, janitor/ttl, janitor/expires or cleanup.kyverno.io/ttl; a bad annotation is errored, not fatal', async () => {
    const ns = await testNamespace(admin, 'cl-ttl');
    const annotated = (name: string, annotations: Record<string, string>) => ({ ...configMap(ns, name), metadata: { name, namespace: ns, annotations } });
    await createAll(admin, [
      annotated('own-expired', { 'cronflock.io/ttl': '0s' }),
      annotated('janitor-expires-past', { 'janitor/expires': '2020-01-01' }),
      annotated('kyverno-time-past', { 'cleanup.kyverno.io/ttl': '2020-01-01T00:00:00Z' }),
      annotated('janitor-ttl-week', { 'janitor/ttl': '1w' }),
      annotated('kyverno-duration-future', { 'cleanup.kyverno.io/ttl': '2h' }),
      annotated('forever', { 'janitor/ttl': 'forever' }),
      annotated('bad', { 'janitor/ttl': 'soon' }),
      configMap(ns, 'none'),
    ]);
    const report = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], ttl: true }], action: 'delete' });
    expect(report).toMatchObject({ matched: 4, acted: 3, errored: 1 });
    expect(report.objects.find((o) => o.name === 'bad')).toMatchObject({ result: 'error', reason: 'annotation janitor/ttl: "soon" is not a duration' });
    expect(await names('ConfigMap', ns)).toEqual(['bad', 'forever', 'janitor-ttl-week', 'kyverno-duration-future', 'none']);
  });
});

describe('cleanup: preflight', () => {
  it("fails a restricted user's run with one exact message per missing permission, before touching anything", async () => {
    const ns = await testNamespace(admin, 'cl-rbac');
    await createAll(admin, [configMap(ns, 'c1'), job(ns, 'j1')]);
    const job1 = { resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns] }, { preset: 'finished-jobs', namespaces: [ns], olderThan: '1h' }], action: 'delete' };
    const e1 = await runCleanupJob(job1, 'restricted').catch((e: unknown) => e);
    expect(e1).toMatchObject({
      code: 'PERMISSION_DENIED',
      message: [
        'preflight failed:',
        `missing permission: list configmaps in namespace "${ns}"`,
        `missing permission: delete configmaps in namespace "${ns}"`,
        `missing permission: list jobs.batch in namespace "${ns}"`,
        `missing permission: delete jobs.batch in namespace "${ns}"`,
      ].join('\n'),
    });
    await grantRole(admin, ns, 'cleanup-partial', { kind: 'User', name: 'cronflock-restricted' }, [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'delete'] },
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['list'] },
    ]);
    const e2 = await runCleanupJob(job1, 'restricted').catch((e: unknown) => e);
    expect((e2 as Error).message).toBe(`preflight failed:\nmissing permission: delete jobs.batch in namespace "${ns}"`);
    expect(await names('ConfigMap', ns)).toEqual(['c1']);
    // all namespaces, and a namespaceSelector (which needs to list Namespaces)
    const e3 = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaceSelector: 'x=y' }, { apiVersion: 'v1', kind: 'Secret' }], action: 'plan' }, 'restricted').catch(
      (e: unknown) => e,
    );
    expect((e3 as Error).message).toBe('preflight failed:\nmissing permission: list namespaces (cluster-scoped)\nmissing permission: list secrets in all namespaces');
    // with the grant, the run works
    const ok = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^c1$' }], action: 'delete' }, 'restricted');
    expect(ok).toMatchObject({ acted: 1 });
  });
});

describe('cleanup: the run signal', () => {
  it('stops at once when the signal fires (claim lost, timeout, hand-over) and rejects with its reason', async () => {
    const ns = await testNamespace(admin, 'cl-abort');
    await createAll(admin, Array.from({ length: 10 }, (_, i) => configMap(ns, `cm-${i}`)));
    const ctx = jobContext();
    const params = cleanupParams({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^cm-' }], action: 'delete', concurrency: 1 });
    const running = (await import('../../jobs/registry.js')).findJobKind('cleanup')!.run(ctx, { ...params, qps: 2 });
    for (;;) {
      if ((await names('ConfigMap', ns)).length < 10) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const t0 = Date.now();
    ctx.abort.abort(new Error('claim lost'));
    await expect(running).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(1000);
    const left = (await names('ConfigMap', ns)).length;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await names('ConfigMap', ns)).length).toBe(left); // nothing more is deleted after the abort
    expect(left).toBeGreaterThanOrEqual(7);
  });
});
