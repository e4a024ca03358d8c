/**
 * Presets unused-configmaps and unused-secrets against the real kube-apiserver: a ConfigMap or Secret
 * referenced from any pod template (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob), a Pod or a
 * ServiceAccount is in use; Helm release Secrets and service-account tokens are never unused.
 */
import { describe, expect, it } from 'vitest';
import { listAll, type KubeObject } from '../../k8s/index.js';
import { runCleanupJob } from './cleanup-support.js';
import { configMap, createAll } from './fixtures.js';
import { clientFor, testNamespace } from './harness.js';

const podSpec = (extra: Record<string, unknown>, container: Record<string, unknown> = {}) => ({
  restartPolicy: 'Never',
  containers: [{ name: 'main', image: 'registry.invalid/noop:1', ...container }],
  ...extra,
});
const template = (app: string, spec: Record<string, unknown>) => ({ metadata: { labels: { app } }, spec });

describe('cleanup presets: unused ConfigMaps and Secrets', () => {
  it('deletes only what nothing references', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'cl-unused');
    const secret = (name: string, type = 'Opaque', annotations: Record<string, string> = {}) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: ns, annotations },
      type,
      data: { k: Buffer.from('v').toString('base64') },
    });
    const restartAlways = (spec: Record<string, unknown>) => ({ ...spec, restartPolicy: 'Always' });
    await createAll(admin, [
      ...['cm-env', 'cm-envfrom', 'cm-vol', 'cm-projected', 'cm-unused', 'kube-root-ca.crt'].map((n) => configMap(ns, n)),
      ...['s-pull', 's-vol', 's-sa', 's-env', 's-unused'].map((n) => secret(n)),
      secret('sh.helm.release.v1.web.v1', 'helm.sh/release.v1'),
      secret('default-token', 'kubernetes.io/service-account-token', { 'kubernetes.io/service-account.name': 'default' }),
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'd', namespace: ns },
        spec: {
          selector: { matchLabels: { app: 'd' } },
          template: template('d', restartAlways(podSpec({}, { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cm-env', key: 'x' } } }] }))),
        },
      },
      {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        metadata: { name: 'cj', namespace: ns },
        spec: { schedule: '@daily', jobTemplate: { spec: { template: template('cj', podSpec({}, { envFrom: [{ configMapRef: { name: 'cm-envfrom' } }] })) } } },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'st', namespace: ns },
        spec: {
          serviceName: 'st',
          selector: { matchLabels: { app: 'st' } },
          template: template('st', restartAlways(podSpec({ volumes: [{ name: 'c', configMap: { name: 'cm-vol' } }] }))),
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: ns },
        spec: podSpec({ volumes: [{ name: 'all', projected: { sources: [{ configMap: { name: 'cm-projected' } }] } }] }),
      },
      {
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'ds', namespace: ns },
        spec: { selector: { matchLabels: { app: 'ds' } }, template: template('ds', restartAlways(podSpec({ imagePullSecrets: [{ name: 's-pull' }] }))) },
      },
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j', namespace: ns },
        spec: { template: template('j', podSpec({ volumes: [{ name: 's', secret: { secretName: 's-vol' } }] })) },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: { name: 'rs', namespace: ns },
        spec: {
          selector: { matchLabels: { app: 'rs' } },
          template: template('rs', restartAlways(podSpec({}, { env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 's-env', key: 'k' } } }] }))),
        },
      },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot', namespace: ns }, secrets: [{ name: 's-sa' }] },
    ]);

    const report = await runCleanupJob({
      resources: [
        { preset: 'unused-configmaps', namespaces: [ns] },
        { preset: 'unused-secrets', namespaces: [ns] },
      ],
      action: 'delete',
    });
    expect(report.objects.map((o) => `${o.kind}/${o.name} ${o.result}`).sort()).toEqual(['ConfigMap/cm-unused deleted', 'Secret/s-unused deleted']);
    const left = async (kind: string) => (await listAll<KubeObject>(admin, { apiVersion: 'v1', kind, namespace: ns })).items.map((o) => o.metadata?.name).sort();
    expect(await left('ConfigMap')).toEqual(['cm-env', 'cm-envfrom', 'cm-projected', 'cm-vol', 'kube-root-ca.crt']);
    expect(await left('Secret')).toEqual(['default-token', 's-env', 's-pull', 's-sa', 's-vol', 'sh.helm.release.v1.web.v1']);
  });
});
