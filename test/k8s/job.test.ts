/**
 * `kind: job` (jobs/job/) against the real kube-apiserver of the test lane, one attempt at a time (runJob called
 * as a claimant would call it). There is no Job controller and no garbage collector in this lane: the test's
 * JobLane (job-support.ts) marks Jobs Complete/Failed through the status subresource as the Job controller
 * would, and ends foreground deletions as the garbage collector would.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobJobSchema, type JobJobParams } from '../../jobs/job/schema.js';
import { runJob, JobRunError } from '../../jobs/job/run.js';
import { jobNameFor } from '../../jobs/job/name.js';
import type { BatchJob } from '../../jobs/job/state.js';
import { isJobSkipped } from '../../jobs/types.js';
import { createObject, getObject, isK8sError, listAll, type KubeClient } from '../../k8s/index.js';
import { until } from '../support/flock.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { job } from './fixtures.js';
import { jobContext, JobLane } from './job-support.js';

let admin: KubeClient;
let lane: JobLane | undefined;
beforeAll(() => {
  admin = clientFor('admin');
});
afterEach(async () => {
  await lane?.stop();
  lane = undefined;
});

const T0 = Date.UTC(2026, 0, 1, 2, 0, 0);
const params = (ns: string, extra: Record<string, unknown> = {}): JobJobParams =>
  jobJobSchema.parse({
    kind: 'job',
    kubeconfig: controlPlane().users.admin.kubeconfig,
    namespace: ns,
    qps: 200,
    jobTemplate: {
      metadata: { labels: { team: 'data' }, annotations: { note: 'nightly' } },
      spec: {
        backoffLimit: 2,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'registry.invalid/report:1' }] } },
      },
    },
    ...extra,
  });
const ref = (ns: string, name: string) => ({ apiVersion: 'batch/v1', kind: 'Job', namespace: ns, name });
const jobsOf = async (ns: string): Promise<BatchJob[]> => (await listAll<BatchJob>(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: ns })).items;
const caught = async (p: Promise<unknown>): Promise<unknown> => p.then(() => { throw new Error('expected a failure'); }, (e: unknown) => e);

describe('kind: job, one attempt', () => {
  it('creates the occurrence\'s Job (name, labels, annotations, owner, activeDeadlineSeconds from the timeout) and succeeds when it completes', async () => {
    const ns = await testNamespace(admin, 'kj-create');
    lane = await JobLane.start(admin, ns, { finish: () => ({ afterMs: 300, outcome: 'Complete' }) });
    const owner = await createObject(admin, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace: ns } });
    const p = params(ns, { owner: { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid } });
    const ctx = jobContext('nightly', T0, { fencingToken: 7, timeoutMs: 90_500 });
    const report = await runJob(ctx, p);
    expect(report).toMatchObject({ job: 'nightly-1767232800', namespace: ns, adopted: false, succeeded: 1, replaced: [] });
    const job = await getObject<BatchJob>(admin, ref(ns, 'nightly-1767232800'));
    expect(job.metadata?.labels).toMatchObject({ team: 'data', 'cronflock.io/schedule': 'nightly' });
    expect(job.metadata?.annotations).toMatchObject({
      note: 'nightly',
      'cronflock.io/occurrence': 'nightly@2026-01-01T02:00:00.000Z',
      'cronflock.io/fencing-token': '7',
      'cronflock.io/scheduled-time': '2026-01-01T02:00:00.000Z',
    });
    expect(job.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid, controller: true, blockOwnerDeletion: true },
    ]);
    const spec = job.spec as { activeDeadlineSeconds: number; backoffLimit: number; template: { metadata: { labels: Record<string, string> } } };
    expect(spec.activeDeadlineSeconds).toBe(91); // 90.5 s, rounded up
    expect(spec.backoffLimit).toBe(2);
    expect(spec.template.metadata.labels['cronflock.io/schedule']).toBe('nightly');
    expect(lane.created.get('nightly@2026-01-01T02:00:00.000Z')?.size).toBe(1);
  });

  it('adopts the Job a dead claimant created: no second Job, the fencing token annotation raised, and waits for it (watch)', async () => {
    const ns = await testNamespace(admin, 'kj-adopt');
    lane = await JobLane.start(admin, ns);
    const p = params(ns);
    // Claimant 1 creates the Job, then its claim is lost (the signal fires): the Job is left running.
    const lost = new AbortController();
    const first = runJob(jobContext('nightly', T0, { fencingToken: 1, signal: lost.signal }), p);
    await until(() => lane!.created.size === 1, 10_000, 'the Job');
    lost.abort(new Error('claim lost'));
    expect(isK8sError(await caught(first), 'ABORTED')).toBe(true);
    const name = jobNameFor({ schedule: 'nightly', key: 'nightly@2026-01-01T02:00:00.000Z', dueMs: T0 });
    expect((await getObject<BatchJob>(admin, ref(ns, name))).metadata?.deletionTimestamp).toBeUndefined();
    // Claimant 2 (token 2) adopts it and waits; the Job finishes while it waits.
    const second = runJob(jobContext('nightly', T0, { fencingToken: 2, attempt: 2 }), p);
    await until(async () => (await getObject<BatchJob>(admin, ref(ns, name))).metadata?.annotations?.['cronflock.io/fencing-token'] === '2', 10_000, 'adoption');
    await lane.finish(name, 'Complete');
    expect(await second).toMatchObject({ job: name, adopted: true, succeeded: 1 });
    expect(lane.duplicates()).toEqual([]);
    expect(lane.created.get('nightly@2026-01-01T02:00:00.000Z')?.size).toBe(1);
    // A stale claimant (token 1) finds the higher token and stops; a Job of another occurrence under the name is refused.
    const stale = await caught(runJob(jobContext('nightly', T0, { fencingToken: 1 }), p));
    expect(stale).toBeInstanceOf(JobRunError);
    expect((stale as JobRunError).code).toBe('STALE_CLAIMANT');
    // A Job that is not this occurrence's under its name is not adopted.
    await createObject(admin, job(ns, 'nightly-1767232860'));
    const taken = await caught(runJob(jobContext('nightly', T0 + 60_000), p));
    expect(taken).toBeInstanceOf(JobRunError);
    expect((taken as JobRunError).code).toBe('NAME_TAKEN');
    expect(await jobsOf(ns)).toHaveLength(2);
  });

  it('fails with the Failed condition\'s reason; fails when the Job is deleted before it finishes', async () => {
    const ns = await testNamespace(admin, 'kj-fail');
    lane = await JobLane.start(admin, ns, { finish: (j) => (j.metadata?.name?.endsWith('0') ? { afterMs: 200, outcome: 'Failed' } : undefined) });
    const err = await caught(runJob(jobContext('nightly', T0), params(ns)));
    expect(err).toBeInstanceOf(JobRunError);
    expect((err as Error).message).toMatch(/^Job kj-fail-\w+\/nightly-1767232800 failed: BackoffLimitExceeded/);
    const running = runJob(jobContext('nightly', T0 + 1000), params(ns));
    await until(() => lane!.created.size === 2, 10_000, 'the second Job');
    // (Orphan, the API's default for Jobs, would wait for a garbage collector this lane does not have.)
    await admin.request({ method: 'DELETE', path: `/apis/batch/v1/namespaces/${ns}/jobs/nightly-1767232801`, body: { propagationPolicy: 'Background' } });
    const gone = await caught(running);
    expect((gone as JobRunError).code).toBe('JOB_DELETED');
  });

  it('keeps the newest successfulJobsHistoryLimit succeeded and failedJobsHistoryLimit failed Jobs, deletes the older ones', async () => {
    const ns = await testNamespace(admin, 'kj-history');
    // Occurrences 0..7, every 10 s; 2 and 5 fail, the rest complete.
    const fails = new Set([2, 5]);
    const index = (j: BatchJob) => (Number(j.metadata!.name!.split('-').pop()) - T0 / 1000) / 10;
    lane = await JobLane.start(admin, ns, { finish: (j) => ({ afterMs: 100, outcome: fails.has(index(j)) ? 'Failed' : 'Complete' }) });
    const p = params(ns, { successfulJobsHistoryLimit: 2, failedJobsHistoryLimit: 1 });
    const left: number[][] = [];
    for (let i = 0; i < 8; i++) {
      await runJob(jobContext('nightly', T0 + i * 10_000), p).catch((e: unknown) => {
        if (!(e instanceof JobRunError && e.code === 'JOB_FAILED')) throw e;
      });
      left.push((await jobsOf(ns)).map(index).sort((a, b) => a - b));
    }
    // After each run: the newest 2 succeeded and the newest 1 failed so far.
    expect(left).toEqual([[0], [0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6, 7]]);
    // Another schedule's Jobs in the namespace are not touched.
    lane.created.clear();
    await runJob(jobContext('other', T0), p);
    expect((await jobsOf(ns)).map((j) => j.metadata!.name).sort()).toEqual(['nightly-1767232850', 'nightly-1767232860', 'nightly-1767232870', 'other-1767232800']);
  });

  it('Forbid: a live Job of the schedule whose claimant is gone makes the occurrence skipped (overlap), before any Job is created', async () => {
    const ns = await testNamespace(admin, 'kj-forbid');
    lane = await JobLane.start(admin, ns);
    const p = params(ns);
    const dead = new AbortController();
    const first = runJob(jobContext('nightly', T0, { concurrencyPolicy: 'Forbid', signal: dead.signal }), p);
    await until(() => lane!.created.size === 1, 10_000, 'the first Job');
    dead.abort(new Error('claimant died'));
    await caught(first);
    const skipped = await caught(runJob(jobContext('nightly', T0 + 60_000, { concurrencyPolicy: 'Forbid' }), p));
    expect(isJobSkipped(skipped)).toBe(true);
    expect((skipped as { reason: string }).reason).toBe('overlap: Job nightly-1767232800 (nightly@2026-01-01T02:00:00.000Z) still running (concurrencyPolicy Forbid)');
    expect(await jobsOf(ns)).toHaveLength(1);
    // Allow does not look; once the Job finished, Forbid runs too.
    await lane.finish('nightly-1767232800', 'Complete');
    const next = runJob(jobContext('nightly', T0 + 60_000, { concurrencyPolicy: 'Forbid' }), p);
    await until(() => lane!.created.size === 2, 10_000, 'the next Job');
    await lane.finish('nightly-1767232860', 'Complete');
    expect(await next).toMatchObject({ job: 'nightly-1767232860', adopted: false });
  });

  it('Replace: deletes the running Job with propagation Foreground and creates the new one only once it is gone; an older occurrence is superseded', async () => {
    const ns = await testNamespace(admin, 'kj-replace');
    lane = await JobLane.start(admin, ns);
    const p = params(ns);
    const dead = new AbortController();
    const first = runJob(jobContext('nightly', T0, { concurrencyPolicy: 'Replace', signal: dead.signal }), p);
    await until(() => lane!.created.size === 1, 10_000, 'the first Job');
    dead.abort(new Error('replaced'));
    await caught(first);
    const second = runJob(jobContext('nightly', T0 + 60_000, { concurrencyPolicy: 'Replace' }), p);
    await until(() => lane!.created.size === 2, 20_000, 'the replacing Job');
    const ev = lane.events;
    const deleting = ev.findIndex((e) => e.name === 'nightly-1767232800' && e.deleting);
    const deleted = ev.findIndex((e) => e.name === 'nightly-1767232800' && e.type === 'DELETED');
    const added = ev.findIndex((e) => e.name === 'nightly-1767232860' && e.type === 'ADDED');
    expect(ev[deleting]!.finalizers).toContain('foregroundDeletion'); // propagationPolicy Foreground
    expect(deleting).toBeLessThan(deleted);
    expect(deleted).toBeLessThan(added);
    await lane.finish('nightly-1767232860', 'Complete');
    expect(await second).toMatchObject({ replaced: ['nightly-1767232800'] });
    // The replaced occurrence, re-claimed later, does not create its Job again: a newer one exists.
    const again = await caught(runJob(jobContext('nightly', T0, { concurrencyPolicy: 'Replace', fencingToken: 2, attempt: 2 }), p));
    expect(isJobSkipped(again)).toBe(true);
    expect((again as { reason: string }).reason).toMatch(/^superseded: newer Job nightly-1767232860/);
    expect((await jobsOf(ns)).map((j) => j.metadata!.name)).toEqual(['nightly-1767232860']);
  });
});
