/**
 * Schedule resources run by a flock of three replica processes (the built CLI, `bin/cronflock.js start
 * --watch-schedules on`), against the real kube-apiserver and a real Redis:
 * - status fills in (lastScheduleTime, nextFireTime, lastResult, conditions) and the API server's Table (what
 *   `kubectl get schedules` prints) has the printer columns;
 * - one Event per occurrence outcome across the three replicas (Started, Succeeded, Failed, Skipped, Reclaimed);
 *   skips of a suspended Schedule are counted in status, without Events;
 * - a spec the CRD accepts but the loader refuses gets `Invalid` with the loader's message and runs nothing;
 * - editing the cron applies from the next due time; deleting the Schedule stops it.
 * Needs dist/ built (`npm run build`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteObject, listAll, type KubeClient } from '../../k8s/index.js';
import type { ScheduleObject } from '../../runner/kubernetes/resource.js';
import { API_VERSION, KIND } from '../../runner/kubernetes/resource.js';
import { Flock, sleep, until } from '../support/flock.js';
import type { ReplicaProcess } from '../support/replica.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { installScheduleCrd, kubectlApply, schedule } from './schedule-support.js';

let admin: KubeClient;
let ns: string;
let flock: Flock;
let replicas: ReplicaProcess[];

beforeAll(async () => {
  admin = clientFor('admin');
  await installScheduleCrd(admin);
  ns = await testNamespace(admin, 'sched');
  flock = await Flock.start();
  replicas = [];
  for (const name of ['r1', 'r2', 'r3']) {
    replicas.push(
      await flock.startReplica({
        name,
        schedules: '',
        args: ['--watch-schedules', 'on', '--kubeconfig', controlPlane().users.admin.kubeconfig, '--watch-namespaces', ns, '--lock', '2s'],
      }),
    );
  }
});
afterAll(async () => {
  await flock?.close();
});

async function get(name: string): Promise<ScheduleObject | undefined> {
  const r = await admin.request<ScheduleObject>({ method: 'GET', path: `/apis/${API_VERSION}/namespaces/${ns}/schedules/${name}` }).catch(() => undefined);
  return r?.body;
}

interface EventV1 {
  metadata: { name: string };
  reason: string;
  type: string;
  note: string;
  reportingController: string;
  reportingInstance: string;
  regarding: { name: string; uid: string; kind: string };
}

/** The Events about Schedule `name` (events.k8s.io/v1), and the occurrence each is about (from its note). */
async function eventsOf(name: string): Promise<(EventV1 & { occurrence: string })[]> {
  const all = await listAll<EventV1>(admin, { apiVersion: 'events.k8s.io/v1', kind: 'Event', namespace: ns });
  return all.items.filter((e) => e.regarding.name === name && e.regarding.kind === KIND).map((e) => ({ ...e, occurrence: e.note.split(' ')[0]!.replace(/:$/, '') }));
}

const http = (path: string): Record<string, unknown> => ({ kind: 'http', url: `${flock.receiver.url}/${path}` });

describe('Schedules on a flock of three replicas', () => {
  it('fills in status, serves the printer columns, and records one Event per outcome across the replicas', async () => {
    flock.receiver.status.set('broken', 500);
    await kubectlApply(admin, schedule(ns, 'tick', { cron: '*/2 * * * * *', jitter: '500ms', job: http('tick') }));
    await kubectlApply(admin, schedule(ns, 'broken', { cron: '*/2 * * * * *', job: http('broken') }));
    await until(async () => {
      const s = (await get('tick'))?.status;
      return s?.lastResult?.state === 'succeeded' && s.nextFireTime !== undefined && s.lastScheduleTime !== undefined;
    }, 20_000, 'status of tick');
    const tick = (await get('tick'))!;
    const st = tick.status!;
    expect(st.observedGeneration).toBe(tick.metadata.generation);
    expect(st.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Running' });
    expect(st.conditions?.find((c) => c.type === 'Invalid')).toMatchObject({ status: 'False' });
    expect(['r1', 'r2', 'r3']).toContain(st.lastResult!.replica);
    expect(Date.parse(st.nextFireTime!) - Date.parse(st.nextDueTime!)).toBeGreaterThanOrEqual(0);
    expect(Date.parse(st.nextFireTime!) - Date.parse(st.nextDueTime!)).toBeLessThan(500);
    expect(Date.parse(st.nextDueTime!) % 2000).toBe(0);

    // What `kubectl get schedules` prints: the API server's Table for the printer columns.
    const table = await admin.request<{ columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[] }[] }>({
      method: 'GET',
      path: `/apis/${API_VERSION}/namespaces/${ns}/schedules/tick`,
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
    });
    const cols = table.body.columnDefinitions;
    expect(cols.filter((c) => c.priority === 0).map((c) => c.name)).toEqual(['Name', 'Schedule', 'Timezone', 'Suspend', 'Active', 'Last Schedule', 'Next Fire', 'Last Result', 'Age']);
    expect(cols.filter((c) => c.priority === 1).map((c) => c.name)).toEqual(['Jitter', 'Replica', 'Ready']);
    const cells = Object.fromEntries(cols.map((c, i) => [c.name, table.body.rows[0]!.cells[i]]));
    expect(cells).toMatchObject({ Name: 'tick', Schedule: '*/2 * * * * *', Timezone: 'UTC', Suspend: false, Jitter: '500ms', Ready: 'True' });
    expect(cells['Last Result']).toMatch(/^(succeeded|failed|missed|skipped)$/);
    expect(cells['Last Schedule']).toMatch(/^\d+s$/); // an age, as kubectl shows dates
    expect(cells['Next Fire']).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(cells.Replica).toMatch(/^r[123]$/);

    // One Event per outcome: every finished occurrence has exactly one Started and one final Event.
    await sleep(8000);
    for (const [name, finalReason] of [['tick', 'Succeeded'], ['broken', 'Failed']] as const) {
      const runs = (await flock.runs(name)).filter((r) => r.state === 'succeeded' || r.state === 'failed');
      expect(runs.length, name).toBeGreaterThanOrEqual(4);
      const uid = (await get(name))!.metadata.uid;
      await until(async () => {
        const ev = await eventsOf(name);
        return runs.every((r) => ev.some((e) => e.occurrence === r.key && e.reason === finalReason));
      }, 15_000, `Events of ${name}`);
      const ev = await eventsOf(name);
      const perOutcome = new Map<string, number>();
      for (const e of ev) perOutcome.set(`${e.occurrence}|${e.reason}`, (perOutcome.get(`${e.occurrence}|${e.reason}`) ?? 0) + 1);
      expect([...perOutcome.values()].every((n) => n === 1), JSON.stringify([...perOutcome])).toBe(true);
      for (const r of runs) {
        expect(perOutcome.get(`${r.key}|Started`), r.key).toBe(1);
        expect(perOutcome.get(`${r.key}|${finalReason}`), r.key).toBe(1);
        const final = ev.find((e) => e.occurrence === r.key && e.reason === finalReason)!;
        expect(final.reportingInstance).toBe(r.replica); // written by the claimant
      }
      expect(ev.every((e) => e.regarding.uid === uid && e.reportingController === 'cronflock.io/cronflock')).toBe(true);
      expect(ev.filter((e) => e.reason === 'Failed').every((e) => e.type === 'Warning')).toBe(true);
    }
    // `kubectl describe` lists Events through core/v1 by the involved object: the same Events are there.
    const core = await listAll<{ involvedObject: { uid: string }; reason: string }>(admin, {
      apiVersion: 'v1',
      kind: 'Event',
      namespace: ns,
      fieldSelector: `involvedObject.uid=${(await get('broken'))!.metadata.uid}`,
    });
    expect(core.items.some((e) => e.reason === 'Failed')).toBe(true);
    expect((await get('broken'))!.status!.lastResult).toMatchObject({ state: 'failed', reason: expect.stringContaining('500') });
    expect((await get('broken'))!.status!.last24h!.failed).toBeGreaterThanOrEqual(4);
    for (const n of ['tick', 'broken']) await deleteObject(admin, { apiVersion: API_VERSION, kind: KIND, namespace: ns, name: n });
  });

  it('a spec the CRD accepts but the loader refuses gets Invalid with the loader\'s message and runs nothing', async () => {
    // jitter 5s on a 2 s period: the CRD cannot express "shorter than the gap between due times"; the loader can.
    await kubectlApply(admin, schedule(ns, 'toolong', { cron: '*/2 * * * * *', jitter: '5s', job: http('toolong') }));
    await until(async () => (await get('toolong'))?.status?.conditions?.some((c) => c.type === 'Invalid' && c.status === 'True') === true, 15_000, 'Invalid condition');
    const st = (await get('toolong'))!.status!;
    expect(st.conditions!.find((c) => c.type === 'Invalid')).toMatchObject({
      reason: 'SpecInvalid',
      message: expect.stringMatching(/^spec\.jitter: jitter 5s reaches the next due time \(due times can be 2s apart\); use a jitter below 2s/),
      observedGeneration: 1,
    });
    expect(st.conditions!.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'SpecInvalid' });
    expect(st.nextFireTime).toBeUndefined();
    await sleep(5000);
    expect(await flock.runs('toolong')).toEqual([]);
    expect(flock.receiver.of('toolong')).toEqual([]);
    expect(await eventsOf('toolong')).toEqual([]);
    for (const r of replicas) expect(r.lines.some((l) => l.msg === 'Schedule refused: spec.jitter: jitter 5s reaches the next due time (due times can be 2s apart); use a jitter below 2s')).toBe(true);
    await deleteObject(admin, { apiVersion: API_VERSION, kind: KIND, namespace: ns, name: 'toolong' });
  });

  it('an edited cron applies from the next due time; a deleted Schedule stops', async () => {
    await kubectlApply(admin, schedule(ns, 'edit', { cron: '*/2 * * * * *', job: http('edit') }));
    await until(async () => (await flock.runs('edit')).filter((r) => r.state === 'succeeded').length >= 2, 20_000, 'two runs every 2 s');
    const editedAt = Date.now();
    await kubectlApply(admin, schedule(ns, 'edit', { cron: '*/3 * * * * *', job: http('edit') }));
    const reloaded = (r: ReplicaProcess, what: 'changed' | 'removed'): number | undefined => {
      const l = r.lines.find((x) => x.msg === 'schedules reloaded' && Date.parse(String(x.time)) >= editedAt && (x[what] as string[] | undefined)?.includes('edit'));
      return l ? Date.parse(String(l.time)) : undefined;
    };
    await until(() => replicas.every((r) => reloaded(r, 'changed') !== undefined), 10_000, 'every replica reloads the edited Schedule');
    const appliedAt = Math.max(...replicas.map((r) => reloaded(r, 'changed')!));
    await until(async () => (await flock.runs('edit')).filter((r) => r.state === 'succeeded' && r.dueMs > appliedAt).length >= 2, 15_000, 'two runs every 3 s');
    const after = (await flock.runs('edit')).filter((r) => r.dueMs > appliedAt);
    expect(after.filter((r) => r.state === 'succeeded').every((r) => r.dueMs % 3000 === 0), JSON.stringify(after.map((r) => [r.key, r.state]))).toBe(true);
    const before = (await flock.runs('edit')).filter((r) => r.dueMs <= editedAt && r.state === 'succeeded');
    expect(before.every((r) => r.dueMs % 2000 === 0)).toBe(true);
    await until(async () => (await get('edit'))?.status?.observedGeneration === 2, 10_000, 'observedGeneration 2');
    expect(Date.parse((await get('edit'))!.status!.nextDueTime!) % 3000).toBe(0);

    const deletedAt = Date.now();
    await deleteObject(admin, { apiVersion: API_VERSION, kind: KIND, namespace: ns, name: 'edit' });
    await until(() => replicas.every((r) => r.lines.some((x) => x.msg === 'schedules reloaded' && Date.parse(String(x.time)) >= deletedAt && (x.removed as string[]).includes('edit'))), 10_000, 'every replica drops the deleted Schedule');
    const stoppedAt = Date.now();
    await sleep(5000);
    const late = (await flock.runs('edit')).filter((r) => (r.firstStartMs ?? 0) > stoppedAt);
    expect(late).toEqual([]);
    expect(flock.receiver.of('edit').filter((d) => d.receivedMs > stoppedAt)).toEqual([]);
  });

  it('records skipped occurrences in status and Events: overlap under Forbid (an Event each), spec.suspend (counted, no Event)', async () => {
    flock.receiver.holdMs.set('overlap', 3000); // a run takes 3 s, one is due every 2 s
    await kubectlApply(admin, schedule(ns, 'overlap', { cron: '*/2 * * * * *', concurrencyPolicy: 'Forbid', job: http('overlap') }));
    await kubectlApply(admin, schedule(ns, 'paused', { cron: '*/2 * * * * *', suspend: true, job: http('paused') }));
    await until(async () => (await flock.runs('overlap')).filter((r) => r.state === 'skipped').length >= 2, 30_000, 'two skipped occurrences');
    await until(async () => ((await get('paused'))?.status?.last24h?.skipped ?? 0) >= 3, 30_000, 'skips of the suspended Schedule counted');
    const skipped = (await flock.runs('overlap')).filter((r) => r.state === 'skipped');
    await until(async () => (await eventsOf('overlap')).filter((e) => e.reason === 'Skipped').length >= skipped.length, 15_000, 'Skipped Events');
    const ev = await eventsOf('overlap');
    for (const r of skipped) {
      const mine = ev.filter((e) => e.occurrence === r.key && e.reason === 'Skipped');
      expect(mine, r.key).toEqual([expect.objectContaining({ type: 'Normal', note: expect.stringContaining('overlap'), reportingInstance: r.replica })]);
    }
    const paused = (await get('paused'))!.status!;
    expect(paused.conditions!.find((c) => c.type === 'Suspended')).toMatchObject({ status: 'True', reason: 'SpecSuspended' });
    expect(paused.lastResult).toMatchObject({ state: 'skipped', reason: 'suspended' });
    expect(await eventsOf('paused')).toEqual([]);
    expect(flock.receiver.of('paused')).toEqual([]);
    for (const n of ['overlap', 'paused']) await deleteObject(admin, { apiVersion: API_VERSION, kind: KIND, namespace: ns, name: n });
  });

  it('a run whose claimant is killed is re-claimed by another replica, with one Reclaimed Event', async () => {
    flock.receiver.holdMs.set('slow', 8000);
    await kubectlApply(admin, schedule(ns, 'slow', { cron: '*/20 * * * * *', concurrencyPolicy: 'Forbid', job: { ...http('slow'), timeout: '30s' } }));
    await flock.receiver.waitFor(() => flock.receiver.of('slow').length >= 1, 30_000, 'first delivery of slow');
    const first = flock.receiver.of('slow')[0]!.body;
    // The first claimant has posted its Started Event; then it dies mid-run.
    await until(async () => (await eventsOf('slow')).some((e) => e.occurrence === first.occurrence && e.reason === 'Started'), 5_000, 'Started Event');
    const victim = replicas.find((r) => r.name === first.replica)!;
    victim.signal('SIGKILL');
    await flock.receiver.waitFor(() => flock.receiver.of('slow').some((d) => d.body.occurrence === first.occurrence && d.body.fencingToken > first.fencingToken), 20_000, 're-claim');
    const again = flock.receiver.of('slow').find((d) => d.body.occurrence === first.occurrence && d.body.fencingToken > first.fencingToken)!.body;
    expect(again.replica).not.toBe(first.replica);
    await until(async () => (await eventsOf('slow')).some((e) => e.reason === 'Reclaimed'), 15_000, 'Reclaimed Event');
    await until(async () => (await eventsOf('slow')).some((e) => e.occurrence === first.occurrence && e.reason === 'Succeeded'), 15_000, 'Succeeded Event');
    const ev = (await eventsOf('slow')).filter((e) => e.occurrence === first.occurrence);
    expect(ev.filter((e) => e.reason === 'Reclaimed')).toEqual([expect.objectContaining({ type: 'Warning', reportingInstance: again.replica, note: expect.stringContaining(`re-claimed by ${again.replica}`) })]);
    expect(ev.filter((e) => e.reason === 'Started')).toHaveLength(1);
    expect(ev.filter((e) => e.reason === 'Succeeded')).toEqual([expect.objectContaining({ reportingInstance: again.replica })]);
    // the dead claimant's active entry is gone: the new claimant's result removed it (status is written in batches
    // after the Events: wait for the result itself, not only for an empty active list — CI once read activeCount 0
    // before lastResult was there)
    await until(async () => {
      const st = (await get('slow'))?.status;
      return st?.activeCount === 0 && st.lastResult?.occurrence === first.occurrence;
    }, 15_000, 'no active run, and the re-claimed run\'s result');
    expect((await get('slow'))!.status!.lastResult).toMatchObject({ occurrence: first.occurrence, state: 'succeeded', fencingToken: again.fencingToken, replica: again.replica });
  });
});
