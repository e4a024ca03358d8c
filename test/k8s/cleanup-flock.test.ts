/**
 * Two replica processes (the built CLI, `bin/cronflock.js start`) run one cleanup schedule against the real
 * kube-apiserver: each occurrence runs once, on one replica, and its report is the run record's result.
 * Needs dist/ built (`npm run build`; `npm test` builds it in the core project's global setup, which runs first).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { listAll, type KubeObject } from '../../k8s/index.js';
import { Flock, sleep } from '../support/flock.js';
import { configMap, createAll } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

let flock: Flock | undefined;
afterEach(async () => {
  await flock?.close();
  flock = undefined;
});

describe('cleanup on a flock', () => {
  it('two replicas running one cleanup schedule make one run per occurrence; the objects are deleted once', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'cl-flock');
    await createAll(admin, ['a', 'b', 'c'].map((n) => configMap(ns, `old-${n}`, {}, { tidy: 'yes' })));
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - name: tidy
    cron: "*/2 * * * * *"
    concurrencyPolicy: Forbid
    job:
      kind: cleanup
      kubeconfig: ${controlPlane().users.admin.kubeconfig}
      action: delete
      resources:
        - {apiVersion: v1, kind: ConfigMap, namespaces: [${ns}], labelSelector: tidy=yes}
`);
    const rs = [await flock.startReplica({ name: 'k1', schedules: file }), await flock.startReplica({ name: 'k2', schedules: file })];
    await sleep(9000);
    const runs = (await flock.runs('tidy')).filter((r) => r.state === 'succeeded');
    expect(runs.length).toBeGreaterThanOrEqual(3);
    const starts = rs.flatMap((r) => r.lines.filter((l) => l.msg === 'run started').map((l) => String(l.occurrence)));
    const finished = new Set(runs.map((r) => r.key));
    // every succeeded occurrence was started exactly once, by one replica, on its first attempt
    for (const key of finished) expect(starts.filter((k) => k === key), key).toHaveLength(1);
    expect(runs.every((r) => r.attempt === 1 && r.fencingToken === 1)).toBe(true);
    const reports = runs.map((r) => JSON.parse(r.result ?? '{}') as { acted: number; action: string });
    expect(reports.every((x) => x.action === 'delete')).toBe(true);
    expect(reports.reduce((n, x) => n + x.acted, 0)).toBe(3);
    const left = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'tidy=yes' });
    expect(left.items).toEqual([]);
  });
});
