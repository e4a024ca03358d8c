/**
 * A replica with exactly the permissions k8s/deploy/base/rbac.yaml grants for Schedules (ClusterRole
 * `cronflock-schedules`, here bound in one namespace with a RoleBinding, as the file says to do for a flock
 * limited to some namespaces) runs a Schedule: it watches it, writes its status and posts its Events. Started
 * without --watch-namespaces, it may not list Schedules in all namespaces and falls back to its own namespace
 * (the kubeconfig's, in a pod the pod's). Needs dist/ built.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { listAll, type KubeObject } from '../../k8s/index.js';
import { API_VERSION } from '../../runner/kubernetes/resource.js';
import type { ScheduleObject } from '../../runner/kubernetes/resource.js';
import { openScheduleSource } from '../../runner/kubernetes/connect.js';
import { createLogger } from '../../runner/log.js';
import { Flock, until } from '../support/flock.js';
import { ROOT } from '../support/replica.js';
import { writeKubeconfig } from './control-plane.js';
import { grantRole, mintToken } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { installScheduleCrd, kubectlApply, schedule } from './schedule-support.js';

let flock: Flock | undefined;
const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-rbac-'));
afterAll(async () => {
  await flock?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Schedule permissions', () => {
  it('a replica with only the rules of rbac.yaml runs a Schedule in its own namespace: status and Events', async () => {
    const admin = clientFor('admin');
    await installScheduleCrd(admin);
    const ns = await testNamespace(admin, 'rbac');
    const docs = parseAllDocuments(readFileSync(path.join(ROOT, 'k8s/deploy/base/rbac.yaml'), 'utf8')).map((d) => d.toJS() as KubeObject & { rules?: never[] });
    const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata?.name === 'cronflock-schedules')!;
    await grantRole(admin, ns, 'cronflock-schedules', { kind: 'ServiceAccount', name: 'cronflock', namespace: ns }, role.rules!);
    const token = await mintToken(admin, ns, 'cronflock');
    const kubeconfig = writeKubeconfig(path.join(dir, 'sa.kubeconfig'), controlPlane().server, controlPlane().caFile, token, ns);

    flock = await Flock.start();
    const r = await flock.startReplica({ name: 'sa', schedules: '', args: ['--watch-schedules', 'on', '--kubeconfig', kubeconfig] });
    expect(r.lines.find((l) => l.msg?.startsWith('may not list Schedules in all namespaces'))).toMatchObject({ namespace: ns });
    expect(r.lines.find((l) => l.msg === 'watching Schedules in the cluster')).toMatchObject({ namespaces: [ns] });

    await kubectlApply(admin, schedule(ns, 'limited', { cron: '*/2 * * * * *', job: { kind: 'http', url: `${flock.receiver.url}/limited` } }));
    const get = async (): Promise<ScheduleObject> => (await admin.request<ScheduleObject>({ method: 'GET', path: `/apis/${API_VERSION}/namespaces/${ns}/schedules/limited` })).body;
    await until(async () => (await get()).status?.lastResult?.state === 'succeeded' && (await get()).status?.nextFireTime !== undefined, 20_000, 'status written by the service account');
    await until(async () => (await listAll<{ reason: string }>(admin, { apiVersion: 'events.k8s.io/v1', kind: 'Event', namespace: ns })).items.some((e) => e.reason === 'Succeeded'), 15_000, 'an Event posted by the service account');
    expect(r.lines.filter((l) => /failed/.test(String(l.msg)) && /Schedule|Event/.test(String(l.msg)))).toEqual([]);
  });

  it('in a pod (auto), a replica that may not list Schedules runs without them instead of failing; with on it fails', async () => {
    const admin = clientFor('admin');
    await installScheduleCrd(admin);
    const pod = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
    const log = createLogger({ replica: 'norbac' });
    const kubeconfig = controlPlane().users.restricted.kubeconfig; // discovery only, no RBAC for Schedules
    expect(await openScheduleSource({ mode: 'auto', kubeconfig, namespaces: [], log, env: pod })).toBeUndefined();
    expect(await openScheduleSource({ mode: 'off', kubeconfig, namespaces: [], log, env: pod })).toBeUndefined();
    expect(await openScheduleSource({ mode: 'auto', kubeconfig, namespaces: [], log, env: {} })).toBeUndefined(); // not in a pod
    await expect(openScheduleSource({ mode: 'on', kubeconfig, namespaces: [], log, env: pod })).rejects.toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringContaining('the replica needs list and watch on schedules.cronflock.io'),
    });
  });
});
