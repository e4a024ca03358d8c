/**
 * The Schedule status writer and Event recorder on the real kube-apiserver, with several writers at once
 * (as several replicas are): compare-and-set loses no update and lets no stale result win; the two parts'
 * field managers do not remove each other's fields; one Event per outcome however many replicas send it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { deleteObject, listAll, type KubeClient } from '../../k8s/index.js';
import { EventRecorder } from '../../runner/kubernetes/events.js';
import { API_VERSION, KIND, type ScheduleObject, type ScheduleRef } from '../../runner/kubernetes/resource.js';
import { applyRunChanges, desiredSchedulePart, runsPart, schedulePart, type RunChange } from '../../runner/kubernetes/status.js';
import { StatusWriter } from '../../runner/kubernetes/status-writer.js';
import { createLogger } from '../../runner/log.js';
import { clientFor, testNamespace } from './harness.js';
import { installScheduleCrd, kubectlApply, schedule } from './schedule-support.js';

const log = createLogger({ replica: 'test' });
let admin: KubeClient;
let ns: string;
beforeAll(async () => {
  admin = clientFor('admin');
  await installScheduleCrd(admin);
  ns = await testNamespace(admin, 'status');
});

async function create(name: string): Promise<ScheduleRef> {
  const o = (await kubectlApply(admin, schedule(ns, name, { cron: '* * * * *', job: { kind: 'http', url: 'http://127.0.0.1:1/x' } }))) as unknown as ScheduleObject;
  return { namespace: ns, name, uid: o.metadata.uid };
}

async function read(name: string): Promise<ScheduleObject> {
  return (await admin.request<ScheduleObject>({ method: 'GET', path: `/apis/${API_VERSION}/namespaces/${ns}/schedules/${name}` })).body;
}

/** A writer as one replica has it (its own client; no watch copy: it reads what it needs). */
function writer(): StatusWriter {
  return new StatusWriter({ client: clientFor('admin'), cached: () => undefined, log, minIntervalMs: 0 });
}

const T0 = Date.parse('2026-05-01T10:00:00.000Z');
const final = (i: number, state: 'succeeded' | 'failed' = 'succeeded', token = 1): RunChange => ({
  type: 'final',
  occurrence: `s@${new Date(T0 + i * 1000).toISOString()}`,
  dueMs: T0 + i * 1000,
  state,
  fencingToken: token,
  replica: `r${i % 3}`,
  atMs: Date.now(),
});

describe('Schedule status writes from several replicas', () => {
  it('loses no update when three writers write at once (resourceVersion preconditions, retried on 409)', async () => {
    const ref = await create('busy');
    const writers = [writer(), writer(), writer()];
    // 60 results of 60 occurrences, written by three "replicas" at the same time.
    await Promise.all(
      writers.map(async (w, k) => {
        for (let i = k; i < 60; i += 3) {
          w.update(ref, 'runs', (st) => applyRunChanges(runsPart(st), [final(i)]));
          await w.flush();
        }
      }),
    );
    const st = (await read('busy')).status!;
    expect(st.last24h).toEqual({ succeeded: 60, failed: 0, missed: 0, skipped: 0 });
    expect(st.lastResult).toMatchObject({ occurrence: `s@${new Date(T0 + 59_000).toISOString()}`, state: 'succeeded' });
    expect(writers.reduce((n, w) => n + w.stats.conflicts, 0)).toBeGreaterThan(0); // they did collide
    expect(writers.reduce((n, w) => n + w.stats.writes, 0)).toBe(60);
  });

  it('never lets a stale writer move status backwards', async () => {
    const ref = await create('stale');
    const current = writer();
    const stale = writer();
    current.update(ref, 'runs', (st) => applyRunChanges(runsPart(st), [final(10, 'succeeded', 2)]));
    await current.flush();
    // A claimant that lost its claim (SIGSTOP, partition) reports the same occurrence's older claim, and an
    // older occurrence, after the newer result was written.
    stale.update(ref, 'runs', (st) => applyRunChanges(runsPart(st), [final(10, 'failed', 1), final(9, 'failed', 1)]));
    await stale.flush();
    const st = (await read('stale')).status!;
    expect(st.lastResult).toMatchObject({ occurrence: `s@${new Date(T0 + 10_000).toISOString()}`, state: 'succeeded', fencingToken: 2 });
  });

  it('keeps each part under its own field manager: one part\'s writes leave the other\'s fields alone', async () => {
    const ref = await create('parts');
    const w = writer();
    w.update(ref, 'runs', (st) => applyRunChanges(runsPart(st), [final(1)]));
    w.update(ref, 'schedule', (st) => desiredSchedulePart({ generation: 1, state: 'runs', messages: [], nextDueMs: T0 + 60_000, nextFireMs: T0 + 60_000, specSuspended: false, suspendedByCommand: false }, schedulePart(st), T0));
    await w.flush();
    w.update(ref, 'runs', (st) => applyRunChanges(runsPart(st), [final(2)]));
    await w.flush();
    const o = await read('parts');
    expect(o.status).toMatchObject({ observedGeneration: 1, nextDueTime: '2026-05-01T10:01:00.000Z', lastResult: { state: 'succeeded' }, last24h: { succeeded: 2 } });
    const managers = ((o.metadata as unknown as { managedFields: { manager: string; subresource?: string }[] }).managedFields ?? []).filter((m) => m.subresource === 'status').map((m) => m.manager).sort();
    expect(managers).toEqual(['cronflock-runs', 'cronflock-schedule']);
  });

  it('drops writes for a deleted Schedule and for a re-created one (another uid)', async () => {
    const ref = await create('gone');
    await deleteObject(admin, { apiVersion: API_VERSION, kind: KIND, namespace: ns, name: 'gone' });
    await create('gone');
    const w = writer();
    w.update(ref, 'runs', (st) => applyRunChanges(runsPart(st), [final(1)]));
    await w.flush();
    expect(w.stats).toMatchObject({ writes: 0, gone: 1, failed: 0 });
    expect((await read('gone')).status).toBeUndefined();
  });
});

describe('Schedule Events from several replicas', () => {
  it('creates one Event per outcome however many replicas record it', async () => {
    const ref = await create('evented');
    const recorders = ['r1', 'r2', 'r3'].map((r) => new EventRecorder(clientFor('admin'), r, log));
    const outcome = { ref, occurrence: 's@2026-05-01T10:00:00.000Z', reason: 'Succeeded' as const, type: 'Normal' as const, discriminator: '', note: 's@2026-05-01T10:00:00.000Z succeeded', atMs: T0 };
    for (const r of recorders) r.record(outcome);
    for (const r of recorders) r.record({ ...outcome, reason: 'Started', discriminator: 'start-0' });
    await Promise.all(recorders.map((r) => r.flush()));
    const events = await listAll<{ reason: string; regarding: { uid: string }; eventTime: string }>(admin, { apiVersion: 'events.k8s.io/v1', kind: 'Event', namespace: ns });
    const mine = events.items.filter((e) => e.regarding.uid === ref.uid);
    expect(mine.map((e) => e.reason).sort()).toEqual(['Started', 'Succeeded']);
    expect(recorders.reduce((n, r) => n + r.stats.created, 0)).toBe(2);
    expect(recorders.reduce((n, r) => n + r.stats.existed, 0)).toBe(4);
    expect(mine[0]!.eventTime).toBe('2026-05-01T10:00:00.000000Z');
  });
});
