/**
 * `cronflock rbac` for backup and restore schedules without a cluster (kinds by the pluralisation rule); the
 * rules against a real API server are in test/k8s/backup-restore-rbac.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mergeNeeds, rbacYaml, simplifyNeeds } from '../../k8s/rbac.js';
import { backupRbacNeeds } from './rbac.js';
import { BIN, ROOT } from '../../test/support/replica.js';
import { restoreRbacNeeds } from '../restore/rbac.js';
import { restoreJobSchema } from '../restore/schema.js';
import { expandResourceSets } from './presets.js';
import { backupJobSchema } from './schema.js';

const dir = mkdtempSync(join(tmpdir(), 'cronflock-rbac-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const noDiscovery = { warn: () => undefined };

describe('rbac of backup and restore schedules, without a cluster', () => {
  it('backup: list where the sets list; restore: get/list/create/patch, delete with prune but never on Namespaces and CRDs; Secrets by name', async () => {
    const backup = backupJobSchema.parse({
      kind: 'backup',
      resourceSets: [
        { apiVersion: 'v1', kinds: ['ConfigMap', 'secrets'], namespaces: ['shop', 'web'], excludeNamespaces: ['web'] },
        { apiVersion: 'v1', kinds: ['Namespace'] },
        { apiVersion: 'apiextensions.k8s.io/v1', kinds: ['CustomResourceDefinition'] },
        { apiVersion: 'networking.k8s.io/v1', kinds: ['NetworkPolicy'], namespaceRegexp: '^team-' },
      ],
      storage: { type: 's3', bucket: 'backups', credentials: { secret: { namespace: 'ops', name: 's3' } } },
      encryption: { key: { secret: { namespace: 'ops', name: 'kek', key: 'k' } } },
    });
    const restore = restoreJobSchema.parse({
      kind: 'restore',
      backup: 'latest:nightly',
      prune: true,
      storage: { type: 'local', directory: '/b' },
      encryption: { key: { secret: { namespace: 'ops', name: 'kek', key: 'k' } }, previousKeys: [{ secret: { namespace: 'ops', name: 'kek-2025', key: 'k' } }, { file: './old' }] },
    });
    const needs = mergeNeeds(
      await backupRbacNeeds([{ schedule: 'nightly', params: backup }], noDiscovery),
      await restoreRbacNeeds([{ schedule: 'back', params: restore, selection: expandResourceSets(backup.resourceSets) }], noDiscovery),
    );
    expect(rbacYaml(simplifyNeeds(needs), 'cf')).toBe(
      [
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: ClusterRole',
        'metadata:',
        '  name: cf',
        'rules:',
        // Namespace and CRD are kinds of the selection (namespaced assumed without discovery: all namespaces)
        '  - apiGroups: [""]',
        '    resources: [namespaces]',
        '    verbs: [create, get, list, patch]',
        '  - apiGroups: ["apiextensions.k8s.io"]',
        '    resources: [customresourcedefinitions]',
        '    verbs: [create, get, list, patch]',
        '  - apiGroups: ["networking.k8s.io"]',
        '    resources: [networkpolicies]',
        '    verbs: [create, delete, get, list, patch]',
        '---',
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata:',
        '  name: cf',
        '  namespace: shop',
        'rules:',
        '  - apiGroups: [""]',
        '    resources: [configmaps]',
        '    verbs: [create, delete, get, list, patch]',
        '  - apiGroups: [""]',
        '    resources: [secrets]',
        '    verbs: [create, delete, get, list, patch]',
        '---',
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata:',
        '  name: cf',
        '  namespace: ops',
        'rules:',
        '  - apiGroups: [""]',
        '    resources: [secrets]',
        '    resourceNames: [kek, kek-2025, s3]',
        '    verbs: [get]',
        '',
      ].join('\n'),
    );
    // Without prune: no delete anywhere.
    const noPrune = await restoreRbacNeeds([{ schedule: 'back', params: { ...restore, prune: false }, selection: expandResourceSets(backup.resourceSets) }], noDiscovery);
    expect(rbacYaml(noPrune, 'x')).not.toMatch(/delete/);
    // A restore of listed namespaces only: get on those namespaces and kube-system, by name.
    const listed = await restoreRbacNeeds([{ schedule: 'back', params: restore, selection: expandResourceSets([{ preset: 'namespace-apps', namespaces: ['shop'] }]) }], noDiscovery);
    expect(listed.cluster).toEqual([{ apiGroups: [''], resources: ['namespaces'], verbs: ['get'], resourceNames: ['kube-system', 'shop'] }]);
    expect(listed.namespaced.get('shop')?.map((r) => r.resources[0])).toEqual([
      'configmaps', 'secrets', 'services', 'serviceaccounts', 'persistentvolumeclaims', 'deployments', 'statefulsets', 'daemonsets', 'jobs', 'cronjobs', 'ingresses', 'networkpolicies', 'roles', 'rolebindings', 'horizontalpodautoscalers', 'poddisruptionbudgets',
    ]);
  });

  it('a set that names no kinds needs discovery', async () => {
    const backup = backupJobSchema.parse({ kind: 'backup', resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'] }, { apiVersion: 'example.com/v1', kindsRegexp: '^Wid' }], storage: { type: 'local', directory: '/b' } });
    await expect(backupRbacNeeds([{ schedule: 'nightly', params: backup }], noDiscovery)).rejects.toMatchObject({
      code: 'RBAC',
      message: 'schedule nightly: resourceSets[1] selects kinds by kindsRegexp "^Wid": only the cluster\'s discovery can say which; give --kubeconfig or --discover',
    });
  });

  it('the CLI: a restore whose backup schedule is not in the files is refused; a file without Kubernetes jobs needs nothing', () => {
    const file = join(dir, 'restore-only.yaml');
    writeFileSync(file, 'schedules:\n  - name: back\n    cron: "0 3 * * *"\n    job: {kind: restore, backup: latest:nightly, storage: {type: local, directory: /b}}\n');
    const r = spawnSync(process.execPath, [BIN, 'rbac', file], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      `cronflock: schedule back restores latest:nightly: its kinds are what backup schedule nightly selects, and ${file} has no backup schedule of that name (give a directory with both)\n`,
    );
    const http = join(dir, 'http.yaml');
    writeFileSync(http, 'schedules:\n  - name: ping\n    cron: "* * * * *"\n    job: {kind: http, url: "http://127.0.0.1:1/"}\n');
    const h = spawnSync(process.execPath, [BIN, 'rbac', http], { cwd: ROOT, encoding: 'utf8' });
    expect(h.status).toBe(0);
    expect(h.stdout).toBe('');
    expect(h.stderr).toBe('no cleanup, backup or restore schedules: nothing needs Kubernetes permissions\n');
  });
});
