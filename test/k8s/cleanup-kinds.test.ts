/** `kind: cleanup` on kinds found by discovery: a namespaced and a cluster-scoped CRD kind, and Namespaces. */
import { beforeAll, describe, expect, it } from 'vitest';
import { createObject, listAll, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { runCleanupJob } from './cleanup-support.js';
import { installCrd } from './fixtures.js';
import { clientFor, testNamespace, uniqueName } from './harness.js';

describe('cleanup: any kind through discovery', () => {
  let admin: KubeClient;
  beforeAll(() => {
    admin = clientFor('admin');
  });

  it('selects a namespaced and a cluster-scoped CRD kind, by name and age', async () => {
    const group = `${uniqueName('g')}.cronflock.test`;
    await installCrd(admin, { group, version: 'v1', kind: 'Widget', plural: 'widgets', scope: 'Namespaced' });
    await installCrd(admin, { group, version: 'v1', kind: 'Gadget', plural: 'gadgets', scope: 'Cluster' });
    const ns = await testNamespace(admin, 'cl-crd');
    const apiVersion = `${group}/v1`;
    for (const n of ['preview-1', 'preview-2', 'main']) await createObject(admin, { apiVersion, kind: 'Widget', metadata: { name: n, namespace: ns } });
    for (const n of ['tmp-1', 'keep']) await createObject(admin, { apiVersion, kind: 'Gadget', metadata: { name: n } });

    const report = await runCleanupJob({
      resources: [
        { apiVersion, kind: 'Widget', namespaces: [ns], nameRegex: '^preview-', olderThan: '0s' },
        { apiVersion, kind: 'Gadget', nameRegex: '^tmp-' },
      ],
      action: 'delete',
    });
    expect(report).toMatchObject({ scanned: 5, matched: 3, acted: 3 });
    expect(report.objects.map((o) => `${o.kind} ${o.namespace ?? '-'} ${o.name} ${o.result}`).sort()).toEqual([
      'Gadget - tmp-1 deleted',
      `Widget ${ns} preview-1 deleted`,
      `Widget ${ns} preview-2 deleted`,
    ]);
    const widgets = await listAll<KubeObject>(admin, { apiVersion, kind: 'Widget', namespace: ns });
    const gadgets = await listAll<KubeObject>(admin, { apiVersion, kind: 'Gadget' });
    expect(widgets.items.map((o) => o.metadata?.name)).toEqual(['main']);
    expect(gadgets.items.map((o) => o.metadata?.name)).toEqual(['keep']);
    // an unknown kind fails the run with discovery's message
    await expect(runCleanupJob({ resources: [{ apiVersion, kind: 'Sprocket' }] })).rejects.toThrow(`the server serves no kind Sprocket in ${apiVersion}`);
  });

  it('never selects a protected namespace as an object', async () => {
    const report = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'Namespace', nameRegex: '^kube-' }], action: 'plan' });
    expect(report).toMatchObject({ matched: 3, acted: 0, skipped: { 'protected namespace': 3 } });
  });
});
