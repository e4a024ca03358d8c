/**
 * `kind: backup` against the real kube-apiserver, to a local directory: the manifest (cluster id = kube-system
 * uid, server version, per-object sha256 and original uid) and the stripped fields, read with the `tar`
 * package independently of our reader; selection and excludes; Secrets refused unencrypted before anything is
 * written; encryption and tampering (a flipped ciphertext byte, a changed object in a plain archive); one
 * archive per occurrence after a re-claim and with two concurrent claimants; abort; retention.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupName, localStorage, openBackup, STRIPPED_METADATA_FIELDS, type BackupManifest } from '../../jobs/backup/index.js';
import { createObject, getObject, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { backupContext, runBackupJob } from './backup-support.js';
import { configMap, createAll, installCrd } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

let admin: KubeClient;
let ns: string;
let ns2: string;
let root: string;
const KEY_ENV = 'CRONFLOCK_TEST_BACKUP_KEY';
const key = randomBytes(32);

function secret(namespace: string, name: string, value: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, stringData: { password: value } };
}

function freshDir(label: string): string {
  return path.join(root, `${label}-${randomBytes(3).toString('hex')}`);
}

function files(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
}

async function extract(file: string): Promise<string> {
  const out = fs.mkdtempSync(path.join(root, 'x-'));
  await tar.x({ file, cwd: out });
  return out;
}

beforeAll(async () => {
  admin = clientFor('admin');
  ns = await testNamespace(admin, 'bk');
  ns2 = await testNamespace(admin, 'bk2');
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'cronflock-backup-'));
  process.env[KEY_ENV] = key.toString('base64');
  await createAll(admin, [
    configMap(ns, 'cm-a', { k: 'a' }, { app: 'web' }),
    configMap(ns, 'cm-b', { k: 'b' }),
    configMap(ns, 'cm-skip', { k: 's' }, { 'cronflock.io/exclude-from-backup': 'true' }),
    configMap(ns, 'tmp-1', { k: 't' }),
    configMap(ns2, 'cm-x', { k: 'x' }),
    secret(ns, 'db', 'hunter2-very-secret'),
  ]);
});

afterAll(() => {
  delete process.env[KEY_ENV];
  fs.rmSync(root, { recursive: true, force: true });
});

describe('backup: archive and manifest', () => {
  it('writes one JSON per selected object at the layout path, stripped, and a manifest with cluster id, version and sha256s', async () => {
    const dir = freshDir('manifest');
    const report = await runBackupJob({
      resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns, ns2], excludeNameRegexps: ['^tmp-'], excludeNamespaces: [ns2] }],
      storage: { type: 'local', directory: dir },
    });
    expect(report).toMatchObject({ objects: 2, encrypted: false, alreadyExisted: false });
    expect(files(dir)).toEqual([report.name]);
    const out = await extract(path.join(dir, report.name));
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')) as BackupManifest;
    const kubeSystem = await getObject(admin, { apiVersion: 'v1', kind: 'Namespace', name: 'kube-system' });
    expect(manifest).toMatchObject({
      formatVersion: 1,
      clusterId: kubeSystem.metadata!.uid,
      kubernetesVersion: controlPlane().version,
      schedule: 'bk',
      name: report.name,
      encryption: null,
      counts: { configmaps: 2 },
    });
    expect(manifest.selection.resourceSets[0]).toMatchObject({ apiVersion: 'v1', kinds: ['ConfigMap'] });
    expect(manifest.objects.map((o) => o.path).sort()).toEqual([`configmaps.#v1/${ns}/cm-a.json`, `configmaps.#v1/${ns}/cm-b.json`]);
    for (const e of manifest.objects) {
      const bytes = fs.readFileSync(path.join(out, e.path));
      expect(e.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
      const live = await getObject(admin, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: e.name });
      expect(e).toMatchObject({ group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, namespace: ns, uid: live.metadata!.uid });
      const obj = JSON.parse(bytes.toString('utf8')) as KubeObject & { metadata: Record<string, unknown> };
      expect(obj).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: e.name, namespace: ns }, data: { k: e.name.slice(3) } });
      for (const f of STRIPPED_METADATA_FIELDS) expect(obj.metadata, f).not.toHaveProperty(f);
      expect(obj).not.toHaveProperty('status');
    }
    expect(manifest.objects.find((o) => o.name === 'cm-a')!.uid).toMatch(/^[0-9a-f-]{36}$/);
    // The tar's last entry is the manifest.
    const order: string[] = [];
    await tar.t({ file: path.join(dir, report.name), onReadEntry: (e) => void order.push(e.path) });
    expect(order.at(-1)).toBe('manifest.json');
  });

  it('refuses an unencrypted backup that selects Secrets before writing anything; allowPlaintextSecrets lets it through', async () => {
    const dir = freshDir('refuse');
    for (const resourceSets of [[{ apiVersion: 'v1', kinds: ['ConfigMap', 'Secret'], namespaces: [ns] }], [{ preset: 'namespace-apps', namespaces: [ns] }]]) {
      await expect(runBackupJob({ resourceSets, storage: { type: 'local', directory: dir } })).rejects.toMatchObject({
        code: 'PLAINTEXT_SECRETS',
        message: expect.stringMatching(/selects Secrets .*encryption\.key.*allowPlaintextSecrets: true; nothing was written/),
      });
    }
    expect(fs.existsSync(dir)).toBe(false);
    const ok = await runBackupJob({ resourceSets: [{ apiVersion: 'v1', kinds: ['Secret'], namespaces: [ns] }], storage: { type: 'local', directory: dir }, allowPlaintextSecrets: true });
    expect(ok.objects).toBe(1);
  });

  it('encrypts the whole archive; the reader needs the key; a flipped ciphertext byte fails verification', async () => {
    const dir = freshDir('enc');
    const report = await runBackupJob({
      resourceSets: [{ preset: 'namespace-apps', namespaces: [ns] }],
      storage: { type: 'local', directory: dir },
      encryption: { key: { env: KEY_ENV } },
    });
    expect(report.name).toMatch(/^bk-\d{8}T\d{6}Z\.tar\.gz\.enc$/);
    const bytes = fs.readFileSync(path.join(dir, report.name));
    expect(bytes.subarray(0, 8).toString()).toBe('CFLKENC1');
    expect(bytes.includes(Buffer.from('hunter2'))).toBe(false);
    expect(bytes.includes(Buffer.from('cm-a'))).toBe(false); // names are encrypted too
    const storage = localStorage({ directory: dir });
    const opened = await openBackup({ storage, name: report.name, keys: [key] });
    expect(opened.manifest.encryption).toEqual({ algorithm: 'AES-256-GCM-STREAM-64K', keyId: report.keyId });
    const names: string[] = [];
    let password = '';
    for await (const { entry, object } of opened.objects()) {
      names.push(`${entry.resource}/${entry.name}`);
      if (entry.resource === 'secrets') password = Buffer.from((object.data as Record<string, string>).password!, 'base64').toString();
    }
    expect(names).toEqual(expect.arrayContaining(['configmaps/cm-a', 'configmaps/cm-b', 'secrets/db', 'serviceaccounts/default']));
    expect(names).not.toContain('configmaps/cm-skip');
    expect(password).toBe('hunter2-very-secret');
    await expect(openBackup({ storage, name: report.name })).rejects.toMatchObject({ code: 'KEY' });
    await expect(openBackup({ storage, name: report.name, keys: [randomBytes(32)] })).rejects.toMatchObject({ code: 'KEY', message: expect.stringContaining(report.keyId!) });

    const tampered = freshDir('tampered');
    fs.mkdirSync(tampered);
    const flipped = Buffer.from(bytes);
    flipped[Math.floor(flipped.length / 2)]! ^= 0x01;
    fs.writeFileSync(path.join(tampered, report.name), flipped);
    await expect(openBackup({ storage: localStorage({ directory: tampered }), name: report.name, keys: [key] })).rejects.toMatchObject({
      code: 'VERIFY',
      message: expect.stringContaining('fails authentication'),
    });
    // Truncated by one byte.
    fs.writeFileSync(path.join(tampered, report.name), bytes.subarray(0, bytes.length - 1));
    await expect(openBackup({ storage: localStorage({ directory: tampered }), name: report.name, keys: [key] })).rejects.toMatchObject({ code: 'VERIFY' });
  });

  it('a plain archive with one object changed after the backup fails verification, naming the file', async () => {
    const dir = freshDir('plain');
    const report = await runBackupJob({ resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns] }], storage: { type: 'local', directory: dir } });
    const out = await extract(path.join(dir, report.name));
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')) as BackupManifest;
    const victim = path.join(out, `configmaps.#v1/${ns}/cm-b.json`);
    fs.writeFileSync(victim, fs.readFileSync(victim, 'utf8').replace('"k":"b"', '"k":"B"'));
    const tampered = freshDir('plain-tampered');
    fs.mkdirSync(tampered);
    await tar.c({ gzip: true, file: path.join(tampered, report.name), cwd: out }, [...manifest.objects.map((o) => o.path), 'manifest.json']);
    await expect(openBackup({ storage: localStorage({ directory: tampered }), name: report.name })).rejects.toMatchObject({
      code: 'VERIFY',
      message: expect.stringContaining(`configmaps.#v1/${ns}/cm-b.json does not match its manifest sha256`),
    });
    // The untouched repack passes: the check is about content, not bytes of the gzip.
    fs.writeFileSync(victim, fs.readFileSync(victim, 'utf8').replace('"k":"B"', '"k":"b"'));
    await tar.c({ gzip: true, file: path.join(tampered, report.name), cwd: out }, [...manifest.objects.map((o) => o.path), 'manifest.json']);
    await expect(openBackup({ storage: localStorage({ directory: tampered }), name: report.name })).resolves.toBeDefined();
  });
});

describe('backup: selection', () => {
  it('cluster-config preset: CRDs, non-system RBAC, namespaces but kube-*; CRD kinds through discovery with kindsRegexp', async () => {
    const group = `bk${randomBytes(3).toString('hex')}.example.com`;
    await installCrd(admin, { group, version: 'v1', kind: 'Widget', plural: 'widgets', scope: 'Namespaced' });
    await createObject(admin, { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1', namespace: ns }, spec: { size: 3 } });
    await createObject(admin, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `${group}-reader` }, rules: [] });
    const dir = freshDir('presets');
    const report = await runBackupJob({
      resourceSets: [{ preset: 'cluster-config' }, { apiVersion: `${group}/v1`, kindsRegexp: '^wid', namespaceRegexp: `^${ns}$` }],
      storage: { type: 'local', directory: dir },
    });
    const { manifest } = await openBackup({ storage: localStorage({ directory: dir }), name: report.name });
    const paths = manifest.objects.map((o) => o.path);
    expect(paths).toContain(`customresourcedefinitions.apiextensions.k8s.io#v1/widgets.${group}.json`);
    expect(paths).toContain(`clusterroles.rbac.authorization.k8s.io#v1/${group}-reader.json`);
    expect(paths).toContain(`namespaces.#v1/${ns}.json`);
    expect(paths).toContain(`widgets.${group}#v1/${ns}/w1.json`);
    expect(paths.filter((p) => p.startsWith('clusterroles.') && p.includes('#v1/system:'))).toEqual([]);
    expect(paths).not.toContain('namespaces.#v1/kube-system.json');
    expect(manifest.counts).toMatchObject({ [`widgets.${group}`]: 1 });
  });

  it('label and field selectors go to the server; names OR nameRegexp; excludeKinds; an object selected twice is stored once', async () => {
    const dir = freshDir('filters');
    const report = await runBackupJob({
      resourceSets: [
        { apiVersion: 'v1', kindsRegexp: '^(ConfigMap|Secret)$', excludeKinds: ['secrets'], namespaces: [ns], labelSelector: 'app=web' },
        { apiVersion: 'v1', kinds: ['configmaps'], namespaces: [ns], names: ['cm-b'], nameRegexp: '^tmp-', fieldSelector: 'metadata.name!=tmp-1' },
        { apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], names: ['cm-a'] },
      ],
      storage: { type: 'local', directory: dir },
    });
    const { manifest } = await openBackup({ storage: localStorage({ directory: dir }), name: report.name });
    expect(manifest.objects.map((o) => o.name).sort()).toEqual(['cm-a', 'cm-b']);
  });

  it('refuses a kind the server does not serve, naming the set and the kinds it has', async () => {
    await expect(runBackupJob({ resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'] }, { apiVersion: 'apps/v1', kinds: ['Deployment', 'Gizmo'] }], storage: { type: 'local', directory: freshDir('bad') } })).rejects.toMatchObject({
      code: 'INVALID',
      message: expect.stringMatching(/^resourceSets\[1\]\.kinds: the server serves no kind Gizmo in apps\/v1 \(kinds: .*Deployment/),
    });
  });
});

describe('backup: one archive per occurrence', () => {
  const job = (dir: string): Record<string, unknown> => ({ resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns] }], storage: { type: 'local', directory: dir } });
  const due = Date.parse('2026-03-01T04:00:00Z');

  it('a re-claim of the same occurrence (new fencing token) finds the published archive and writes none', async () => {
    const dir = freshDir('reclaim');
    const first = await runBackupJob(job(dir), backupContext({ dueMs: due, fencingToken: 1 }));
    const mtime = fs.statSync(path.join(dir, first.name)).mtimeMs;
    await createObject(admin, configMap(ns, 'cm-late', { k: 'late' }));
    const second = await runBackupJob(job(dir), backupContext({ dueMs: due, fencingToken: 2 }));
    expect(second).toMatchObject({ name: first.name, alreadyExisted: true, objects: first.objects });
    expect(files(dir)).toEqual([backupName({ schedule: 'bk', dueMs: due, manual: false, encrypted: false })]);
    expect(fs.statSync(path.join(dir, first.name)).mtimeMs).toBe(mtime);
    // Encryption switched on between two attempts: the occurrence still has its one (plain) archive.
    const third = await runBackupJob({ ...job(dir), encryption: { key: { env: KEY_ENV } } }, backupContext({ dueMs: due, fencingToken: 3 }));
    expect(third).toMatchObject({ name: first.name, alreadyExisted: true });
    expect(files(dir)).toHaveLength(1);
    await admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/configmaps/cm-late` });
  });

  it('two claimants running the same occurrence at once publish one archive', async () => {
    const dir = freshDir('concurrent');
    const [a, b] = await Promise.all([
      runBackupJob(job(dir), backupContext({ dueMs: due + 3_600_000, fencingToken: 1 })),
      runBackupJob(job(dir), backupContext({ dueMs: due + 3_600_000, fencingToken: 2 })),
    ]);
    expect(a.name).toBe(b.name);
    expect([a.alreadyExisted, b.alreadyExisted].sort()).toEqual([false, true]);
    expect(files(dir)).toEqual([a.name]);
  });

  it('an aborted run (claim lost) fails with ABORTED and leaves nothing behind', async () => {
    const dir = freshDir('abort');
    const ctx = backupContext({ dueMs: due, onLog: (msg) => msg === 'backup started' && ctx.abort.abort(new Error('claim lost')) });
    await expect(runBackupJob(job(dir), ctx)).rejects.toMatchObject({ code: 'ABORTED', message: expect.stringContaining('nothing was published') });
    expect(files(dir)).toEqual([]);
  });
});

describe('backup: retention', () => {
  it('keeps exactly the right files: 3 good, 1 failed, 1 good, plus a manual backup, another schedule and foreign files; removes a crashed temporary', async () => {
    const dir = freshDir('retention');
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const h = 3_600_000;
    const job = { resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], names: ['cm-a'] }], storage: { type: 'local', directory: dir }, retention: { count: 3 } };
    const name = (schedule: string, dueMs: number, manual = false): string => backupName({ schedule, dueMs, manual, encrypted: false });
    fs.mkdirSync(dir, { recursive: true });
    const foreign = ['keep-old.tar.gz', `${name('keep', t0 + h)}.bak`, `.${name('keep', t0 + 4 * h)}.partial-0123abcd`, 'notes.txt'];
    for (const f of foreign) fs.writeFileSync(path.join(dir, f), 'not a backup');
    // What a writer that crashed two days ago left: removed after the next success.
    const crashed = `.${name('keep', t0)}.partial-0123456789ab`;
    fs.writeFileSync(path.join(dir, crashed), 'half an archive');
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    fs.utimesSync(path.join(dir, crashed), twoDaysAgo, twoDaysAgo);

    for (const i of [1, 2, 3]) await runBackupJob(job, backupContext({ schedule: 'keep', dueMs: t0 + i * h }));
    expect(files(dir).filter((f) => /^keep-\d{8}T\d{6}Z\.tar\.gz$/.test(f))).toHaveLength(3);
    await runBackupJob(job, backupContext({ schedule: 'keep', dueMs: t0 + 3 * h + 1234, manual: true }));
    await runBackupJob({ ...job, retention: { count: 1 } }, backupContext({ schedule: 'other', dueMs: t0 }));
    // The 4th occurrence fails (its claim is lost mid-run): nothing is published and retention does not run.
    const failing = backupContext({ schedule: 'keep', dueMs: t0 + 4 * h, onLog: (msg) => msg === 'backup started' && failing.abort.abort(new Error('claim lost')) });
    await expect(runBackupJob(job, failing)).rejects.toMatchObject({ code: 'ABORTED' });
    expect(files(dir).filter((f) => /^keep-\d{8}T\d{6}Z\.tar\.gz$/.test(f))).toHaveLength(3);
    const fifth = await runBackupJob(job, backupContext({ schedule: 'keep', dueMs: t0 + 5 * h }));
    expect(fifth.retention).toEqual({ kept: 3, deleted: 1, deletedNames: [name('keep', t0 + h)] });

    expect(files(dir)).toEqual(
      [name('keep', t0 + 2 * h), name('keep', t0 + 3 * h), name('keep', t0 + 5 * h), name('keep', t0 + 3 * h + 1234, true), name('other', t0), ...foreign].sort(),
    );
  });
});
