/**
 * Paged and metadata-only lists against the real API server, including a CRD's objects listed through
 * discovery and a 410 Gone that restarts the list. The 410 is produced the way it happens in a real cluster:
 * etcd is compacted past the list's snapshot by "another API server" (the test plays that peer: it records the
 * revision under `compact_rev_key` and compacts etcd, exactly as kube-apiserver's compactor does), our
 * apiserver notices (its watch on that key, then its cache's 15 s poll) and refuses the old continue token.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createObject,
  isK8sError,
  K8sError,
  listAll,
  listMetadata,
  listPages,
  type KubeClient,
  type KubeObject,
  type ListPage,
} from '../../k8s/index.js';
import { configMap, createAll, installCrd, pod, setPodPhase } from './fixtures.js';
import { clientFor, controlPlane, testNamespace, uniqueName } from './harness.js';

const names = (items: { metadata?: { name?: string } }[]) => items.map((i) => i.metadata?.name).sort();

describe('listPages / listAll', () => {
  let admin: KubeClient;
  let ns: string;
  beforeAll(async () => {
    admin = clientFor('admin');
    ns = await testNamespace(admin, 'list');
    await createAll(admin, [
      ...Array.from({ length: 7 }, (_, i) => configMap(ns, `keep-${i}`, { i: String(i) }, { role: 'keep', n: String(i) })),
      configMap(ns, 'other', {}, { role: 'other' }),
    ]);
  });

  it('walks a list across 3 pages with limit/continue, one snapshot', async () => {
    const pages: ListPage<KubeObject>[] = [];
    for await (const p of listPages<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'role=keep', limit: 3 })) {
      pages.push(p);
    }
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    expect(pages.map((p) => p.index)).toEqual([0, 1, 2]);
    expect(pages.map((p) => p.restarts)).toEqual([0, 0, 0]);
    // the server estimates what is left only for lists without selectors
    expect(pages.map((p) => p.remainingItemCount)).toEqual([undefined, undefined, undefined]);
    expect(pages[0]?.continue).toBeTruthy();
    expect(pages[1]?.continue).toBeTruthy();
    expect(pages[2]?.continue).toBeUndefined();
    expect(new Set(pages.map((p) => p.resourceVersion)).size).toBe(1);
    expect(names(pages.flatMap((p) => p.items))).toEqual(names(Array.from({ length: 7 }, (_, i) => ({ metadata: { name: `keep-${i}` } }))));

    const all = await listAll(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'role=keep', limit: 3 });
    expect(all).toMatchObject({ pages: 3, restarts: 0 });
    expect(all.items).toHaveLength(7);
    expect(all.resourceVersion).toMatch(/^\d+$/);

    const unselected: ListPage<KubeObject>[] = [];
    for await (const p of listPages<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, limit: 3 })) unselected.push(p);
    expect(unselected.map((p) => [p.items.length, p.remainingItemCount])).toEqual([[3, 5], [3, 2], [2, undefined]]);
  });

  it('applies label and field selectors on the server', async () => {
    const sel = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'role=keep,n in (1,2)' });
    expect(names(sel.items)).toEqual(['keep-1', 'keep-2']);
    const byName = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, fieldSelector: 'metadata.name=other' });
    expect(names(byName.items)).toEqual(['other']);
    const p = pod(ns, 'done');
    await createObject(admin, p);
    await createObject(admin, pod(ns, 'busy'));
    await setPodPhase(admin, ns, 'done', 'Succeeded', new Date());
    await setPodPhase(admin, ns, 'busy', 'Running', new Date());
    const succeeded = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'Pod', namespace: ns, fieldSelector: 'status.phase=Succeeded' });
    expect(names(succeeded.items)).toEqual(['done']);
  });

  it("lists across all namespaces with namespace '' and defaults to the client's namespace", async () => {
    const ns2 = await testNamespace(admin, 'list2');
    const tag = uniqueName('tag');
    await createObject(admin, configMap(ns, 'x-a', {}, { tag }));
    await createObject(admin, configMap(ns2, 'x-b', {}, { tag }));
    const everywhere = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: '', labelSelector: `tag=${tag}` });
    expect(everywhere.items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort()).toEqual([`${ns}/x-a`, `${ns2}/x-b`].sort());
    // the admin kubeconfig's namespace is `default`
    const inDefault = await listAll(admin, { apiVersion: 'v1', kind: 'ConfigMap', labelSelector: `tag=${tag}` });
    expect(inDefault.items).toEqual([]);
  });

  it('lists metadata only (PartialObjectMetadataList): no data, labels kept, paged', async () => {
    const meta = await listMetadata(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'role=keep', limit: 3 });
    expect(meta.pages).toBe(3);
    expect(meta.items).toHaveLength(7);
    for (const item of meta.items) {
      expect(item.kind).toBe('PartialObjectMetadata');
      expect(item.apiVersion).toBe('meta.k8s.io/v1');
      expect(item.metadata.labels?.role).toBe('keep');
      expect(item.metadata.uid).toBeTruthy();
      expect(item).not.toHaveProperty('data');
    }
  });

  it("lists a CRD's objects through discovery, full and metadata-only", async () => {
    const group = `${uniqueName('g')}.cronflock.test`;
    await installCrd(admin, { group, version: 'v1alpha1', kind: 'Widget', plural: 'widgets', scope: 'Namespaced' });
    await createAll(
      admin,
      ['w1', 'w2', 'w3'].map((name) => ({ apiVersion: `${group}/v1alpha1`, kind: 'Widget', metadata: { name, namespace: ns }, spec: { size: name } })),
    );
    const widgets = await listAll<KubeObject>(admin, { apiVersion: `${group}/v1alpha1`, kind: 'Widget', namespace: ns, limit: 2 });
    expect(widgets.pages).toBe(2);
    expect(names(widgets.items)).toEqual(['w1', 'w2', 'w3']);
    expect(widgets.items[0]?.spec).toBeDefined();
    const meta = await listMetadata(admin, { apiVersion: `${group}/v1alpha1`, kind: 'Widget', namespace: ns });
    expect(meta.items.map((i) => i.kind)).toEqual(['PartialObjectMetadata', 'PartialObjectMetadata', 'PartialObjectMetadata']);
    expect(meta.items[0]).not.toHaveProperty('spec');
  });

  it('refuses what it cannot list', async () => {
    await expect(listAll(admin, { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview' })).rejects.toSatisfy((e) =>
      isK8sError(e, 'VERB_UNSUPPORTED'),
    );
    await expect(listAll(clientFor('restricted'), { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns })).rejects.toSatisfy((e) =>
      isK8sError(e, 'FORBIDDEN'),
    );
    await expect(listAll(admin, { apiVersion: 'v1', kind: 'ConfigMap', limit: 0 })).rejects.toThrow(RangeError);
  });
});

describe('410 Gone: the snapshot of a paged list was compacted away', () => {
  let admin: KubeClient;
  let ns: string;
  beforeAll(async () => {
    admin = clientFor('admin');
    ns = await testNamespace(admin, 'gone');
    await createAll(admin, Array.from({ length: 6 }, (_, i) => configMap(ns, `cm-${i}`)));
  });

  /** What another kube-apiserver's compactor does (k8s.io/apiserver storage/etcd3/compact.go): record, compact. */
  async function compactLikeAPeerApiserver(): Promise<number> {
    const { etcdUrl } = controlPlane();
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const etcd = async (p: string, body: unknown) => {
      const r = await fetch(`${etcdUrl}/v3/${p}`, { method: 'POST', body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`etcd ${p}: ${r.status} ${await r.text()}`);
      return (await r.json()) as { header: { revision: string } };
    };
    const rev = Number((await etcd('kv/range', { key: b64('compact_rev_key') })).header.revision);
    await etcd('kv/put', { key: b64('compact_rev_key'), value: b64(String(rev)) });
    await etcd('kv/compaction', { revision: String(rev), physical: true });
    return rev;
  }

  /** Waits until the apiserver refuses `token` with 410 (it learns of the compaction within ~15 s). */
  async function waitUntilExpired(token: string): Promise<K8sError> {
    const deadline = Date.now() + 40_000;
    for (;;) {
      const e = await admin
        .request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps`, query: { limit: 2, continue: token } })
        .then(() => undefined, (err: unknown) => err);
      if (isK8sError(e, 'GONE')) return e;
      if (e !== undefined) throw e;
      if (Date.now() > deadline) throw new Error('the apiserver did not expire the continue token within 40 s');
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  it('restarts the list from the first page and returns one complete snapshot', async () => {
    const restarts: { restarts: number; error: K8sError }[] = [];
    const pages: ListPage<KubeObject>[] = [];
    const it = listPages<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, limit: 2, onRestart: (r) => restarts.push(r) });
    const first = await it.next();
    if (first.done) throw new Error('no first page');
    pages.push(first.value);
    // the world moves on while we hold the continue token, then etcd is compacted past our snapshot
    await createObject(admin, configMap(ns, 'cm-late'));
    await compactLikeAPeerApiserver();
    const gone = await waitUntilExpired(first.value.continue ?? '');
    expect(gone).toMatchObject({ status: 410, reason: 'Expired' });

    for (let r = await it.next(); !r.done; r = await it.next()) pages.push(r.value);
    expect(restarts).toHaveLength(1);
    expect(restarts[0]?.error).toMatchObject({ code: 'GONE', reason: 'Expired' });
    expect(pages.map((p) => [p.index, p.restarts])).toEqual([[0, 0], [0, 1], [1, 1], [2, 1], [3, 1]]);
    // the new pass is a newer snapshot: it includes the object created after the first page
    const secondPass = pages.filter((p) => p.restarts === 1).flatMap((p) => p.items);
    expect(names(secondPass)).toEqual(['cm-0', 'cm-1', 'cm-2', 'cm-3', 'cm-4', 'cm-5', 'cm-late']);
    expect(Number(pages[1]?.resourceVersion)).toBeGreaterThan(Number(pages[0]?.resourceVersion));
  });

  it('gives up with RESTARTS_EXHAUSTED when 410s exceed maxRestarts', async () => {
    const it = listPages(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, limit: 2, maxRestarts: 0 });
    const first = await it.next();
    await createObject(admin, configMap(ns, uniqueName('cm')));
    await compactLikeAPeerApiserver();
    await waitUntilExpired(first.done ? '' : (first.value.continue ?? ''));
    const e = await it.next().catch((err: unknown) => err);
    expect(isK8sError(e, 'RESTARTS_EXHAUSTED')).toBe(true);
    expect((e as K8sError).cause).toMatchObject({ code: 'GONE' });
  });
});
