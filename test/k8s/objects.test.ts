/** Single-object calls against the real API server: get/create/patch, preconditioned deletes, server-side apply. */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  createKubeClient,
  createObject,
  deleteObject,
  getObject,
  isK8sError,
  loadKubeConfig,
  patchObject,
  serverSideApply,
  type KubeClient,
  type KubeObject,
} from '../../k8s/index.js';
import { writeKubeconfig } from './control-plane.js';
import { configMap } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

const cmRef = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name });

let admin: KubeClient;
let ns: string;
beforeEach(async () => {
  admin = clientFor('admin');
  ns = await testNamespace(admin, 'obj');
});

describe('getObject / createObject / patchObject', () => {
  it('creates, reads and patches (merge, JSON, strategic) an object', async () => {
    const created = await createObject(admin, configMap(ns, 'a', { x: '1' }), { fieldManager: 'cronflock-test' });
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.metadata?.managedFields?.[0]?.manager).toBe('cronflock-test');
    const read = await getObject<KubeObject>(admin, cmRef(ns, 'a'));
    expect(read.data).toEqual({ x: '1' });
    expect((await patchObject<KubeObject>(admin, cmRef(ns, 'a'), { data: { y: '2' } })).data).toEqual({ x: '1', y: '2' });
    const jsonPatched = await patchObject<KubeObject>(admin, cmRef(ns, 'a'), [{ op: 'remove', path: '/data/x' }], { type: 'json' });
    expect(jsonPatched.data).toEqual({ y: '2' });
    const strategic = await patchObject<KubeObject>(admin, cmRef(ns, 'a'), { metadata: { labels: { s: 't' } } }, { type: 'strategic' });
    expect(strategic.metadata?.labels).toEqual({ s: 't' });
  });

  it('dry-runs writes', async () => {
    await createObject(admin, configMap(ns, 'dry'), { dryRun: true });
    await expect(getObject(admin, cmRef(ns, 'dry'))).rejects.toSatisfy((e) => isK8sError(e, 'NOT_FOUND'));
  });

  it('uses the client namespace when the object has none, and reports AlreadyExists as CONFLICT', async () => {
    const cp = controlPlane();
    const file = writeKubeconfig(`${cp.dir}/${ns}.kubeconfig`, cp.server, cp.caFile, cp.users.admin.token, ns);
    const c = createKubeClient(loadKubeConfig({ kubeconfig: file })); // context namespace: ns
    expect(c.namespace).toBe(ns);
    await createObject(c, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'here' } });
    expect((await getObject(admin, cmRef(ns, 'here'))).metadata?.namespace).toBe(ns);
    const e = await createObject(admin, configMap(ns, 'here')).catch((err: unknown) => err);
    expect(e).toMatchObject({ code: 'CONFLICT', status: 409, reason: 'AlreadyExists' });
  });

  it('refuses a patch whose resourceVersion is stale (optimistic concurrency)', async () => {
    const v1 = await createObject(admin, configMap(ns, 'occ', { n: '1' }));
    await patchObject(admin, cmRef(ns, 'occ'), { data: { n: '2' } });
    const e = await patchObject(admin, cmRef(ns, 'occ'), { metadata: { resourceVersion: v1.metadata?.resourceVersion }, data: { n: '3' } }).catch(
      (err: unknown) => err,
    );
    expect(e).toMatchObject({ code: 'CONFLICT', status: 409, reason: 'Conflict' });
  });
});

describe('deleteObject', () => {
  it('deletes, then reports an already deleted object as gone (404)', async () => {
    await createObject(admin, configMap(ns, 'd'));
    expect(await deleteObject(admin, cmRef(ns, 'd'))).toMatchObject({ outcome: 'deleted', pending: false });
    await expect(getObject(admin, cmRef(ns, 'd'))).rejects.toSatisfy((e) => isK8sError(e, 'NOT_FOUND'));
    expect(await deleteObject(admin, cmRef(ns, 'd'))).toEqual({ outcome: 'gone' });
  });

  it('deletes with matching uid and resourceVersion preconditions', async () => {
    const o = await createObject(admin, configMap(ns, 'match'));
    const out = await deleteObject(admin, cmRef(ns, 'match'), {
      preconditions: { uid: o.metadata?.uid, resourceVersion: o.metadata?.resourceVersion },
    });
    expect(out.outcome).toBe('deleted');
    await expect(getObject(admin, cmRef(ns, 'match'))).rejects.toSatisfy((e) => isK8sError(e, 'NOT_FOUND'));
  });

  it('gets 409 and deletes nothing when the object was re-created (uid precondition)', async () => {
    const old = await createObject(admin, configMap(ns, 'again', { gen: 'old' }));
    await deleteObject(admin, cmRef(ns, 'again'));
    const fresh = await createObject(admin, configMap(ns, 'again', { gen: 'new' }));
    const out = await deleteObject(admin, cmRef(ns, 'again'), { preconditions: { uid: old.metadata?.uid } });
    expect(out.outcome).toBe('changed');
    if (out.outcome !== 'changed') throw new Error('unreachable');
    expect(out.error).toMatchObject({ code: 'CONFLICT', status: 409, reason: 'Conflict' });
    expect(out.error.message).toMatch(/the UID in the precondition \(.*\) does not match the UID in record/);
    const still = await getObject<KubeObject>(admin, cmRef(ns, 'again'));
    expect(still.metadata?.uid).toBe(fresh.metadata?.uid);
    expect(still.data).toEqual({ gen: 'new' });
  });

  it('gets 409 and deletes nothing when the object changed (resourceVersion precondition)', async () => {
    const read = await createObject(admin, configMap(ns, 'moved', { v: '1' }));
    await patchObject(admin, cmRef(ns, 'moved'), { data: { v: '2' } });
    const out = await deleteObject(admin, cmRef(ns, 'moved'), {
      preconditions: { uid: read.metadata?.uid, resourceVersion: read.metadata?.resourceVersion },
    });
    expect(out).toMatchObject({ outcome: 'changed', error: { code: 'CONFLICT', status: 409 } });
    expect((await getObject<KubeObject>(admin, cmRef(ns, 'moved'))).data).toEqual({ v: '2' });
  });

  it('reports a delete held by a finalizer as pending, until the finalizer is removed', async () => {
    await createObject(admin, { ...configMap(ns, 'held'), metadata: { name: 'held', namespace: ns, finalizers: ['cronflock.test/hold'] } });
    const out = await deleteObject(admin, cmRef(ns, 'held'));
    expect(out).toMatchObject({ outcome: 'deleted', pending: true });
    expect((await getObject(admin, cmRef(ns, 'held'))).metadata?.deletionTimestamp).toBeTruthy();
    await patchObject(admin, cmRef(ns, 'held'), { metadata: { finalizers: null } });
    await expect(getObject(admin, cmRef(ns, 'held'))).rejects.toSatisfy((e) => isK8sError(e, 'NOT_FOUND'));
  });

  it('dry-runs a delete, honours propagationPolicy, and refuses what cannot be deleted', async () => {
    await createObject(admin, configMap(ns, 'stay'));
    expect((await deleteObject(admin, cmRef(ns, 'stay'), { dryRun: true })).outcome).toBe('deleted');
    expect((await getObject(admin, cmRef(ns, 'stay'))).metadata?.name).toBe('stay');
    expect((await deleteObject(admin, cmRef(ns, 'stay'), { propagationPolicy: 'Foreground', gracePeriodSeconds: 0 })).outcome).toBe('deleted');
    await expect(
      deleteObject(admin, { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', name: 'x' }),
    ).rejects.toSatisfy((e) => isK8sError(e, 'VERB_UNSUPPORTED'));
    const denied = await deleteObject(clientFor('restricted'), cmRef(ns, 'stay')).catch((e: unknown) => e);
    expect(isK8sError(denied, 'FORBIDDEN')).toBe(true);
  });
});

describe('serverSideApply', () => {
  const desired = (namespace: string, data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'applied', namespace, labels: { app: 'cronflock' } },
    data,
  });

  it('creates, and applying the same content again is a no-op (resourceVersion unchanged)', async () => {
    const first = await serverSideApply(admin, desired(ns, { a: '1' }), { fieldManager: 'cronflock' });
    const second = await serverSideApply(admin, desired(ns, { a: '1' }), { fieldManager: 'cronflock' });
    expect(second.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    expect(second.metadata?.uid).toBe(first.metadata?.uid);
    expect(second.metadata?.managedFields?.map((m) => [m.manager, m.operation])).toEqual([['cronflock', 'Apply']]);

    const third = await serverSideApply<KubeObject>(admin, desired(ns, { a: '2' }), { fieldManager: 'cronflock' });
    expect(third.metadata?.resourceVersion).not.toBe(first.metadata?.resourceVersion);
    expect(third.data).toEqual({ a: '2' });
  });

  it('removes fields the manager no longer applies, keeps fields of other managers', async () => {
    await serverSideApply(admin, desired(ns, { a: '1', b: '2' }), { fieldManager: 'cronflock' });
    await serverSideApply(admin, { ...desired(ns, {}), data: { other: 'x' } }, { fieldManager: 'someone-else' });
    const after = await serverSideApply<KubeObject>(admin, desired(ns, { a: '1' }), { fieldManager: 'cronflock' });
    expect(after.data).toEqual({ a: '1', other: 'x' });
  });

  it("conflicts on another manager's field without force, takes it over with force", async () => {
    await serverSideApply(admin, desired(ns, { a: '1' }), { fieldManager: 'cronflock' });
    const e = await serverSideApply(admin, desired(ns, { a: 'mine' }), { fieldManager: 'intruder' }).catch((err: unknown) => err);
    expect(e).toMatchObject({ code: 'CONFLICT', status: 409, reason: 'Conflict' });
    expect((e as Error).message).toContain('conflict with "cronflock"');
    const forced = await serverSideApply<KubeObject>(admin, desired(ns, { a: 'mine' }), { fieldManager: 'intruder', force: true });
    expect(forced.data).toEqual({ a: 'mine' });
  });

  it('dry-runs, applies to a CRD-less built-in status subresource, and needs a name', async () => {
    await serverSideApply(admin, desired(ns, { a: '1' }), { fieldManager: 'cronflock', dryRun: true });
    await expect(getObject(admin, cmRef(ns, 'applied'))).rejects.toSatisfy((e) => isK8sError(e, 'NOT_FOUND'));
    await createObject(admin, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: ns },
      spec: { containers: [{ name: 'main', image: 'registry.invalid/noop:1' }] },
    });
    const withStatus = await serverSideApply<KubeObject>(
      admin,
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: ns }, status: { phase: 'Running' } },
      { fieldManager: 'fake-kubelet', subresource: 'status' },
    );
    expect((withStatus.status as { phase?: string }).phase).toBe('Running');
    await expect(serverSideApply(admin, { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} }, { fieldManager: 'x' })).rejects.toThrow(TypeError);
  });
});
