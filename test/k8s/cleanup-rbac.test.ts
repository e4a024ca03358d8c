/**
 * `cronflock rbac`: the role it prints for a schedule file is enough for the cleanup to pass its preflight and
 * run as a user that has nothing else, and each rule in it is needed (a role without one fails the preflight
 * naming exactly that permission).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { CleanupParams } from '../../jobs/cleanup/index.js';
import { rbacNeeds, rbacYaml } from '../../jobs/cleanup/rbac.js';
import { findJobKind } from '../../jobs/registry.js';
import { createObject, getObject, isK8sError, type KubeObject } from '../../k8s/index.js';
import { loadSchedules } from '../../runner/config/load.js';
import { jobContext } from './cleanup-support.js';
import { configMap, createAll, job, setJobFinished } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

describe('cronflock rbac', () => {
  it('prints Roles that let a user with no other rights run the schedule, and no rule too many', async () => {
    const admin = clientFor('admin');
    const nsA = await testNamespace(admin, 'rb-a');
    const nsB = await testNamespace(admin, 'rb-b');
    await createAll(admin, [configMap(nsA, 'old'), job(nsB, 'done')]);
    await setJobFinished(admin, nsB, 'done', 'Complete', new Date(Date.now() - 7_200_000));
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-rbac-'));
    const file = join(dir, 'cleanup.yaml');
    writeFileSync(
      file,
      [
        'schedules:',
        '  - name: tidy',
        '    cron: "0 * * * *"',
        '    job:',
        '      kind: cleanup',
        `      kubeconfig: ${controlPlane().users.restricted.kubeconfig}`,
        '      action: delete',
        '      resources:',
        `        - {apiVersion: v1, kind: ConfigMap, namespaces: [${nsA}]}`,
        `        - {preset: finished-jobs, namespaces: [${nsB}], olderThan: 1h}`,
        '',
      ].join('\n'),
    );
    const loaded = await loadSchedules(file);
    expect(loaded.errors).toEqual([]);
    const params = loaded.schedules[0]!.job as unknown as CleanupParams;
    // what the command does with --kubeconfig: resolve kinds through discovery
    const text = rbacYaml(await rbacNeeds([params], (v, k) => admin.discovery.resolve(v, k)), 'tidy');
    expect(text).toBe(
      [
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata:',
        '  name: tidy',
        `  namespace: ${nsA}`,
        'rules:',
        '  - apiGroups: [""]',
        '    resources: [configmaps]',
        '    verbs: [delete, list]',
        '---',
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata:',
        '  name: tidy',
        `  namespace: ${nsB}`,
        'rules:',
        '  - apiGroups: ["batch"]',
        '    resources: [jobs]',
        '    verbs: [delete, list]',
        '',
      ].join('\n'),
    );
    // Without the Role in nsB: exactly the permissions it grants are missing.
    const run = () => findJobKind('cleanup')!.run(jobContext(), { ...params, qps: 200 });
    const roles = parseAllDocuments(text).map((d) => d.toJS() as KubeObject);
    const bind = async (role: KubeObject) => {
      await createObject(admin, role);
      await createObject(admin, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'tidy', namespace: role.metadata?.namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tidy' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: controlPlane().users.restricted.name }],
      });
    };
    await bind(roles[0]!);
    await expect(run()).rejects.toThrow(
      `preflight failed:\nmissing permission: list jobs.batch in namespace "${nsB}"\nmissing permission: delete jobs.batch in namespace "${nsB}"`,
    );
    await bind(roles[1]!);
    expect(await run()).toMatchObject({ acted: 2, errored: 0 });
    await expect(getObject(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: nsB, name: 'done' })).rejects.toSatisfy((e) => isK8sError(e, 'NOT_FOUND'));
  });

  it('prints a ClusterRole (with namespaces list) for a selector over label-selected namespaces and a Role for named ones; scale is patch on /scale', async () => {
    const admin = clientFor('admin');
    const kind = findJobKind('cleanup')!;
    const p = kind.schema.parse({
      kind: 'cleanup',
      action: 'scale',
      resources: [{ apiVersion: 'apps/v1', kind: 'Deployment', namespaceSelector: 'idle=true' }, { apiVersion: 'apps/v1', kind: 'StatefulSet', namespaces: ['x'] }],
    }) as CleanupParams;
    const text = rbacYaml(await rbacNeeds([p], (v, k) => admin.discovery.resolve(v, k)));
    expect(text).toBe(
      [
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: ClusterRole',
        'metadata:',
        '  name: cronflock-cleanup',
        'rules:',
        '  - apiGroups: [""]',
        '    resources: [namespaces]',
        '    verbs: [list]',
        '  - apiGroups: ["apps"]',
        '    resources: [deployments]',
        '    verbs: [list]',
        '  - apiGroups: ["apps"]',
        '    resources: [deployments/scale]',
        '    verbs: [patch]',
        '---',
        'apiVersion: rbac.authorization.k8s.io/v1',
        'kind: Role',
        'metadata:',
        '  name: cronflock-cleanup',
        '  namespace: x',
        'rules:',
        '  - apiGroups: ["apps"]',
        '    resources: [statefulsets]',
        '    verbs: [list]',
        '  - apiGroups: ["apps"]',
        '    resources: [statefulsets/scale]',
        '    verbs: [patch]',
        '',
      ].join('\n'),
    );
    // the same without a cluster: names by the pluralisation rule
    expect(rbacYaml(await rbacNeeds([p]))).toBe(text);
  });
});
