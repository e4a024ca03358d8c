/**
 * k8s/informer.ts on the real kube-apiserver: the copy follows adds, changes and deletes; a label selector
 * limits it; bookmarks move its resourceVersion on while nothing it watches changes; and when its
 * resourceVersion is too old (410: here the CRD is changed, which makes the API server rebuild the kind's
 * watch cache and end the watch), it lists again and the copy is complete.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createObject, deleteObject, Informer, patchObject, type InformerChange, type KubeObject } from '../../k8s/index.js';
import { until } from '../support/flock.js';
import { configMap, installCrd } from './fixtures.js';
import { clientFor, testNamespace, uniqueName } from './harness.js';

let informer: Informer<KubeObject> | undefined;
afterEach(async () => {
  await informer?.stop();
  informer = undefined;
});

const names = (i: Informer<KubeObject>): string[] => i.list().map((o) => o.metadata?.name ?? '').sort();

describe('Informer', () => {
  it('keeps a copy of the objects of a namespace and label selector, through adds, changes and deletes', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'inf');
    await createObject(admin, configMap(ns, 'before', {}, { app: 'a' }));
    await createObject(admin, configMap(ns, 'other-app', {}, { app: 'b' }));
    const changes: InformerChange[] = [];
    informer = new Informer<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'app=a', onChange: (c) => changes.push(c) });
    await informer.start();
    expect(names(informer)).toEqual(['before']);
    await createObject(admin, configMap(ns, 'added', {}, { app: 'a' }));
    await patchObject(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'before' }, { data: { x: '1' } });
    await deleteObject(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'added' });
    await createObject(admin, configMap(ns, 'last', {}, { app: 'a' }));
    await until(() => informer!.get(`${ns}/last`) !== undefined, 10_000, 'the last add');
    expect(names(informer)).toEqual(['before', 'last']);
    expect((informer.get(`${ns}/before`) as { data?: Record<string, string> }).data).toEqual({ x: '1' });
    expect(changes.map((c) => c.type)).toEqual(['RESYNC', 'ADDED', 'MODIFIED', 'DELETED', 'ADDED']);
    expect(informer.stats).toMatchObject({ lists: 1, gone: 0, errors: 0 });
  });

  it('moves its resourceVersion on with bookmarks while nothing it watches changes', async () => {
    const admin = clientFor('admin');
    const quiet = await testNamespace(admin, 'inf-quiet');
    const busy = await testNamespace(admin, 'inf-busy');
    informer = new Informer<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: quiet, watchTimeoutSeconds: 8 });
    await informer.start();
    const start = Number(informer.version);
    // The API server sends a bookmark shortly before a watch's timeout, with the resourceVersion it reached.
    const writes = setInterval(() => void createObject(admin, configMap(busy, uniqueName('cm'))).catch(() => undefined), 500);
    try {
      await until(() => informer!.stats.bookmarks > 0, 30_000, 'a bookmark');
    } finally {
      clearInterval(writes);
    }
    expect(Number(informer.version)).toBeGreaterThan(start);
    expect(informer.stats.events).toBe(0);
    expect(informer.stats.lists).toBe(1); // a watch the server ended resumes from the bookmark, without a list
    expect(informer.stats.watches).toBeGreaterThanOrEqual(1);
  });

  it('lists again after a 410 and ends with a complete copy', async () => {
    const admin = clientFor('admin');
    const group = `${uniqueName('inf')}.example.com`;
    await installCrd(admin, { group, version: 'v1', kind: 'Gadget', plural: 'gadgets', scope: 'Namespaced' });
    const ns = await testNamespace(admin, 'inf-gone');
    const gadget = (name: string): KubeObject => ({ apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name, namespace: ns } });
    await createObject(admin, gadget('a'));
    const errors: string[] = [];
    informer = new Informer<KubeObject>(admin, { apiVersion: `${group}/v1`, kind: 'Gadget', namespace: ns, backoffMs: 200, onError: (e) => errors.push(e.code) });
    await informer.start();
    // Changing a CRD rebuilds its storage and watch cache: open watches end, and the old resourceVersion is
    // "too old" for the new cache (410 Gone), as after an etcd compaction.
    await patchObject(admin, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: `gadgets.${group}` }, {
      spec: { versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, additionalPrinterColumns: [{ name: 'X', type: 'string', jsonPath: '.spec.x' }], schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
    });
    await until(() => informer!.stats.gone > 0, 30_000, 'a 410');
    await createObject(admin, gadget('b'));
    await until(() => informer!.get(`${ns}/b`) !== undefined, 30_000, 'the add after the relist');
    expect(names(informer)).toEqual(['a', 'b']);
    expect(informer.stats.lists).toBeGreaterThanOrEqual(2);
  });
});
