/**
 * A backup on a flock: two replica processes (the built CLI) share one backup schedule against the real
 * kube-apiserver; the replica running an occurrence's backup is SIGKILLed mid-run; the other re-claims the
 * occurrence (fencing token 2) and makes the backup. The occurrence ends with one published archive, named
 * by its due time, and a succeeded run record whose result is the backup report.
 * Needs dist/ built (`npm run build`; `npm test` builds it in the core project's global setup).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backupName, parseBackupName } from '../../jobs/backup/index.js';
import { createObject } from '../../k8s/index.js';
import { Flock, until } from '../support/flock.js';
import type { ReplicaProcess } from '../support/replica.js';
import { configMap } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

let flock: Flock | undefined;
afterEach(async () => {
  await flock?.close();
  flock = undefined;
});

describe('backup on a flock', () => {
  it('a backup whose replica is killed mid-run is re-claimed and published once', async () => {
    const admin = clientFor('admin', { qps: 1000, burst: 1000 });
    const ns = await testNamespace(admin, 'bk-flock');
    for (let i = 0; i < 600; i += 100) await Promise.all(Array.from({ length: 100 }, (_, j) => createObject(admin, configMap(ns, `cm-${i + j}`, { v: 'x'.repeat(2000) }))));
    flock = await Flock.start();
    const dir = path.join(flock.dir, 'backups');
    // Slow on purpose (20 objects a page, 10 requests/s): a run lasts seconds, long enough to be killed in.
    const file = flock.writeSchedules(`schedules:
  - name: snap
    cron: "*/20 * * * * *"
    concurrencyPolicy: Forbid
    job:
      kind: backup
      kubeconfig: ${controlPlane().users.admin.kubeconfig}
      qps: 10
      pageSize: 20
      resourceSets:
        - {apiVersion: v1, kinds: [ConfigMap], namespaces: [${ns}]}
      storage: {type: local, directory: ${dir}}
`);
    const rs: ReplicaProcess[] = [];
    for (const name of ['b1', 'b2']) rs.push(await flock.startReplica({ name, schedules: file, args: ['--lock', '1s'] }));
    let victim: ReplicaProcess | undefined;
    let occurrence = '';
    await until(
      () => {
        for (const r of rs) {
          const l = r.lines.find((x) => x.msg === 'backup started');
          if (l) {
            victim = r;
            occurrence = String(l.occurrence);
            return true;
          }
        }
        return false;
      },
      60_000,
      'a backup to start',
    );
    victim!.signal('SIGKILL');
    const survivor = rs.find((r) => r !== victim)!;
    await until(async () => (await flock!.runs('snap')).some((r) => r.key === occurrence && r.state === 'succeeded'), 60_000, `${occurrence} to succeed`);
    const run = (await flock.runs('snap')).find((r) => r.key === occurrence)!;
    expect(run).toMatchObject({ state: 'succeeded', replica: survivor.name });
    expect(run.fencingToken).toBeGreaterThanOrEqual(2);
    const report = JSON.parse(run.result ?? '{}') as { name: string; objects: number; alreadyExisted: boolean };
    const name = backupName({ schedule: 'snap', dueMs: run.dueMs, manual: false, encrypted: false });
    expect(report).toMatchObject({ name, objects: 600, alreadyExisted: false });
    // One published archive for the occurrence; the killed writer's temporary may remain (retention ignores it,
    // and deletes it once it is a day old).
    const published = fs.readdirSync(dir).filter((f) => parseBackupName(f)?.dueMs === run.dueMs);
    expect(published).toEqual([name]);
    expect(fs.readdirSync(dir).filter((f) => !parseBackupName(f) && !/^\.snap-\d{8}T\d{6}Z\.tar\.gz\.partial-[0-9a-f]{12}$/.test(f))).toEqual([]);
  }, 180_000);
});
