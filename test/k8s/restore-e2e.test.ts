/**
 * Backup through `kind: backup` (its own run function, a real archive in a local directory, encrypted), then
 * `cronflock restore` as a user runs it (separate processes of the built CLI: needs dist/, see cleanup-flock), against
 * the real kube-apiserver and a real redis-server:
 * - a second concurrent restore of the same cluster is refused with the holder named, and applies nothing;
 * - a restore whose process is stopped (SIGSTOP) loses its lock; a second process waits, takes the lock with a
 *   higher fencing token and resumes from the checkpoints (no object created twice, none counted twice); the
 *   stopped process, continued, finds its lock lost and stops without writing a checkpoint;
 * - unknown backup, wrong key and a corrupted archive fail with a clear message and apply nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBackup } from '../../jobs/backup/run.js';
import { backupJobSchema } from '../../jobs/backup/schema.js';
import type { RestoreReport } from '../../jobs/restore/index.js';
import { listAll, type KubeObject } from '../../k8s/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { BIN, ROOT } from '../support/replica.js';
import { configMap, createAll } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { comparable, memoryLog } from './restore-support.js';

let redisServer: RedisServerProcess;
let redis: Redis;
let dir: string;
let keyFile: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  redisServer = await RedisServerProcess.start();
  redis = new Redis(redisServer.url);
  dir = mkdtempSync(join(tmpdir(), 'cronflock-restore-'));
  keyFile = join(dir, 'kek');
  writeFileSync(keyFile, randomBytes(32).toString('base64'));
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  redis?.disconnect();
  await redisServer?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** Backs up ConfigMaps of `ns` with the backup job into `dir/archives`; returns the archive name. */
async function backup(ns: string, schedule: string): Promise<string> {
  const params = backupJobSchema.parse({
    kind: 'backup',
    kubeconfig: controlPlane().users.admin.kubeconfig,
    resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], labelSelector: 'app=e2e' }],
    storage: { type: 'local', directory: join(dir, 'archives') },
    encryption: { key: { file: keyFile } },
    qps: 200,
  });
  const dueMs = Math.floor(Date.now() / 1000) * 1000;
  const report = await runBackup(
    {
      occurrence: { schedule, key: `${schedule}@${new Date(dueMs).toISOString()}`, dueMs, fireMs: dueMs, startMs: dueMs, attempt: 1, fencingToken: 1, manual: false },
      signal: new AbortController().signal,
      log: memoryLog(),
      replica: 'test',
    },
    params,
  );
  return (report as unknown as { name: string }).name;
}

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
}

/** `cronflock restore …` (the built CLI, as users run it), as its own process. */
function cli(args: string[]): Run {
  const child = spawn(process.execPath, [BIN, 'restore', ...args], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: '', CRONFLOCK_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const run: Run = { child, stdout: '', stderr: '', exited: new Promise((r) => child.once('exit', (code) => r(code))) };
  child.stdout!.on('data', (b: Buffer) => (run.stdout += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (run.stderr += b.toString()));
  return run;
}

const common = (): string[] => ['--dir', join(dir, 'archives'), '--key-file', keyFile, '--kubeconfig', controlPlane().users.admin.kubeconfig, '--redis', redisServer.url, '--namespace', 'e2e'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function configMaps(ns: string): Promise<KubeObject[]> {
  return (await listAll<KubeObject>(clientFor('admin'), { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'app=e2e' })).items;
}

async function emptyNamespace(ns: string): Promise<void> {
  const c = clientFor('admin');
  const info = await c.discovery.resolve('v1', 'ConfigMap');
  await c.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/${info.resource}`, query: { labelSelector: 'app=e2e' } });
}

describe('backup, then cronflock restore', () => {
  it('one restore per cluster: a second one is refused; a stopped restore is resumed by another process without duplicating work', async () => {
    const c = clientFor('admin');
    const ns = await testNamespace(c, 'rs-e2e');
    const N = 150;
    await createAll(c, Array.from({ length: N }, (_, i) => configMap(ns, `cm-${String(i).padStart(3, '0')}`, { i: String(i), blob: 'x'.repeat(200) }, { app: 'e2e' })));
    const before = new Map((await configMaps(ns)).map((o) => [o.metadata!.name!, comparable(o)]));
    const name = await backup(ns, 'e2e-lock');
    expect(name).toMatch(/^e2e-lock-\d{8}T\d{6}Z\.tar\.gz\.enc$/);
    await emptyNamespace(ns);
    expect(await configMaps(ns)).toHaveLength(0);

    // A: slow enough (qps 30, one apply in flight) to be caught mid-way; stopped (SIGSTOP) there. Its lease (8 s)
    // outlives the stop for a while, so what follows does not depend on how fast this machine is.
    const a = cli([name, ...common(), '--qps', '30', '--concurrency', '1', '--lock-ttl', '8s']);
    const t0 = Date.now();
    while ((await configMaps(ns)).length < 20) {
      if (a.child.exitCode !== null) throw new Error(`restore A ended early: ${a.stderr}`);
      if (Date.now() - t0 > 60_000) throw new Error(`restore A applied nothing in 60 s: ${a.stderr}`);
      await sleep(50);
    }
    a.child.kill('SIGSTOP');
    const stoppedAt = (await configMaps(ns)).length;
    expect(stoppedAt).toBeLessThan(N);
    // B, while A's lease lasts: refused at once, naming the holder, applying nothing
    const b = cli([name, ...common()]);
    expect(await b.exited).toBe(2);
    expect(b.stderr).toMatch(/lock restore:[0-9a-f-]+ is held by cli@[^ ]+\/\d+ \(fencing token 1/);
    expect(b.stdout).toBe('');
    expect((await configMaps(ns)).length).toBe(stoppedAt);

    // C waits for A's lease to lapse, takes the lock and resumes
    const cRun = cli([name, ...common(), '--wait', '30s', '--json']);
    expect(await cRun.exited, cRun.stderr).toBe(0);
    const report = JSON.parse(cRun.stdout) as RestoreReport;
    console.info(`restore A stopped after ${stoppedAt}/${N} objects; C resumed ${report.resumed} from checkpoints, done ${JSON.stringify(report.done)}, ${report.durationMs} ms`);
    expect(report.fencingToken).toBe(2);
    expect(report.resumed).toBeGreaterThanOrEqual(stoppedAt - 1);
    // every object counted created exactly once across A and C (an apply A had in flight but not checkpointed is
    // sent again by C and counted by C only)
    expect(report.done).toEqual({ ConfigMap: { create: N, update: 0, unchanged: 0, delete: 0 } });
    // C's plan is A's plan, from the checkpoints: everything to create
    expect(report.plan.byKind.ConfigMap).toEqual({ create: N, update: 0, unchanged: 0, delete: 0 });

    // A continues: it learns its lock is gone and stops; it writes no checkpoint after C cleared them
    a.child.kill('SIGCONT');
    expect(await a.exited).not.toBe(0);
    expect(a.stderr).toMatch(/lock restore:[0-9a-f-]+ \(fencing token 1\) (lapsed|was taken over)/);
    expect(await redis.keys('{e2e}:jobckpt:*')).toEqual([]);
    expect(await redis.exists(`{e2e}:joblock:restore:${report.clusterId}`)).toBe(0);

    const after = await configMaps(ns);
    expect(after).toHaveLength(N);
    for (const o of after) expect(comparable(o)).toEqual(before.get(o.metadata!.name!));
  });

  it('--dry-run prints the plan and writes nothing; the restore then does what it said', async () => {
    const c = clientFor('admin');
    const ns = await testNamespace(c, 'rs-e2e-dry');
    await createAll(c, ['a', 'b', 'c'].map((n) => configMap(ns, n, { v: n }, { app: 'e2e' })));
    const name = await backup(ns, 'e2e-dry');
    await emptyNamespace(ns);
    await createAll(c, [configMap(ns, 'a', { v: 'changed' }, { app: 'e2e' }), configMap(ns, 'stray', {}, { app: 'e2e' })]);
    const dry = cli([join(dir, 'archives', name), '--key-file', keyFile, '--kubeconfig', controlPlane().users.admin.kubeconfig, '--dry-run', '--prune']);
    expect(await dry.exited, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/plan \(dry run, nothing written\)/);
    expect(dry.stdout).toMatch(/ConfigMap\s+2\s+1\s+0\s+1/);
    expect(dry.stdout).toMatch(new RegExp(`prune: ConfigMap ${ns}/stray`));
    expect((await configMaps(ns)).map((o) => o.metadata?.name).sort()).toEqual(['a', 'stray']);
    // the same plan with storage and keys taken from the backup schedule's blocks (--from, --schedule)
    const file = join(dir, 'schedules.yaml');
    writeFileSync(
      file,
      `schedules:
  - name: e2e-dry
    cron: "0 3 * * *"
    job:
      kind: backup
      resourceSets: [{apiVersion: v1, kinds: [ConfigMap], namespaces: [${ns}]}]
      storage: {type: local, directory: ./archives}
      encryption: {key: {file: ./kek}}
`,
    );
    const fromFile = cli(['latest:e2e-dry', '--from', file, '--schedule', 'e2e-dry', '--kubeconfig', controlPlane().users.admin.kubeconfig, '--dry-run', '--prune']);
    expect(await fromFile.exited, fromFile.stderr).toBe(0);
    expect(fromFile.stdout).toMatch(/ConfigMap\s+2\s+1\s+0\s+1/);
    const notBackup = cli(['latest:e2e-dry', '--from', file, '--schedule', 'nope', '--dry-run']);
    expect(await notBackup.exited).toBe(2);
    expect(notBackup.stderr).toMatch(/--schedule: no schedule named nope in .*schedules\.yaml \(schedules: e2e-dry\)/);
    const real = cli([`latest:e2e-dry`, ...common(), '--prune', '--json']);
    expect(await real.exited, real.stderr).toBe(0);
    const report = JSON.parse(real.stdout) as RestoreReport;
    expect(report.backup).toBe(name);
    expect(report.done).toEqual({ ConfigMap: { create: 2, update: 1, unchanged: 0, delete: 1 } });
    expect((await configMaps(ns)).map((o) => `${o.metadata?.name}=${(o as { data?: { v?: string } }).data?.v}`).sort()).toEqual(['a=a', 'b=b', 'c=c']);
  });

  it('unknown backup, wrong key, corrupted archive: a clear error and nothing applied', async () => {
    const c = clientFor('admin');
    const ns = await testNamespace(c, 'rs-e2e-bad');
    await createAll(c, ['a', 'b'].map((n) => configMap(ns, n, { v: n }, { app: 'e2e' })));
    const name = await backup(ns, 'e2e-bad');
    await emptyNamespace(ns);

    const unknown = cli(['e2e-bad-20000101T000000Z.tar.gz.enc', ...common()]);
    expect(await unknown.exited).toBe(2);
    expect(unknown.stderr).toMatch(/backup e2e-bad-20000101T000000Z\.tar\.gz\.enc in .*archives.*: .*(not found|does not exist).*backups there: .*e2e-bad-/is);

    const otherKey = join(dir, 'other-kek');
    writeFileSync(otherKey, randomBytes(32).toString('base64'));
    const wrong = cli([name, '--dir', join(dir, 'archives'), '--key-file', otherKey, '--kubeconfig', controlPlane().users.admin.kubeconfig, '--redis', redisServer.url]);
    expect(await wrong.exited).toBe(2);
    expect(wrong.stderr).toMatch(new RegExp(`backup ${name.replaceAll('.', '\\.')} in .*: .*key.*give the key the backup was written with.*nothing was applied`, 's'));

    // flip one byte in the middle of the archive
    const corrupt = join(dir, 'corrupt');
    rmSync(corrupt, { recursive: true, force: true });
    mkdirSync(corrupt);
    const bytes = readFileSync(join(dir, 'archives', name));
    const at = Math.floor(bytes.length / 2);
    bytes.writeUInt8(bytes.readUInt8(at) ^ 0xff, at);
    writeFileSync(join(corrupt, name), bytes);
    const bad = cli([name, '--dir', corrupt, '--key-file', keyFile, '--kubeconfig', controlPlane().users.admin.kubeconfig, '--redis', redisServer.url]);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr).toMatch(/damaged or was changed after it was written.*nothing was applied/s);
    expect(readdirSync(corrupt)).toEqual([name]);

    expect(await configMaps(ns)).toHaveLength(0);
  });
});
