/**
 * `kind: backup` to a real S3-compatible server (moto's server, a child process started per file, installed by
 * test/s3/build.sh): an encrypted backup with credentials and the key taken from Kubernetes Secrets, streamed as
 * a multipart upload, published under its name, read back and verified with the reader, listed, a re-claim that
 * writes nothing, and retention pruning the schedule's oldest backups while a manual backup stays.
 */
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupName, openBackup, s3Storage } from '../../jobs/backup/index.js';
import { createObject, type KubeClient } from '../../k8s/index.js';
import { startS3Server, type S3Server } from '../s3/server.js';
import { backupContext, runBackupJob } from './backup-support.js';
import { configMap } from './fixtures.js';
import { clientFor, testNamespace } from './harness.js';

let s3: S3Server;
let admin: KubeClient;
let ns: string;
const key = randomBytes(32);
const BUCKET = 'cronflock-backups';

async function keys(prefix: string): Promise<string[]> {
  const r = await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (r.Contents ?? []).map((o) => o.Key!.slice(prefix.length)).sort();
}

beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket(BUCKET);
  admin = clientFor('admin');
  ns = await testNamespace(admin, 'bk-s3');
  await createObject(admin, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'backup-creds', namespace: ns },
    stringData: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, key: key.toString('base64') },
  });
  // 300 ConfigMaps of 40 KB: a 12 MB selection, so the upload is multipart (8 MiB parts) even after gzip of random data.
  for (let i = 0; i < 300; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, j) => createObject(admin, configMap(ns, `cm-${i + j}`, { blob: randomBytes(30_000).toString('base64') }))));
  }
}, 120_000);

afterAll(async () => {
  await s3?.stop();
});

describe('backup: S3 (moto server)', () => {
  it('backs up encrypted to S3, reads back, lists, ignores a re-claim, and prunes by retention', async () => {
    const prefix = `cluster-${randomBytes(3).toString('hex')}/`;
    const job = {
      resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap', 'Secret'], namespaces: [ns] }],
      storage: {
        type: 's3',
        bucket: BUCKET,
        prefix,
        endpoint: s3.endpoint,
        credentials: { secret: { namespace: ns, name: 'backup-creds' } },
      },
      encryption: { key: { secret: { namespace: ns, name: 'backup-creds', key: 'key' } } },
      retention: { count: 2 },
    };
    const t0 = Date.parse('2026-02-01T00:00:00Z');
    const h = 3_600_000;
    const name = (dueMs: number, manual = false): string => backupName({ schedule: 'bk', dueMs, manual, encrypted: true });
    // Someone else's file under the prefix, with a name an unanchored pattern would take for ours.
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}${name(t0)}.copy`, Body: 'x' }));

    const started = performance.now();
    const first = await runBackupJob(job, backupContext({ dueMs: t0 + h }));
    const firstMs = performance.now() - started;
    expect(first).toMatchObject({ name: name(t0 + h), objects: 301, encrypted: true, alreadyExisted: false, location: `s3://${BUCKET}/${prefix}` });
    expect(first.bytes).toBeGreaterThan(8 * 1024 * 1024);
    console.log(`S3 backup of ${first.objects} objects, ${(first.bytes / 1048576).toFixed(1)} MiB: ${Math.round(firstMs)} ms`);

    const storage = s3Storage({ bucket: BUCKET, prefix, endpoint: s3.endpoint, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    const opened = await openBackup({ storage, name: first.name, keys: [key] });
    expect(opened.manifest.objects).toHaveLength(301);
    let n = 0;
    for await (const { entry, object } of opened.objects()) {
      n++;
      expect((object.metadata as { name: string }).name).toBe(entry.name);
    }
    expect(n).toBe(301);
    expect((await storage.list()).map((f) => f.name).sort()).toEqual([`${name(t0)}.copy`, name(t0 + h)]);

    const again = await runBackupJob(job, backupContext({ dueMs: t0 + h, fencingToken: 7 }));
    expect(again).toMatchObject({ name: first.name, alreadyExisted: true });

    await runBackupJob(job, backupContext({ dueMs: t0 + 2 * h + 5, manual: true }));
    await runBackupJob(job, backupContext({ dueMs: t0 + 2 * h }));
    const last = await runBackupJob(job, backupContext({ dueMs: t0 + 3 * h }));
    expect(last.retention).toEqual({ kept: 2, deleted: 1, deletedNames: [name(t0 + h)] });
    // No temporaries or multipart leftovers; the manual backup and the foreign file stay.
    expect(await keys(prefix)).toEqual([`${name(t0)}.copy`, name(t0 + 2 * h), name(t0 + 2 * h + 5, true), name(t0 + 3 * h)].sort());
  }, 180_000);

  it('an aborted upload leaves no object in the bucket', async () => {
    const prefix = `abort-${randomBytes(3).toString('hex')}/`;
    const ctx = backupContext({ dueMs: Date.parse('2026-02-02T00:00:00Z'), onLog: (msg) => msg === 'backup started' && setTimeout(() => ctx.abort.abort(new Error('claim lost')), 50) });
    await expect(
      runBackupJob(
        {
          resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns] }],
          storage: { type: 's3', bucket: BUCKET, prefix, endpoint: s3.endpoint, credentials: { secret: { namespace: ns, name: 'backup-creds' } } },
        },
        ctx,
      ),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await keys(prefix)).toEqual([]);
  }, 60_000);

  it('a bucket that does not exist fails the run with STORAGE naming it, without hanging the writer', async () => {
    const t0 = performance.now();
    await expect(
      runBackupJob({
        resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns] }],
        storage: { type: 's3', bucket: 'no-such-bucket', endpoint: s3.endpoint, credentials: { secret: { namespace: ns, name: 'backup-creds' } } },
      }),
    ).rejects.toMatchObject({ code: 'STORAGE', message: expect.stringMatching(/s3:\/\/no-such-bucket\/.*NoSuchBucket/) });
    expect(performance.now() - t0).toBeLessThan(30_000);
  }, 60_000);
});
