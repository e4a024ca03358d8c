/**
 * Schedule files and Schedule resources side by side on a replica process: a name defined in both is refused in
 * both places (the file whole, the Schedule with `Invalid` naming the file), and once the Schedule is deleted the
 * file runs. Needs dist/ built.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { deleteObject } from '../../k8s/index.js';
import { API_VERSION, KIND, type ScheduleObject } from '../../runner/kubernetes/resource.js';
import { Flock, sleep, until } from '../support/flock.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { installScheduleCrd, kubectlApply, schedule } from './schedule-support.js';

let flock: Flock | undefined;
afterAll(async () => {
  await flock?.close();
});

describe('files and Schedules together', () => {
  it('refuses a name defined in a file and by a Schedule in both places, and runs the file once the Schedule is gone', async () => {
    const admin = clientFor('admin');
    await installScheduleCrd(admin);
    const ns = await testNamespace(admin, 'both');
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - name: shared
    cron: "*/2 * * * * *"
    job: {kind: http, url: "${flock.receiver.url}/file-shared"}
  - name: file-only
    cron: "*/2 * * * * *"
    job: {kind: http, url: "${flock.receiver.url}/file-only"}
`);
    await kubectlApply(admin, schedule(ns, 'shared', { cron: '*/2 * * * * *', job: { kind: 'http', url: `${flock.receiver.url}/cluster-shared` } }));
    const r = await flock.startReplica({ name: 'both', schedules: file, args: ['--watch-schedules', 'on', '--kubeconfig', controlPlane().users.admin.kubeconfig, '--watch-namespaces', ns] });
    const get = async (): Promise<ScheduleObject> => (await admin.request<ScheduleObject>({ method: 'GET', path: `/apis/${API_VERSION}/namespaces/${ns}/schedules/shared` })).body;
    await until(async () => (await get()).status?.conditions?.some((c) => c.type === 'Invalid' && c.status === 'True') === true, 15_000, 'Invalid');
    expect((await get()).status!.conditions!.find((c) => c.type === 'Invalid')).toMatchObject({
      reason: 'NameConflict',
      message: expect.stringContaining(`metadata.name: name "shared" is also defined in ${file}:2:5; both are refused`),
    });
    expect(r.stderr.join('')).toContain(`${file}:2:5: name: name "shared" is also defined by Schedule ${ns}/shared; both are refused`);
    await sleep(4000);
    expect(flock.receiver.deliveries).toEqual([]); // the file is refused whole, and the Schedule too

    await deleteObject(admin, { apiVersion: API_VERSION, kind: KIND, namespace: ns, name: 'shared' });
    await flock.receiver.waitFor(() => flock!.receiver.deliveries.some((d) => d.path === '/file-shared') && flock!.receiver.deliveries.some((d) => d.path === '/file-only'), 15_000, 'the file runs');
    expect(flock.receiver.deliveries.some((d) => d.path === '/cluster-shared')).toBe(false);
  });
});
