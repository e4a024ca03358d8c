/** The fixture helpers themselves, against the real API server: what they set is what the API stores. */
import { beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient, createObject, getObject, listAll, loadKubeConfig, patchObject, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { writeKubeconfig } from './control-plane.js';
import { installCrd, iso, job, mintToken, pod, setJobFinished, setPodPhase } from './fixtures.js';
import { clientFor, controlPlane, testNamespace, uniqueName } from './harness.js';

interface Condition {
  type: string;
  status: string;
  lastTransitionTime?: string;
}

describe('fixtures', () => {
  let admin: KubeClient;
  let ns: string;
  beforeAll(async () => {
    admin = clientFor('admin');
    ns = await testNamespace(admin, 'fix');
  });

  it('marks Jobs Complete or Failed through jobs/status', async () => {
    const at = new Date('2026-03-01T10:00:00.700Z');
    await createObject(admin, job(ns, 'ok'));
    await createObject(admin, job(ns, 'bad'));
    await setJobFinished(admin, ns, 'ok', 'Complete', at);
    await setJobFinished(admin, ns, 'bad', 'Failed', at);
    const ok = await getObject<KubeObject>(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: ns, name: 'ok' });
    const okStatus = ok.status as { conditions: Condition[]; completionTime: string; succeeded: number };
    expect(okStatus.conditions.find((c) => c.type === 'Complete')).toMatchObject({ status: 'True', lastTransitionTime: '2026-03-01T10:00:00Z' });
    expect(okStatus.completionTime).toBe('2026-03-01T10:00:00Z');
    expect(okStatus.succeeded).toBe(1);
    const viaStatus = await getObject<KubeObject>(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: ns, name: 'ok' }, { subresource: 'status' });
    expect((viaStatus.status as { succeeded: number }).succeeded).toBe(1);
    const bad = await getObject<KubeObject>(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: ns, name: 'bad' });
    expect((bad.status as { conditions: Condition[] }).conditions.find((c) => c.type === 'Failed')?.status).toBe('True');
  });

  it('sets Pod phases and container finishedAt through pods/status', async () => {
    const at = new Date('2026-03-01T11:30:00Z');
    await createObject(admin, pod(ns, 'p1'));
    await setPodPhase(admin, ns, 'p1', 'Running', at);
    await setPodPhase(admin, ns, 'p1', 'Succeeded', at);
    const p = await getObject<KubeObject>(admin, { apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'p1' });
    const status = p.status as { phase: string; containerStatuses: { state: { terminated?: { finishedAt: string; exitCode: number } } }[] };
    expect(status.phase).toBe('Succeeded');
    expect(status.containerStatuses[0]?.state.terminated).toMatchObject({ finishedAt: iso(at), exitCode: 0 });
    const done = await listAll<KubeObject>(admin, { apiVersion: 'v1', kind: 'Pod', namespace: ns, fieldSelector: 'status.phase=Succeeded' });
    expect(done.items.map((o) => o.metadata?.name)).toEqual(['p1']);
  });

  it('installs a CRD, waits for Established, and its objects take status through the status subresource', async () => {
    const group = `${uniqueName('g')}.cronflock.test`;
    const crd = await installCrd(admin, { group, version: 'v1', kind: 'Backup', plural: 'backups', scope: 'Namespaced' });
    expect(((crd.status as { conditions: Condition[] }).conditions).find((c) => c.type === 'Established')?.status).toBe('True');
    await createObject(admin, { apiVersion: `${group}/v1`, kind: 'Backup', metadata: { name: 'b', namespace: ns }, spec: { target: 'x' } });
    const info = await admin.discovery.resolve(`${group}/v1`, 'Backup');
    expect(info.subresources).toEqual(['status']);
    const ref = { apiVersion: `${group}/v1`, kind: 'Backup', namespace: ns, name: 'b' };
    const withStatus = await patchObject<KubeObject>(admin, ref, { status: { phase: 'Done' } }, { subresource: 'status' });
    expect(withStatus.status).toEqual({ phase: 'Done' });
    // custom resources take merge and JSON patches, not strategic merge patches
    const e = await patchObject(admin, ref, { spec: { target: 'y' } }, { type: 'strategic' }).catch((err: unknown) => err);
    expect(e).toMatchObject({ code: 'HTTP_ERROR', status: 415 });
  });

  it('mints service-account tokens with TokenRequest that the server accepts', async () => {
    const cp = controlPlane();
    const token = await mintToken(admin, ns, 'robot', 600);
    const file = writeKubeconfig(`${cp.dir}/${ns}-robot.kubeconfig`, cp.server, cp.caFile, token, ns);
    const robot = createKubeClient(loadKubeConfig({ kubeconfig: file }));
    const who = await robot.request<{ status: { userInfo: { username: string } } }>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(who.body.status.userInfo.username).toBe(`system:serviceaccount:${ns}:robot`);
  });
});
