import { describe, expect, it } from 'vitest';
import type { ManifestEntry } from '../backup/format.js';
import { orderSteps, phaseOf, type OrderItem } from './order.js';

const entry = (kind: string, group: string, namespaced: boolean, name: string, uid = name): ManifestEntry => ({
  group,
  version: 'v1',
  resource: `${kind.toLowerCase()}s`,
  kind,
  namespaced,
  ...(namespaced ? { namespace: 'ns' } : {}),
  name,
  uid,
  sha256: '',
  path: '',
});
const item = (e: ManifestEntry, owners: string[] = []): OrderItem => ({ entry: e, ownerUids: owners });

describe('restore order', () => {
  it('CRDs, namespaces, cluster-scoped, foundations, workloads, then webhooks and APIServices', () => {
    const items = [
      item(entry('ValidatingWebhookConfiguration', 'admissionregistration.k8s.io', false, 'hook')),
      item(entry('Deployment', 'apps', true, 'web')),
      item(entry('APIService', 'apiregistration.k8s.io', false, 'v1.x')),
      item(entry('ConfigMap', '', true, 'cm')),
      item(entry('Widget', 'example.com', true, 'w')),
      item(entry('ClusterRole', 'rbac.authorization.k8s.io', false, 'cr')),
      item(entry('Namespace', '', false, 'ns')),
      item(entry('ServiceAccount', '', true, 'sa')),
      item(entry('CustomResourceDefinition', 'apiextensions.k8s.io', false, 'widgets.example.com')),
      item(entry('Secret', '', true, 's')),
      item(entry('PersistentVolumeClaim', '', true, 'pvc')),
    ];
    const names = orderSteps(items).map((s) => s.items.map((i) => i.entry.name));
    expect(names).toEqual([['widgets.example.com'], ['ns'], ['cr'], ['cm', 'sa', 's', 'pvc'], ['web', 'w'], ['hook', 'v1.x']]);
  });

  it('an owned object comes after its owner, even when its kind comes earlier', () => {
    const dep = entry('Deployment', 'apps', true, 'web', 'u-dep');
    const cm = entry('ConfigMap', '', true, 'web-config', 'u-cm');
    const rs = entry('ReplicaSet', 'apps', true, 'web-1', 'u-rs');
    const pod = entry('Pod', '', true, 'web-1-a', 'u-pod');
    const steps = orderSteps([item(pod, ['u-rs']), item(cm, ['u-dep']), item(rs, ['u-dep']), item(dep), item(entry('ConfigMap', '', true, 'free'))]);
    expect(steps.map((s) => [s.phase, s.depth, s.items.map((i) => i.entry.name)])).toEqual([
      [3, 0, ['free']],
      [4, 0, ['web']],
      [4, 1, ['web-config', 'web-1']],
      [4, 2, ['web-1-a']],
    ]);
    expect(phaseOf(cm)).toBe(3);
  });

  it('owners outside the backup do not affect the order; a cycle is refused', () => {
    expect(orderSteps([item(entry('ConfigMap', '', true, 'a'), ['elsewhere'])]).map((s) => s.depth)).toEqual([0]);
    const a = entry('ConfigMap', '', true, 'a', 'ua');
    const b = entry('ConfigMap', '', true, 'b', 'ub');
    expect(() => orderSteps([item(a, ['ub']), item(b, ['ua'])])).toThrow(/cycle/);
  });
});
