/**
 * `cronflock rbac` (the built CLI; needs dist/) for a file with a backup and a restore schedule: the ClusterRole
 * and Roles it prints, applied to the real kube-apiserver and bound to a ServiceAccount, let that
 * ServiceAccount run the backup (list ConfigMaps of one namespace, its key Secret by name, the cluster id) and
 * the restore with prune (read, plan, apply, prune-delete), through the registered job kinds' `run()`; a
 * ServiceAccount without them is refused both, and its restore applies nothing.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { findJobKind } from '../../jobs/registry.js';
import { canI, createKubeClient, createObject, listAll, loadKubeConfig, type KubeObject } from '../../k8s/index.js';
import { loadSchedules } from '../../runner/config/load.js';
import { RedisJobCoordination } from '../../runner/redis/job-locks.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { until } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';
import { backupContext } from './backup-support.js';
import { writeKubeconfig } from './control-plane.js';
import { configMap, createAll, mintToken } from './fixtures.js';
import { clientFor, controlPlane, testNamespace, uniqueName } from './harness.js';

let redisServer: RedisServerProcess;
let redis: Redis;
let dir: string;
beforeAll(async () => {
  redisServer = await RedisServerProcess.start();
  redis = new Redis(redisServer.url);
  dir = mkdtempSync(join(tmpdir(), 'cronflock-bkrbac-'));
});
afterAll(async () => {
  redis?.disconnect();
  await redisServer?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** A kubeconfig for a fresh ServiceAccount `name` of `namespace` (a TokenRequest token). */
async function serviceAccountKubeconfig(namespace: string, name: string): Promise<string> {
  const token = await mintToken(clientFor('admin'), namespace, name);
  const cp = controlPlane();
  return writeKubeconfig(join(dir, `${name}.kubeconfig`), cp.server, cp.caFile, token);
}

describe('cronflock rbac: backup and restore', () => {
  it('the printed rules let a ServiceAccount back up and restore with prune; without them both are refused', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'rb-data');
    const keyNs = await testNamespace(admin, 'rb-key');
    const saNs = await testNamespace(admin, 'rb-sa');
    const role = uniqueName('cronflock');
    await createObject(admin, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'backup-key', namespace: keyNs }, stringData: { kek: randomBytes(32).toString('base64') } });
    // a Secret of the same namespace the rules must not open
    await createObject(admin, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'other', namespace: keyNs }, stringData: { x: 'y' } });
    await createAll(admin, ['a', 'b', 'c'].map((n) => configMap(ns, n, { v: n }, { app: 'r' })));
    const granted = await serviceAccountKubeconfig(saNs, 'granted');
    const bare = await serviceAccountKubeconfig(saNs, 'bare');
    const file = join(dir, 'schedules.yaml');
    const storage = `{type: local, directory: ./archives}`;
    const key = `{key: {secret: {namespace: ${keyNs}, name: backup-key, key: kek}}}`;
    writeFileSync(
      file,
      `schedules:
  - name: rbk
    cron: "0 2 * * *"
    job:
      kind: backup
      kubeconfig: ${granted}
      resourceSets: [{apiVersion: v1, kinds: [ConfigMap], namespaces: [${ns}], labelSelector: app=r}]
      storage: ${storage}
      encryption: ${key}
  - name: rbk-restore
    cron: "0 3 * * *"
    job:
      kind: restore
      kubeconfig: ${granted}
      backup: latest:rbk
      prune: true
      storage: ${storage}
      encryption: ${key}
`,
    );
    const printed = spawnSync(process.execPath, [BIN, 'rbac', file, '--kubeconfig', controlPlane().users.admin.kubeconfig, '--name', role], { cwd: ROOT, encoding: 'utf8' });
    expect(printed.status, printed.stderr).toBe(0);
    expect(printed.stdout).toBe(
      [
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: ClusterRole',
        'metadata:',
        `  name: ${role}`,
        'rules:',
        '  - apiGroups: [""]',
        '    resources: [namespaces]',
        `    resourceNames: [kube-system, ${ns}]`,
        '    verbs: [get]',
        '---',
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata:',
        `  name: ${role}`,
        `  namespace: ${ns}`,
        'rules:',
        '  - apiGroups: [""]',
        '    resources: [configmaps]',
        '    verbs: [create, delete, get, list, patch]',
        '---',
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata:',
        `  name: ${role}`,
        `  namespace: ${keyNs}`,
        'rules:',
        '  - apiGroups: [""]',
        '    resources: [secrets]',
        '    resourceNames: [backup-key]',
        '    verbs: [get]',
        '',
      ].join('\n'),
    );
    const subject = { kind: 'ServiceAccount', name: 'granted', namespace: saNs };
    for (const doc of parseAllDocuments(printed.stdout).map((d) => d.toJS() as KubeObject)) {
      await createObject(admin, doc);
      const namespace = doc.metadata?.namespace;
      await createObject(admin, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: namespace ? 'RoleBinding' : 'ClusterRoleBinding',
        metadata: { name: role, ...(namespace ? { namespace } : {}) },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: doc.kind!, name: role },
        subjects: [subject],
      });
    }
    const sa = createKubeClient(loadKubeConfig({ kubeconfig: granted }));
    // RBAC changes reach the authorizer's cache quickly, not at once
    await until(async () => (await canI(sa, { verb: 'get', resource: 'secrets', namespace: keyNs, name: 'backup-key' })).allowed && (await canI(sa, { verb: 'delete', resource: 'configmaps', namespace: ns })).allowed, 10_000, 'the roles');
    expect((await canI(sa, { verb: 'get', resource: 'secrets', namespace: keyNs, name: 'other' })).allowed).toBe(false);

    const loaded = await loadSchedules(file);
    expect(loaded.errors).toEqual([]);
    const [backupJob, restoreJob] = loaded.schedules.map((s) => s.job as Record<string, unknown>);
    const as = (job: Record<string, unknown>, kubeconfig: string) => ({ ...job, kubeconfig });
    const backup = (kubeconfig: string) => findJobKind('backup')!.run(backupContext({ schedule: 'rbk' }), as(backupJob!, kubeconfig));
    const coordination = new RedisJobCoordination(redis, new Keyspace('bkrbac'), 'test');
    const restore = (kubeconfig: string) => findJobKind('restore')!.run({ ...backupContext({ schedule: 'rbk-restore' }), coordination }, as(restoreJob!, kubeconfig));
    const names = async () => (await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'app=r' })).items.map((o) => o.metadata!.name!).sort();

    // Without the rules: the backup cannot read its key.
    await expect(backup(bare)).rejects.toThrow(/Secret .*backup-key.*forbidden/is);
    // With them: it backs up the three ConfigMaps.
    expect(await backup(granted)).toMatchObject({ objects: 3, encrypted: true });

    await admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/configmaps`, query: { labelSelector: 'app=r' } });
    await createAll(admin, [configMap(ns, 'stray', {}, { app: 'r' })]);
    // Without the rules: the restore is refused before anything is applied.
    await expect(restore(bare)).rejects.toThrow(/forbidden/i);
    expect(await names()).toEqual(['stray']);
    // With them: it plans, applies and prunes.
    const report = (await restore(granted)) as { done: unknown };
    expect(report.done).toEqual({ ConfigMap: { create: 3, update: 0, unchanged: 0, delete: 1 } });
    expect(await names()).toEqual(['a', 'b', 'c']);
  }, 120_000);
});
