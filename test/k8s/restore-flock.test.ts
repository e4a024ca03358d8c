/**
 * `kind: restore` on a flock of two replica processes (the built CLI, `bin/cronflock.js start`), against the real
 * kube-apiserver and a real redis-server: a scheduled dry run records its plan as the run's result; a restore
 * whose claimant is SIGKILLed mid-way is re-claimed by the other replica, which waits for the per-cluster lock
 * to lapse and resumes from the checkpoints: every object created once, the run recorded once.
 * Needs dist/ built (`npm run build`; `npm test` builds it in the core project's global setup, which runs first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runBackup } from '../../jobs/backup/run.js';
import { backupJobSchema } from '../../jobs/backup/schema.js';
import type { RestoreReport } from '../../jobs/restore/index.js';
import { listAll, type KubeObject } from '../../k8s/index.js';
import { cronAt } from '../support/events.js';
import { Flock, sleep, until } from '../support/flock.js';
import { configMap, createAll } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { comparable, memoryLog } from './restore-support.js';

let flock: Flock | undefined;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cronflock-restore-flock-'));
});
afterEach(async () => {
  await flock?.close();
  flock = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function backup(ns: string, schedule: string): Promise<string> {
  const params = backupJobSchema.parse({
    kind: 'backup',
    kubeconfig: controlPlane().users.admin.kubeconfig,
    resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], labelSelector: 'app=flock' }],
    storage: { type: 'local', directory: join(dir, 'archives') },
    qps: 200,
  });
  const dueMs = Math.floor(Date.now() / 1000) * 1000;
  const occurrence = { schedule, key: `${schedule}@${new Date(dueMs).toISOString()}`, dueMs, fireMs: dueMs, startMs: dueMs, attempt: 1, fencingToken: 1, manual: false };
  const report = await runBackup({ occurrence, signal: new AbortController().signal, log: memoryLog(), replica: 'test' }, params);
  return (report as unknown as { name: string }).name;
}

async function configMaps(ns: string): Promise<KubeObject[]> {
  return (await listAll<KubeObject>(clientFor('admin'), { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'app=flock' })).items;
}

async function emptyNamespace(ns: string): Promise<void> {
  await clientFor('admin').request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/configmaps`, query: { labelSelector: 'app=flock' } });
}

function schedule(name: string, cron: string, job: string): string {
  return `schedules:
  - name: ${name}
    cron: "${cron}"
    concurrencyPolicy: Forbid
    job:
      kind: restore
      kubeconfig: ${controlPlane().users.admin.kubeconfig}
      storage: {type: local, directory: ${join(dir, 'archives')}}
${job
  .trim()
  .split('\n')
  .map((l) => `      ${l.trim()}`)
  .join('\n')}
`;
}

describe('restore on a flock', () => {
  it('a scheduled dry run records the plan as the run result and writes nothing', async () => {
    const c = clientFor('admin');
    const ns = await testNamespace(c, 'rs-flock-dry');
    await createAll(c, ['a', 'b'].map((n) => configMap(ns, n, { v: n }, { app: 'flock' })));
    const name = await backup(ns, 'flock-dry');
    await emptyNamespace(ns);
    flock = await Flock.start();
    const file = flock.writeSchedules(schedule('drill', cronAt(Date.now() + 3000), `backup: latest:flock-dry\ndryRun: true`));
    await flock.startReplica({ name: 'k1', schedules: file });
    await until(async () => (await flock!.runs('drill')).some((r) => r.state === 'succeeded'), 20_000, 'the dry run');
    const [run] = await flock.runs('drill');
    const report = JSON.parse(run!.result!) as RestoreReport;
    expect(report).toMatchObject({ backup: name, dryRun: true, plan: { byKind: { ConfigMap: { create: 2, update: 0, unchanged: 0, delete: 0 } } } });
    expect(report.done).toBeUndefined();
    expect(await configMaps(ns)).toHaveLength(0);
  });

  it('a restore whose claimant is killed is re-claimed and resumed by another replica: each object created once', async () => {
    const c = clientFor('admin');
    const ns = await testNamespace(c, 'rs-flock');
    const N = 150;
    await createAll(c, Array.from({ length: N }, (_, i) => configMap(ns, `cm-${String(i).padStart(3, '0')}`, { i: String(i) }, { app: 'flock' })));
    const before = new Map((await configMaps(ns)).map((o) => [o.metadata!.name!, comparable(o)]));
    const name = await backup(ns, 'flock-src');
    await emptyNamespace(ns);

    flock = await Flock.start();
    const file = flock.writeSchedules(
      schedule('drill', cronAt(Date.now() + 6000), `backup: ${name}\nqps: 30\nconcurrency: 1\nlockTtl: 2s`),
    );
    const rs = [
      await flock.startReplica({ name: 'k1', schedules: file, args: ['--lock', '2s'] }),
      await flock.startReplica({ name: 'k2', schedules: file, args: ['--lock', '2s'] }),
    ];
    const t0 = Date.now();
    while ((await configMaps(ns)).length < 20) {
      if (Date.now() - t0 > 60_000) throw new Error('the scheduled restore applied nothing within 60 s');
      await sleep(100);
    }
    const claimant = rs.find((r) => r.logs('run started').length > 0)!;
    const other = rs.find((r) => r !== claimant)!;
    claimant.signal('SIGKILL');
    const killedAt = (await configMaps(ns)).length;
    expect(killedAt).toBeLessThan(N);

    await until(async () => (await flock!.runs('drill')).some((r) => r.state === 'succeeded' || r.state === 'failed'), 90_000, 'the re-claimed restore');
    const [run] = await flock.runs('drill');
    expect(run, JSON.stringify(run)).toMatchObject({ state: 'succeeded', attempt: 2, fencingToken: 2, replica: other.name });
    const report = JSON.parse(run!.result!) as RestoreReport;
    console.info(`claimant killed after ${killedAt}/${N} objects; the re-claim resumed ${report.resumed}, done ${JSON.stringify(report.done)}, restore lock token ${report.fencingToken}, ${report.durationMs} ms`);
    expect(report.fencingToken).toBe(2);
    expect(report.resumed).toBeGreaterThanOrEqual(killedAt - 1);
    expect(report.done).toEqual({ ConfigMap: { create: N, update: 0, unchanged: 0, delete: 0 } });
    const after = await configMaps(ns);
    expect(after).toHaveLength(N);
    for (const o of after) expect(comparable(o)).toEqual(before.get(o.metadata!.name!));
    expect(await flock.redisClient.keys('{cronflock}:jobckpt:*')).toEqual([]);
  });
});
