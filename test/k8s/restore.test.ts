/**
 * `runRestore` against the real kube-apiserver, with a real redis-server for its lock: objects reproduced field
 * by field with owner references rewritten to the new uids, a CRD established before its objects, the dry-run
 * plan equal to what the restore then does, and prune within the selection only, never protected objects.
 * Backups here are in-memory sources built from live objects (restore-e2e.test.ts goes through real archives).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRestore, clusterIdOf, type RestoreOptions } from '../../jobs/restore/run.js';
import type { BackupSource } from '../../jobs/restore/source.js';
import { canI, createObject, getObject, listAll, patchObject, type KubeObject } from '../../k8s/index.js';
import { RedisJobCoordination } from '../../runner/redis/job-locks.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { until } from '../support/flock.js';
import { configMap, createAll, createNamespace, grantRole } from './fixtures.js';
import { clientFor, controlPlane, testNamespace, uniqueName } from './harness.js';
import { deleteAll, expectSameObject, memoryLog, snapshot, sourceOf, type Ref } from './restore-support.js';

let redisServer: RedisServerProcess;
let redis: Redis;
let coordination: RedisJobCoordination;
beforeAll(async () => {
  redisServer = await RedisServerProcess.start();
  redis = new Redis(redisServer.url);
  coordination = new RedisJobCoordination(redis, new Keyspace('restore-test'), 'test');
});
afterAll(async () => {
  redis?.disconnect();
  await redisServer?.cleanup();
});

const admin = () => clientFor('admin');

function restore(source: BackupSource, over: Partial<RestoreOptions> = {}) {
  return runRestore({
    client: admin(),
    source,
    backupName: source.manifest.name,
    dryRun: false,
    prune: false,
    lock: { coordination, ttlMs: 5000, scope: `test:${uniqueName()}` },
    signal: new AbortController().signal,
    log: memoryLog(),
    ...over,
  });
}

function deployment(ns: string, name: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns, labels: { app: name }, annotations: { note: 'restored?' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { serviceAccountName: 'runner', containers: [{ name: 'main', image: 'registry.invalid/web:1', envFrom: [{ configMapRef: { name: `${name}-config` } }] }] },
      },
    },
  };
}

describe('restore', () => {
  it('into an emptied namespace reproduces the objects field by field; owner references carry the new uids', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-same');
    const [dep] = await createAll(c, [deployment(ns, 'web')]);
    await createAll(c, [
      { ...configMap(ns, 'web-config', { mode: 'blue' }, { app: 'web' }), metadata: { name: 'web-config', namespace: ns, labels: { app: 'web' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: dep!.metadata!.uid!, controller: true, blockOwnerDeletion: true }] } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-tls', namespace: ns, finalizers: ['example.com/keep'] }, type: 'Opaque', stringData: { key: 'v' } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'runner', namespace: ns } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: ns }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } },
      { ...configMap(ns, 'orphan', { x: '1' }), metadata: { name: 'orphan', namespace: ns, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'gone', uid: '00000000-0000-0000-0000-000000000001' }] } },
    ]);
    // an owner outside the backup that stays in the cluster
    const [anchor] = await createAll(c, [configMap(ns, 'anchor', {})]);
    await createAll(c, [
      { ...configMap(ns, 'anchored', { y: '1' }), metadata: { name: 'anchored', namespace: ns, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'anchor', uid: anchor!.metadata!.uid! }] } },
    ]);
    const refs: Ref[] = [
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'web' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'web-config' },
      { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'web-tls' },
      { apiVersion: 'v1', kind: 'ServiceAccount', namespace: ns, name: 'runner' },
      { apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'web' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'orphan' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'anchored' },
    ];
    const before = await snapshot(c, refs);
    const source = sourceOf(before, { resourceSets: [{ apiVersion: 'v1', namespaces: [ns] }, { apiVersion: 'apps/v1', namespaces: [ns] }] }, await clusterIdOf(c));
    // Empty the namespace (the Secret keeps its finalizer: take it off so the delete completes)
    await patchObject(c, refs[2]!, { metadata: { finalizers: null } });
    await deleteAll(c, refs);
    for (const r of refs) await expect(getObject(c, r)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    const report = await restore(source);
    expect(report.done).toEqual({
      'Deployment.apps': { create: 1, update: 0, unchanged: 0, delete: 0 },
      ConfigMap: { create: 3, update: 0, unchanged: 0, delete: 0 },
      Secret: { create: 1, update: 0, unchanged: 0, delete: 0 },
      ServiceAccount: { create: 1, update: 0, unchanged: 0, delete: 0 },
      Service: { create: 1, update: 0, unchanged: 0, delete: 0 },
    });
    // one reference rewritten to the restored owner, one kept to the live owner; the reference to an owner in
    // neither the backup nor the cluster is dropped (the garbage collector would delete the object)
    expect(report.ownerReferences).toMatchObject({ rewritten: 1, live: 1, dropped: 1 });

    const after = await snapshot(c, refs);
    for (let i = 0; i < refs.length; i++) {
      const b = before[i]!.object as KubeObject;
      const a = after[i]!.object as KubeObject;
      if (refs[i]!.name === 'orphan') {
        expect(a.metadata?.ownerReferences).toBeUndefined();
        expect((a as { data?: unknown }).data).toEqual({ x: '1' });
        continue;
      }
      expectSameObject(b, a);
      expect(a.metadata?.uid).not.toBe(b.metadata?.uid);
      // (an object with no fields besides its name, like the ServiceAccount, gets no managedFields entry)
      if (refs[i]!.kind !== 'ServiceAccount') expect(a.metadata?.managedFields?.map((m) => `${m.manager}:${m.operation}`)).toContain('cronflock:Apply');
    }
    const newDep = after[0]!.object as KubeObject;
    const cm = after[1]!.object as KubeObject;
    expect(cm.metadata?.ownerReferences).toEqual([
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: newDep.metadata!.uid, controller: true, blockOwnerDeletion: true },
    ]);
    expect(cm.metadata?.ownerReferences?.[0]?.uid).not.toBe(dep!.metadata!.uid);
    expect((after[6]!.object as KubeObject).metadata?.ownerReferences?.[0]?.uid).toBe(anchor!.metadata!.uid);
    // finalizers are restored as they were backed up, not stripped
    expect((after[2]!.object as KubeObject).metadata?.finalizers).toEqual(['example.com/keep']);
    await patchObject(c, refs[2]!, { metadata: { finalizers: null } });
  });

  it('a CRD and its objects restore in order: the CRD is Established before its objects are applied', async () => {
    const c = admin();
    const group = `${uniqueName('g')}.example.com`;
    const ns = uniqueName('rs-crd'); // created by the restore
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `gadgets.${group}`, uid: 'orig-crd' },
      spec: {
        group,
        scope: 'Namespaced',
        names: { kind: 'Gadget', plural: 'gadgets', singular: 'gadget', listKind: 'GadgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    };
    const gadgets = ['a', 'b', 'c'].map((n) => ({ apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: n, namespace: ns, uid: `orig-${n}` }, spec: { size: n } }));
    const info = (kind: string, group: string, resource: string, namespaced: boolean) => ({ group, version: 'v1', resource, kind, namespaced });
    // listed CRs first, CRD last, namespace in the middle: the restore orders them itself
    const source = sourceOf(
      [
        ...gadgets.map((g) => ({ info: info('Gadget', group, 'gadgets', true), object: g })),
        { info: info('Namespace', '', 'namespaces', false), object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, uid: 'orig-ns' } } },
        { info: info('CustomResourceDefinition', 'apiextensions.k8s.io', 'customresourcedefinitions', false), object: crd },
      ],
      { resourceSets: [{ apiVersion: `${group}/v1` }] },
    );
    const dry = await restore(source, { dryRun: true });
    // the dry run cannot check objects whose CRD or namespace the restore creates: counted create, unvalidated
    expect(dry.plan.byKind).toMatchObject({ 'CustomResourceDefinition.apiextensions.k8s.io': { create: 1 }, Namespace: { create: 1 }, [`Gadget.${group}`]: { create: 3 } });
    expect(dry.plan.unvalidated).toBe(3);
    await expect(getObject(c, { apiVersion: 'v1', kind: 'Namespace', name: ns })).rejects.toMatchObject({ code: 'NOT_FOUND' });

    const log = memoryLog();
    const report = await restore(source, { log });
    expect(report.done).toEqual(dry.plan.byKind);
    // the wait for Established came before the step that applied the Gadgets (phase 4)
    const msgs = log.lines.map((l) => l as { obj: { phase?: number; crd?: string }; msg?: string });
    const waited = msgs.findIndex((l) => l.msg === 'restore: CRD established' && l.obj.crd === `gadgets.${group}`);
    const gadgetStep = msgs.findIndex((l) => l.msg === 'restore: step applied' && l.obj.phase === 4);
    expect(waited).toBeGreaterThanOrEqual(0);
    expect(waited).toBeLessThan(gadgetStep);
    const live = await getObject<KubeObject & { status: { conditions: { type: string; status: string; lastTransitionTime: string }[] } }>(c, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      name: `gadgets.${group}`,
    });
    const established = live.status.conditions.find((x) => x.type === 'Established' && x.status === 'True');
    expect(established).toBeDefined();
    const items = (await listAll<KubeObject>(c, { apiVersion: `${group}/v1`, kind: 'Gadget', namespace: ns })).items;
    expect(items.map((i) => i.metadata?.name).sort()).toEqual(['a', 'b', 'c']);
    for (const g of items) {
      // second precision on both: a CR created no earlier than its CRD became Established
      expect(Date.parse(g.metadata!.creationTimestamp as unknown as string)).toBeGreaterThanOrEqual(Date.parse(established!.lastTransitionTime));
      expect((g as { spec?: unknown }).spec).toEqual({ size: g.metadata?.name });
    }
  });

  it('admission webhooks come last: a webhook whose backend is not there yet does not block the objects restored before it', async () => {
    const c = admin();
    const label = uniqueName('hooked');
    const ns = await createNamespace(c, uniqueName('rs-hook'));
    await patchObject(c, { apiVersion: 'v1', kind: 'Namespace', name: ns }, { metadata: { labels: { [label]: 'yes' } } });
    const hookName = `${label}.example.com`;
    const info = (kind: string, group: string, resource: string, namespaced: boolean) => ({ group, version: 'v1', resource, kind, namespaced });
    const webhook = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: hookName, uid: 'orig-hook' },
      webhooks: [
        {
          name: hookName,
          // its backend is restored later (or never): every ConfigMap write in the namespace is refused meanwhile
          clientConfig: { service: { namespace: ns, name: 'no-such-backend', port: 443 } },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { [label]: 'yes' } },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    };
    const source = sourceOf(
      [
        // listed first: the restore orders it last
        { info: info('ValidatingWebhookConfiguration', 'admissionregistration.k8s.io', 'validatingwebhookconfigurations', false), object: webhook },
        ...['a', 'b'].map((n) => ({ info: info('ConfigMap', '', 'configmaps', true), object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: n, namespace: ns, uid: `orig-${n}` }, data: { n } } })),
      ],
      { resourceSets: [] },
    );
    try {
      const report = await restore(source);
      expect(report.done).toEqual({
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io': { create: 1, update: 0, unchanged: 0, delete: 0 },
        ConfigMap: { create: 2, update: 0, unchanged: 0, delete: 0 },
      });
      // the webhook is live now: a ConfigMap write in the namespace is refused (what would have happened to the
      // restore's own writes had the webhook been applied first)
      await expect(createObject(c, configMap(ns, 'late', {}))).rejects.toMatchObject({ message: expect.stringMatching(new RegExp(`failed calling webhook "${hookName.replaceAll('.', '\\.')}"`)) });
    } finally {
      await c.request({ method: 'DELETE', path: `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${hookName}` }).catch(() => undefined);
    }
  });

  it('the dry-run plan is what the restore then does, per kind and action; the dry run writes nothing', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-plan');
    const sel = { resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap', 'Secret'], namespaces: [ns], labelSelector: 'set=a' }] };
    await createAll(c, [
      configMap(ns, 'same', { v: '1' }, { set: 'a' }),
      configMap(ns, 'changed', { v: '1' }, { set: 'a' }),
      configMap(ns, 'gone', { v: '1' }, { set: 'a' }),
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1', namespace: ns, labels: { set: 'a' } }, stringData: { k: 'v' } },
      // more than five ConfigMaps: the plan reads them with one list (the Secret with one read)
      ...[1, 2, 3, 4].map((i) => configMap(ns, `same-${i}`, { v: String(i) }, { set: 'a' })),
    ]);
    const refs: Ref[] = ['same', 'changed', 'gone', 'same-1', 'same-2', 'same-3', 'same-4'].map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name }));
    const source = sourceOf(await snapshot(c, [...refs, { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 's1' }]), sel);
    // after the backup: one changed, one deleted, the Secret deleted, two new ones (one in the selection)
    await patchObject(c, refs[1]!, { data: { v: '2' } });
    await deleteAll(c, [refs[2]!, { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 's1' }]);
    await createAll(c, [configMap(ns, 'extra', {}, { set: 'a' }), configMap(ns, 'other', {}, { set: 'b' })]);
    const rvBefore = (await listAll<KubeObject>(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns })).items.map((i) => `${i.metadata?.name}@${i.metadata?.resourceVersion}`);

    const dry = await restore(source, { dryRun: true, prune: true });
    expect(dry.plan.byKind).toEqual({
      ConfigMap: { create: 1, update: 1, unchanged: 5, delete: 1 },
      Secret: { create: 1, update: 0, unchanged: 0, delete: 0 },
    });
    expect(dry.plan.prune.map((p) => p.name)).toEqual(['extra']);
    expect(dry.done).toBeUndefined();
    const rvAfterDry = (await listAll<KubeObject>(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns })).items.map((i) => `${i.metadata?.name}@${i.metadata?.resourceVersion}`);
    expect(rvAfterDry).toEqual(rvBefore);

    const real = await restore(source, { prune: true });
    expect(real.plan.byKind).toEqual(dry.plan.byKind);
    expect(real.done).toEqual(dry.plan.byKind);
    const names = (await listAll<KubeObject>(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns })).items.map((i) => i.metadata?.name).sort();
    expect(names).toEqual(['changed', 'gone', 'other', 'same', 'same-1', 'same-2', 'same-3', 'same-4']);
    const changed = await getObject<KubeObject & { data: Record<string, string> }>(c, refs[1]!);
    expect(changed.data).toEqual({ v: '1' });
    // again: everything unchanged now
    const again = await restore(source, { prune: true });
    expect(again.done).toEqual({ ConfigMap: { create: 0, update: 0, unchanged: 7, delete: 0 }, Secret: { create: 0, update: 0, unchanged: 1, delete: 0 } });
  });

  it('prune removes only objects inside the selection, never a protected one, and lists both in the plan first', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-prune');
    const other = await createNamespace(c, uniqueName('rs-prune-other'));
    await createAll(c, [configMap(ns, 'kept', { v: '1' }, { app: 'x' })]);
    const source = sourceOf(await snapshot(c, [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'kept' }]), {
      resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], labelSelector: 'app=x', excludeNameRegexps: ['^skip-'] }],
    });
    await createAll(c, [
      configMap(ns, 'stray-1', {}, { app: 'x' }),
      configMap(ns, 'stray-2', {}, { app: 'x' }),
      configMap(ns, 'guarded', {}, { app: 'x', 'cronflock.io/protect': 'true' }),
      { ...configMap(ns, 'guarded-annotation', {}, { app: 'x' }), metadata: { name: 'guarded-annotation', namespace: ns, labels: { app: 'x' }, annotations: { 'cronflock.io/protect': 'true' } } },
      configMap(ns, 'skip-me', {}, { app: 'x' }), // excluded by name
      configMap(ns, 'unlabelled', {}), // outside the label selector
      configMap(other, 'stray-elsewhere', {}, { app: 'x' }), // outside the namespaces
      { ...configMap(ns, 'finalized', {}, { app: 'x' }), metadata: { name: 'finalized', namespace: ns, labels: { app: 'x' }, finalizers: ['example.com/hold'] } },
    ]);
    const dry = await restore(source, { dryRun: true, prune: true });
    expect(dry.plan.prune.map((p) => p.name).sort()).toEqual(['finalized', 'stray-1', 'stray-2']);
    expect(dry.plan.protected.sort()).toEqual([`ConfigMap ${ns}/guarded`, `ConfigMap ${ns}/guarded-annotation`]);
    expect(dry.plan.byKind.ConfigMap).toEqual({ create: 0, update: 0, unchanged: 1, delete: 3 });

    const report = await restore(source, { prune: true });
    expect(report.done?.ConfigMap).toEqual({ create: 0, update: 0, unchanged: 1, delete: 3 });
    expect(report.prunePending).toBe(1);
    const left = (await listAll<KubeObject>(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns })).items;
    const byName = new Map(left.map((i) => [i.metadata!.name!, i]));
    expect([...byName.keys()].sort()).toEqual(['finalized', 'guarded', 'guarded-annotation', 'kept', 'kube-root-ca.crt', 'skip-me', 'unlabelled'].filter((n) => n !== 'kube-root-ca.crt' || byName.has(n)));
    // the finalizer is left in place: the object waits in Terminating for whoever owns the finalizer
    const fin = byName.get('finalized')!;
    expect(fin.metadata?.deletionTimestamp).toBeDefined();
    expect(fin.metadata?.finalizers).toEqual(['example.com/hold']);
    await getObject(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: other, name: 'stray-elsewhere' });
    await patchObject(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'finalized' }, { metadata: { finalizers: null } });
  });

  it('a prune interrupted by a lost lock resumes without deleting again what it already deleted', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-prune-resume');
    await createAll(c, [configMap(ns, 'kept', {}, { app: 'p' })]);
    const source = sourceOf(await snapshot(c, [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'kept' }]), {
      resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], labelSelector: 'app=p' }],
    });
    const N = 30;
    await createAll(c, Array.from({ length: N }, (_, i) => configMap(ns, `stray-${String(i).padStart(2, '0')}`, {}, { app: 'p' })));
    const scope = `test:${uniqueName()}`;
    // a slow client (10 requests/s, one at a time) so the test can take the lock away in the middle of the prune
    const slow = clientFor('admin', { qps: 10, burst: 1 });
    const first = restore(source, { client: slow, prune: true, concurrency: 1, lock: { coordination, ttlMs: 5000, scope } });
    let deletedFirst: string[] = [];
    const t0 = Date.now();
    for (;;) {
      const keys = await redis.keys('{restore-test}:jobckpt:*');
      const fields = keys.length === 1 ? await redis.hgetall(keys[0]!) : {};
      deletedFirst = Object.keys(fields).filter((f) => f.startsWith('d:'));
      if (deletedFirst.length >= 3) break;
      if (Date.now() - t0 > 30_000) throw new Error('the prune did not start');
      await new Promise((r) => setTimeout(r, 10));
    }
    // the holder's lease lapses on the Redis clock: its next checkpoint write is refused and it stops
    const clusterId = await clusterIdOf(c);
    await redis.hset(coordination.lockKey(`restore:${clusterId}`), 'until', 0);
    await expect(first).rejects.toMatchObject({ code: 'LOCK_LOST' });
    const names = deletedFirst.map((f) => f.split('/').pop()!);
    // someone re-creates the objects the first holder pruned: the resumed restore must leave them alone
    await createAll(c, names.map((n) => configMap(ns, n, { again: 'yes' }, { app: 'p' })));

    const second = await restore(source, { prune: true, lock: { coordination, ttlMs: 5000, scope } });
    expect(second.fencingToken).toBeGreaterThan(1);
    expect(second.resumed).toBeGreaterThanOrEqual(names.length + 1);
    expect(second.done?.ConfigMap).toEqual({ create: 0, update: 0, unchanged: 1, delete: N });
    const left = (await listAll<KubeObject>(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'app=p' })).items.map((i) => i.metadata?.name).sort();
    expect(left).toEqual(['kept', ...names].sort());
  });

  it('a prune the restorer may not do fails the plan (dry-run deletes), before anything is applied', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-prune-rbac');
    await createAll(c, [configMap(ns, 'wanted', { v: '1' }, { app: 'r' })]);
    const source = sourceOf(await snapshot(c, [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'wanted' }]), {
      resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], labelSelector: 'app=r' }],
    });
    await deleteAll(c, [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'wanted' }]);
    await createAll(c, [configMap(ns, 'stray', {}, { app: 'r' })]);
    // the restricted user may read and apply ConfigMaps in the namespace, and read the two Namespaces; not delete
    const user = controlPlane().users.restricted.name;
    const role = uniqueName('restorer');
    await createObject(c, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role }, rules: [{ apiGroups: [''], resources: ['namespaces'], resourceNames: ['kube-system', ns], verbs: ['get'] }] });
    await createObject(c, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    await grantRole(c, ns, role, { kind: 'User', name: user }, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch'] }]);
    const restricted = clientFor('restricted');
    // RBAC changes reach the authorizer's cache quickly, not at once
    await until(async () => (await canI(restricted, { verb: 'list', resource: 'configmaps', namespace: ns })).allowed, 10_000, 'the role');
    const err = (await restore(source, { client: restricted, prune: true }).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('PLAN');
    expect(err.message).toMatch(new RegExp(`refused 1 prune delete\\(s\\); nothing was applied:\\n  delete ConfigMap ${ns}/stray: .*forbidden`, 's'));
    await expect(getObject(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'wanted' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await getObject(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'stray' });
    // without prune the same user restores
    const ok = await restore(source, { client: restricted });
    expect(ok.done?.ConfigMap).toEqual({ create: 1, update: 0, unchanged: 0, delete: 0 });
  });

  it('prune is off by default: objects outside the backup stay', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-noprune');
    await createAll(c, [configMap(ns, 'a', {}, { app: 'x' })]);
    const source = sourceOf(await snapshot(c, [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'a' }]), { resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns] }] });
    await createObject(c, configMap(ns, 'b', {}, { app: 'x' }));
    const report = await restore(source);
    expect(report.plan.prune).toEqual([]);
    expect(report.done?.ConfigMap?.delete).toBe(0);
    await getObject(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'b' });
  });

  it('a backup that cannot be read fully applies nothing and says which backup', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-bad');
    await createAll(c, [configMap(ns, 'a', {}), configMap(ns, 'b', {})]);
    const good = sourceOf(await snapshot(c, ['a', 'b'].map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name }))), { resourceSets: [] });
    await deleteAll(c, ['a', 'b'].map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name })));
    const broken: BackupSource = {
      manifest: good.manifest,
      authenticated: true,
      async *objects() {
        let n = 0;
        for await (const o of good.objects()) {
          if (n++ === 1) throw Object.assign(new Error('configmaps.#v1/x/b.json: sha256 does not match the manifest'), { code: 'VERIFY' });
          yield o;
        }
      },
    };
    await expect(restore(broken)).rejects.toMatchObject({ code: 'BACKUP', message: expect.stringMatching(/test-backup: .*sha256 does not match/) });
    await expect(getObject(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'a' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('an object the dry run refuses fails the whole restore before any write, naming the object and the reason', async () => {
    const c = admin();
    const ns = await testNamespace(c, 'rs-refuse');
    const missingNs = uniqueName('nope');
    const info = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true };
    const source = sourceOf(
      [
        { info, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fine', namespace: ns }, data: { a: 'b' } } },
        { info, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bad', namespace: ns }, data: { a: 1 } } },
        { info, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'lost', namespace: missingNs }, data: {} } },
      ],
      { resourceSets: [] },
    );
    const err = (await restore(source).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('PLAN');
    expect(err.message).toMatch(/refused 2 object\(s\); nothing was applied/);
    expect(err.message).toMatch(new RegExp(`ConfigMap ${ns}/bad: .*(data|a)`));
    expect(err.message).toMatch(new RegExp(`ConfigMap ${missingNs}/lost: namespace ${missingNs} does not exist and the backup has no Namespace`));
    await expect(getObject(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'fine' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
