/**
 * Backup to a real S3-compatible server (moto, test/s3/server.ts) with the backup job, then `cronflock restore
 * latest:<schedule> --s3 … --s3-endpoint … --s3-path-style` (the built CLI) into an emptied namespace: a
 * Deployment, a ConfigMap it owns, another ConfigMap and a Secret come back field by field, the ConfigMap's owner
 * reference rewritten to the new Deployment's uid; the plan printed by --dry-run first.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBackup } from '../../jobs/backup/run.js';
import { backupJobSchema } from '../../jobs/backup/schema.js';
import type { RestoreReport } from '../../jobs/restore/index.js';
import { getObject, listAll, type KubeObject } from '../../k8s/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { startS3Server, type S3Server } from '../s3/server.js';
import { BIN, ROOT } from '../support/replica.js';
import { configMap, createAll } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';
import { comparable, memoryLog } from './restore-support.js';

let s3: S3Server;
let redisServer: RedisServerProcess;
let dir: string;
beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket('restore-e2e');
  redisServer = await RedisServerProcess.start();
  dir = mkdtempSync(join(tmpdir(), 'cronflock-restore-s3-'));
});
afterAll(async () => {
  await s3?.stop();
  await redisServer?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'restore', ...args], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: '', AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((r) => child.once('exit', (code) => r({ code, stdout, stderr })));
}

describe('restore from S3', () => {
  it('backup to S3, then cronflock restore latest:<schedule> from it into an emptied namespace', async () => {
    const c = clientFor('admin');
    const ns = await testNamespace(c, 'rs-s3');
    const [owner] = await createAll<KubeObject>(c, [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: ns, labels: { app: 's3' } },
        spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'main', image: 'registry.invalid/web:1' }] } } },
      },
    ]);
    await createAll(c, [
      configMap(ns, 'plain', { role: 'plain' }, { app: 's3' }),
      { ...configMap(ns, 'child', { role: 'child' }), metadata: { name: 'child', namespace: ns, labels: { app: 's3' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: owner!.metadata!.uid!, controller: true }] } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: ns, labels: { app: 's3' } }, stringData: { token: 'abc' } },
    ]);
    const keyFile = join(dir, 'kek');
    writeFileSync(keyFile, randomBytes(32).toString('base64'));
    const storage = { type: 's3', bucket: 'restore-e2e', prefix: 'prod/', endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { env: {} } };
    const params = backupJobSchema.parse({
      kind: 'backup',
      kubeconfig: controlPlane().users.admin.kubeconfig,
      resourceSets: [
        { apiVersion: 'v1', kinds: ['ConfigMap', 'Secret'], namespaces: [ns], labelSelector: 'app=s3' },
        { apiVersion: 'apps/v1', kinds: ['Deployment'], namespaces: [ns], labelSelector: 'app=s3' },
      ],
      storage,
      encryption: { key: { file: keyFile } },
    });
    process.env.AWS_ACCESS_KEY_ID = s3.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = s3.secretAccessKey;
    const dueMs = Math.floor(Date.now() / 1000) * 1000;
    await runBackup(
      {
        occurrence: { schedule: 's3-nightly', key: `s3-nightly@${new Date(dueMs).toISOString()}`, dueMs, fireMs: dueMs, startMs: dueMs, attempt: 1, fencingToken: 1, manual: false },
        signal: new AbortController().signal,
        log: memoryLog(),
        replica: 'test',
      },
      params,
    );
    const refs = [
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'web' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'child' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'plain' },
      { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'creds' },
    ];
    const before = await Promise.all(refs.map((r) => getObject(c, r)));
    await c.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/configmaps`, query: { labelSelector: 'app=s3' } });
    await c.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/secrets`, query: { labelSelector: 'app=s3' } });
    await c.request({ method: 'DELETE', path: `/apis/apps/v1/namespaces/${ns}/deployments`, query: { labelSelector: 'app=s3' } });

    const where = ['--s3', 's3://restore-e2e/prod', '--s3-endpoint', s3.endpoint, '--s3-region', s3.region, '--s3-path-style', '--key-file', keyFile, '--kubeconfig', controlPlane().users.admin.kubeconfig];
    const dry = await cli(['latest:s3-nightly', ...where, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/ConfigMap\s+2\s+0\s+0\s+0/);
    expect(dry.stdout).toMatch(/Secret\s+1\s+0\s+0\s+0/);
    const real = await cli(['latest:s3-nightly', ...where, '--redis', redisServer.url, '--json']);
    expect(real.code, real.stderr).toBe(0);
    const report = JSON.parse(real.stdout) as RestoreReport;
    expect(report.backup).toMatch(/^s3-nightly-\d{8}T\d{6}Z\.tar\.gz\.enc$/);
    expect(report.done).toEqual({
      'Deployment.apps': { create: 1, update: 0, unchanged: 0, delete: 0 },
      ConfigMap: { create: 2, update: 0, unchanged: 0, delete: 0 },
      Secret: { create: 1, update: 0, unchanged: 0, delete: 0 },
    });
    expect(report.ownerReferences).toMatchObject({ rewritten: 1, live: 0, dropped: 0 });
    const after = await Promise.all(refs.map((r) => getObject(c, r)));
    for (let i = 0; i < refs.length; i++) expect(comparable(after[i]!)).toEqual(comparable(before[i]!));
    // the ConfigMap's controller reference points at the restored Deployment's new uid
    expect(after[1]!.metadata?.ownerReferences?.[0]?.uid).toBe(after[0]!.metadata?.uid);
    expect(after[0]!.metadata?.uid).not.toBe(owner!.metadata!.uid);
    const left = await listAll<KubeObject>(c, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, labelSelector: 'app=s3' });
    expect(left.items).toHaveLength(2);
  });
});
