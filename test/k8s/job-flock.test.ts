/**
 * `kind: job` on a flock of replica processes (the built CLI, `bin/cronflock.js start`) against the real
 * kube-apiserver of the test lane and a real redis-server.
 *
 * There is no Job controller and no garbage collector in this lane: the test's JobLane (job-support.ts) marks
 * Jobs Complete/Failed through the status subresource as the Job controller would, and ends foreground deletions
 * (removes the `foregroundDeletion` finalizer of a Job without pods) as the garbage collector would. It also sees
 * every Job created, so "one Job per occurrence" is checked on every Job that ever existed, not only on those the
 * history limits left.
 * Needs dist/ built (`npm run build`; `npm test` builds it in the core project's global setup, which runs first).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { BatchJob } from '../../jobs/job/state.js';
import { jobOutcome, scheduledTimeMs } from '../../jobs/job/state.js';
import { jobNameFor } from '../../jobs/job/name.js';
import { listAll } from '../../k8s/index.js';
import type { RunRecord } from '../../runner/records/runs.js';
import { Flock, sleep, until } from '../support/flock.js';
import type { ReplicaProcess } from '../support/replica.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { JobLane } from './job-support.js';

let flock: Flock | undefined;
let lane: JobLane | undefined;
afterEach(async () => {
  await flock?.close();
  flock = undefined;
  await lane?.stop();
  lane = undefined;
});

function scheduleFile(ns: string, o: { cron: string; policy: string; extra?: string }): string {
  return `schedules:
  - name: report
    cron: "${o.cron}"
    concurrencyPolicy: ${o.policy}
    job:
      kind: job
      kubeconfig: ${controlPlane().users.admin.kubeconfig}
      namespace: ${ns}
      qps: 100
${o.extra ?? ''}      jobTemplate:
        spec:
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: registry.invalid/report:1}]
`;
}

const final = (runs: RunRecord[]) => runs.filter((r) => r.state === 'succeeded' || r.state === 'failed' || r.state === 'skipped');
const jobsIn = async (ns: string) => (await listAll<BatchJob>(clientFor('admin'), { apiVersion: 'batch/v1', kind: 'Job', namespace: ns })).items;

/** The replica whose latest created Job has not finished its run yet: it holds that occurrence's claim. */
function holder(rs: ReplicaProcess[]): { replica: ReplicaProcess; occurrence: string } | undefined {
  for (const r of rs) {
    const created = r.logs('created the Job').map((l) => String(l.occurrence));
    const done = new Set(r.lines.filter((l) => l.msg === 'run finished' || l.msg === 'run skipped by its job').map((l) => String(l.occurrence)));
    const open = created.filter((k) => !done.has(k));
    if (open.length > 0) return { replica: r, occurrence: open[open.length - 1]! };
  }
  return undefined;
}

describe('kind: job on a flock', () => {
  it('3 replicas, the claimant of a running Job SIGKILLed: every occurrence has exactly one Job, the re-claim adopts it, history limits hold', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'kj-flock');
    // The "Job controller": each Job finishes 1.5 s after it was created; every fourth (by due time) fails.
    const fails = (j: BatchJob) => (scheduledTimeMs(j) / 2000) % 4 === 0;
    lane = await JobLane.start(admin, ns, { finish: (j) => ({ afterMs: 1500, outcome: fails(j) ? 'Failed' : 'Complete' }) });
    flock = await Flock.start();
    const file = flock.writeSchedules(scheduleFile(ns, { cron: '*/2 * * * * *', policy: 'Allow', extra: '      successfulJobsHistoryLimit: 3\n      failedJobsHistoryLimit: 1\n' }));
    const args = ['--lock', '2s'];
    const rs = [
      await flock.startReplica({ name: 'j1', schedules: file, args }),
      await flock.startReplica({ name: 'j2', schedules: file, args }),
      await flock.startReplica({ name: 'j3', schedules: file, args }),
    ];
    await until(async () => final(await flock!.runs('report')).length >= 3, 30_000, 'three finished runs');
    // SIGKILL the replica that holds the claim of a Job that is still running.
    let victim: { replica: ReplicaProcess; occurrence: string } | undefined;
    await until(() => (victim = holder(rs)) !== undefined, 10_000, 'a replica holding a running Job');
    victim!.replica.signal('SIGKILL');
    const killed = victim!.occurrence;
    const others = rs.filter((r) => r !== victim!.replica);
    // Another replica re-claims the occurrence and adopts its Job.
    await until(() => others.some((r) => r.logs('adopted the Job of this occurrence').some((l) => l.occurrence === killed)), 20_000, `adoption of ${killed}`);
    await sleep(9000);
    for (const r of rs) r.signal('SIGKILL');
    await Promise.all(rs.map((r) => r.exited));
    const records = await flock.runs('report');
    const runs = final(records);
    await lane.stop();

    // Exactly one Job per occurrence, among every Job ever created; each finished run recorded its Job's outcome.
    expect(lane.duplicates()).toEqual([]);
    expect(lane.created.size).toBeGreaterThanOrEqual(8);
    const ran = runs.filter((r) => r.state !== 'skipped');
    expect(ran.length).toBeGreaterThanOrEqual(6);
    for (const r of ran) {
      expect(lane.created.get(r.key)?.size, r.key).toBe(1);
      expect(lane.finished.get(jobNameFor(r)), r.key).toBe(r.state === 'succeeded' ? 'Complete' : 'Failed');
    }
    // No Job without an occurrence of the flock behind it.
    for (const key of lane.created.keys()) expect(records.some((r) => r.key === key), key).toBe(true);
    // The killed claimant's occurrence: re-claimed (a stall), its Job adopted, its outcome recorded once.
    const k = ran.find((r) => r.key === killed);
    expect(k, `run record of ${killed}`).toBeDefined();
    expect(k!.attempt).toBeGreaterThanOrEqual(2);
    expect(k!.stalls).toBeGreaterThanOrEqual(1);
    if (k!.state === 'succeeded') expect(JSON.parse(k!.result!)).toMatchObject({ adopted: true });
    // History limits: when the newest recorded run pruned, every older Job had finished; of those, at most
    // 3 succeeded and 1 failed are left, and the rest were deleted.
    const newest = Math.max(...ran.map((r) => r.dueMs));
    const older = (await jobsIn(ns)).filter((j) => scheduledTimeMs(j) <= newest);
    const left = { succeeded: 0, failed: 0, running: 0 };
    for (const j of older) left[jobOutcome(j).state]++;
    expect(left.succeeded).toBeLessThanOrEqual(3);
    expect(left.failed).toBeLessThanOrEqual(1);
    expect(left.succeeded).toBeGreaterThanOrEqual(1);
    const createdOlder = [...lane.created.keys()].filter((key) => Date.parse(key.slice(key.indexOf('@') + 1)) <= newest).length;
    expect(createdOlder).toBeGreaterThanOrEqual(7); // so at least 3 were deleted by the history limits
  });

  it('Forbid: a live Job whose claimant died (its occurrence stalled out) makes the next occurrences skipped by the kind, until it finishes', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'kj-forbid-flock');
    lane = await JobLane.start(admin, ns); // Jobs run until the test finishes them
    flock = await Flock.start();
    const file = flock.writeSchedules(scheduleFile(ns, { cron: '*/2 * * * * *', policy: 'Forbid' }));
    // --max-stalls 0: the dead claimant's occurrence is recorded failed at its re-claim, so the engine no longer
    // counts it as running; only its Job says it still runs.
    const args = ['--lock', '2s', '--max-stalls', '0'];
    const rs = [await flock.startReplica({ name: 'f1', schedules: file, args }), await flock.startReplica({ name: 'f2', schedules: file, args })];
    let victim: { replica: ReplicaProcess; occurrence: string } | undefined;
    await until(() => (victim = holder(rs)) !== undefined, 20_000, 'a replica holding a running Job');
    victim!.replica.signal('SIGKILL');
    const a = victim!.occurrence;
    const aJob = jobNameFor({ schedule: 'report', key: a, dueMs: Date.parse(a.slice(a.indexOf('@') + 1)) });
    const byKind = (runs: RunRecord[]) => runs.filter((r) => r.state === 'skipped' && r.reason?.startsWith(`overlap: Job ${aJob} (${a}) still running`));
    await until(async () => byKind(await flock!.runs('report')).length >= 2, 30_000, 'occurrences skipped for the live Job');
    expect([...lane.created.keys()]).toEqual([a]);
    const stalled = (await flock.runs('report')).find((r) => r.key === a)!;
    expect(stalled.state).toBe('failed');
    expect(stalled.reason).toMatch(/stalled/);
    // The Job finishes: the next occurrence creates its own Job and runs.
    await lane.finish(aJob, 'Complete');
    await until(() => lane!.created.size >= 2, 15_000, 'a Job after the live one finished');
    const next = [...lane.created.keys()].find((k) => k !== a)!;
    await lane.finish(jobNameFor({ schedule: 'report', key: next, dueMs: Date.parse(next.slice(next.indexOf('@') + 1)) }), 'Complete');
    await until(async () => (await flock!.runs('report')).some((r) => r.key === next && r.state === 'succeeded'), 15_000, `${next} succeeded`);
    const skipped = byKind(await flock.runs('report'));
    for (const r of skipped) expect(lane.created.has(r.key), r.key).toBe(false);
    expect(skipped.every((r) => r.dueMs > stalled.dueMs && r.dueMs < Date.parse(next.slice(next.indexOf('@') + 1)))).toBe(true);
    expect(lane.duplicates()).toEqual([]);
  });

  it('Replace: each new occurrence deletes the running Job (propagation Foreground) before creating its own; the replaced run is recorded failed: replaced', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'kj-replace-flock');
    lane = await JobLane.start(admin, ns); // no Job finishes; foreground deletions end as the garbage collector would
    flock = await Flock.start();
    const file = flock.writeSchedules(scheduleFile(ns, { cron: '*/3 * * * * *', policy: 'Replace' }));
    const args = ['--lock', '2s'];
    const rs = [await flock.startReplica({ name: 'r1', schedules: file, args }), await flock.startReplica({ name: 'r2', schedules: file, args })];
    await until(() => lane!.created.size >= 4, 40_000, 'four Jobs');
    for (const r of rs) r.signal('SIGKILL');
    await Promise.all(rs.map((r) => r.exited));
    const records = await flock.runs('report');
    await lane.stop();

    const ev = lane.events;
    const added = ev.filter((e) => e.type === 'ADDED').map((e) => e.name);
    expect(new Set(added).size).toBe(added.length);
    expect(lane.duplicates()).toEqual([]);
    for (let i = 0; i + 1 < added.length; i++) {
      const [old, next] = [added[i]!, added[i + 1]!];
      const deleting = ev.findIndex((e) => e.name === old && e.deleting);
      const deleted = ev.findIndex((e) => e.name === old && e.type === 'DELETED');
      const created = ev.findIndex((e) => e.name === next && e.type === 'ADDED');
      expect(deleting, `${old} deleted`).toBeGreaterThanOrEqual(0);
      expect(ev[deleting]!.finalizers, `${old}: propagationPolicy Foreground`).toContain('foregroundDeletion');
      expect(deleted, `${old} gone before ${next} is created`).toBeLessThan(created);
      expect(deleted).toBeGreaterThan(deleting);
      const replaced = records.find((r) => r.key === ev[deleting]!.occurrence);
      expect(replaced?.state, old).toBe('failed');
      expect(replaced?.reason, old).toBe('replaced');
    }
    const left = (await jobsIn(ns)).filter((j) => !j.metadata?.deletionTimestamp);
    // Only the newest Job is left (none, when the flock was stopped between a delete and the next create).
    expect(left.map((j) => j.metadata!.name)).toEqual(left.length === 0 ? [] : [added[added.length - 1]]);
  });
});
