/** Discovery against the real API server: built-in kinds, CRDs installed later, the cache, and paths. */
import { beforeAll, describe, expect, it } from 'vitest';
import { Discovery, isK8sError, resourcePath, splitApiVersion, type KubeClient } from '../../k8s/index.js';
import { installCrd } from './fixtures.js';
import { clientFor, uniqueName } from './harness.js';

describe('Discovery', () => {
  let admin: KubeClient;
  beforeAll(() => {
    admin = clientFor('admin');
  });

  it('resolves core, grouped and cluster-scoped kinds with verbs and subresources', async () => {
    const d = new Discovery(admin);
    expect(await d.resolve('v1', 'ConfigMap')).toEqual({
      group: '',
      version: 'v1',
      apiVersion: 'v1',
      kind: 'ConfigMap',
      resource: 'configmaps',
      namespaced: true,
      verbs: expect.arrayContaining(['get', 'list', 'create', 'patch', 'delete', 'deletecollection', 'watch']),
      subresources: [],
    });
    const job = await d.resolve('batch/v1', 'Job');
    expect(job).toMatchObject({ group: 'batch', version: 'v1', resource: 'jobs', namespaced: true, subresources: ['status'] });
    const pod = await d.resolve('v1', 'Pod');
    expect(pod.subresources).toEqual(expect.arrayContaining(['status', 'log', 'eviction', 'binding']));
    expect(await d.resolve('v1', 'Namespace')).toMatchObject({ resource: 'namespaces', namespaced: false });
    const ssar = await d.resolve('authorization.k8s.io/v1', 'SelfSubjectAccessReview');
    expect(ssar.verbs).toEqual(['create']);
  });

  it('caches each group/version: one fetch serves every kind of it', async () => {
    const d = new Discovery(admin);
    await d.resolve('v1', 'ConfigMap');
    await d.resolve('v1', 'Pod');
    await d.resolve('v1', 'Secret');
    await Promise.all([d.resolve('batch/v1', 'Job'), d.resolve('batch/v1', 'CronJob')]); // concurrent: one fetch
    expect(d.stats.fetches).toBe(2);
    d.invalidate('v1');
    await d.resolve('v1', 'Pod');
    expect(d.stats.fetches).toBe(3);
  });

  it('refetches on a miss, so a CRD installed after the cache was filled is found', async () => {
    const d = new Discovery(admin);
    const group = `${uniqueName('g')}.cronflock.test`;
    // cache "the server does not serve this group/version" first
    await expect(d.resolve(`${group}/v1`, 'Gadget')).rejects.toSatisfy((e) => isK8sError(e, 'RESOURCE_UNKNOWN'));
    const fetchesBefore = d.stats.fetches;
    await installCrd(admin, { group, version: 'v1', kind: 'Gadget', plural: 'gadgets', scope: 'Cluster' });
    expect(await d.resolve(`${group}/v1`, 'Gadget')).toMatchObject({
      group,
      resource: 'gadgets',
      namespaced: false,
      subresources: ['status'],
    });
    expect(d.stats.fetches).toBe(fetchesBefore + 1); // the stale entry was refetched once
    expect((await d.resources(`${group}/v1`)).map((r) => r.kind)).toEqual(['Gadget']);
  });

  it('says RESOURCE_UNKNOWN for a kind or group/version the server does not serve', async () => {
    const d = new Discovery(admin);
    const e1 = await d.resolve('v1', 'Widget').catch((e: unknown) => e);
    expect(isK8sError(e1, 'RESOURCE_UNKNOWN')).toBe(true);
    expect((e1 as Error).message).toMatch(/no kind Widget in v1 \(kinds: .*ConfigMap/);
    const e2 = await d.resolve('nope.example.com/v9', 'Thing').catch((e: unknown) => e);
    expect(isK8sError(e2, 'RESOURCE_UNKNOWN')).toBe(true);
    expect((e2 as Error).message).toContain('does not serve nope.example.com/v9');
    expect(await d.resources('nope.example.com/v9')).toEqual([]);
  });

  it('is available on every client as client.discovery', async () => {
    expect((await admin.discovery.resolve('apps/v1', 'Deployment')).resource).toBe('deployments');
  });
});

describe('resourcePath / splitApiVersion', () => {
  it('builds collection, object and subresource paths', async () => {
    const admin = clientFor('admin');
    const cm = await admin.discovery.resolve('v1', 'ConfigMap');
    const job = await admin.discovery.resolve('batch/v1', 'Job');
    const ns = await admin.discovery.resolve('v1', 'Namespace');
    expect(resourcePath(cm, { namespace: 'a' })).toBe('/api/v1/namespaces/a/configmaps');
    expect(resourcePath(cm)).toBe('/api/v1/configmaps');
    expect(resourcePath(job, { namespace: 'a', name: 'j', subresource: 'status' })).toBe('/apis/batch/v1/namespaces/a/jobs/j/status');
    expect(resourcePath(ns, { namespace: 'ignored', name: 'kube-system' })).toBe('/api/v1/namespaces/kube-system');
    expect(() => resourcePath(cm, { name: 'x' })).toThrow(TypeError);
    expect(() => resourcePath(job, { namespace: 'a', subresource: 'status' })).toThrow(TypeError);
    expect(splitApiVersion('v1')).toEqual({ group: '', version: 'v1' });
    expect(splitApiVersion('apps/v1')).toEqual({ group: 'apps', version: 'v1' });
  });
});
