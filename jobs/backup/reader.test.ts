/**
 * The archive reader on crafted archives (test/support/archives.ts): nothing read from an archive is used
 * before it is checked. Each refusal is a BackupError `VERIFY` or `LIMIT` "damaged archive <name>: <what>"
 * naming the file and field; sizes are refused from the tar header, before their bytes are read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONFIGMAP, craft, replaceBody, sha256, writeBomb, writeCrafted, type Crafted } from '../../test/support/archives.js';
import type { BackupManifest } from './format.js';
import { DEFAULT_LIMITS, archiveLimits } from './limits.js';
import { MAX_OBJECT_DEPTH, openBackup } from './reader.js';
import { localStorage } from './storage.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cronflock-reader-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const NAME = 'nightly-20261130T020000Z.tar.gz';
const CRB = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false };

function shop(): Crafted & { manifest: BackupManifest } {
  return craft(NAME, [
    { info: CONFIGMAP, object: { metadata: { name: 'a', namespace: 'shop' }, data: { k: 'v' } } },
    { info: CONFIGMAP, object: { metadata: { name: 'b', namespace: 'shop' }, data: { k: 'w' } } },
  ]);
}

let n = 0;
/** Writes `c` under NAME in a fresh directory and opens it. */
async function open(c: Crafted, limits = DEFAULT_LIMITS, name = NAME) {
  const d = path.join(dir, String(n++));
  fs.mkdirSync(d);
  await writeCrafted(path.join(d, name), c);
  return openBackup({ storage: localStorage({ directory: d }), name, limits });
}

/** The error `open` rejects with. */
async function refusal(c: Crafted, limits = DEFAULT_LIMITS, name = NAME): Promise<{ code: string; message: string }> {
  return (await open(c, limits, name).then(
    () => {
      throw new Error('opened');
    },
    (e: unknown) => e,
  )) as { code: string; message: string };
}

describe('reader: a well-formed archive', () => {
  it('opens, and yields each object once with its entry; it is not authenticated (plain)', async () => {
    const opened = await open(shop());
    expect(opened.authenticated).toBe(false);
    const got: string[] = [];
    for await (const { entry, object } of opened.objects()) got.push(`${entry.path} ${(object.data as { k: string }).k}`);
    expect(got).toEqual(['configmaps.#v1/shop/a.json v', 'configmaps.#v1/shop/b.json w']);
  });
});

describe('reader: an object file must hold what its manifest entry says', () => {
  const A = 'configmaps.#v1/shop/a.json';
  const body = (over: Record<string, unknown> = {}, md: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'shop', ...md }, data: { k: 'v' }, ...over });

  it('kind: a ConfigMap entry whose file (with its right sha256) holds a ClusterRoleBinding', async () => {
    const c = shop();
    replaceBody(c, A, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'a' }, roleRef: { kind: 'ClusterRole', name: 'cluster-admin' } });
    expect(await refusal(c)).toMatchObject({
      code: 'VERIFY',
      message: `damaged archive ${NAME}: ${A} holds rbac.authorization.k8s.io/v1 ClusterRoleBinding a, but its manifest entry objects[0] says v1 ConfigMap shop/a (its apiVersion differs)`,
    });
  });

  it.each([
    ['apiVersion', body({ apiVersion: 'v2' }), 'v2 ConfigMap shop/a'],
    ['kind', body({ kind: 'Secret' }), 'v1 Secret shop/a'],
    ['name', body({}, { name: 'other' }), 'v1 ConfigMap shop/other'],
    ['namespace', body({}, { namespace: 'kube-system' }), 'v1 ConfigMap kube-system/a'],
    ['namespace', body({}, { namespace: undefined }), 'v1 ConfigMap a'],
  ])('%s differs: refused, naming the file, both identities and the field', async (field, b, holds) => {
    const c = shop();
    replaceBody(c, A, b);
    const e = await refusal(c);
    expect(e.code).toBe('VERIFY');
    expect(e.message).toBe(`damaged archive ${NAME}: ${A} holds ${holds}, but its manifest entry objects[0] says v1 ConfigMap shop/a (its ${field} differs)`);
  });

  it('a cluster-scoped entry whose file names a namespace', async () => {
    const c = craft(NAME, [{ info: CRB, object: { metadata: { name: 'x' }, roleRef: {} } }]);
    replaceBody(c, 'clusterrolebindings.rbac.authorization.k8s.io#v1/x.json', { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'x', namespace: 'shop' } });
    expect((await refusal(c)).message).toMatch(/holds .* shop\/x, but its manifest entry objects\[0\] says .* x \(its namespace differs\)/);
  });

  it('path: an entry whose path is not its layout path (file and entry moved together)', async () => {
    const c = shop();
    c.files[0]!.path = 'configmaps.#v1/other/a.json';
    c.manifest.objects[0]!.path = 'configmaps.#v1/other/a.json';
    expect(await refusal(c)).toMatchObject({ code: 'VERIFY', message: `damaged archive ${NAME}: manifest.json: objects[0].path: is "configmaps.#v1/other/a.json"; this entry's file is ${A}` });
  });

  it('a body that is not a JSON object, or nested deeper than the limit', async () => {
    const c = shop();
    c.files[0]!.data = Buffer.from('[1,2]');
    c.manifest.objects[0]!.sha256 = sha256(c.files[0]!.data);
    expect((await refusal(c)).message).toBe(`damaged archive ${NAME}: ${A} is not a JSON object`);
    const d = shop();
    const deep = MAX_OBJECT_DEPTH + 5;
    replaceBody(d, A, JSON.parse(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop"},"x":${'{"a":'.repeat(deep)}1${'}'.repeat(deep)}}`));
    expect(await refusal(d)).toMatchObject({ code: 'LIMIT', message: `damaged archive ${NAME}: ${A} is nested more than ${MAX_OBJECT_DEPTH} levels deep` });
  });
});

describe('reader: the manifest is validated whole, with the path to the bad field', () => {
  it('namespace ".."', async () => {
    const c = shop();
    c.manifest.objects[0]!.namespace = '..';
    expect(await refusal(c)).toMatchObject({ code: 'VERIFY', message: expect.stringMatching(new RegExp(`^damaged archive ${NAME}: manifest\\.json: objects\\[0\\]\\.namespace: must be a DNS-1123 label`)) });
  });

  it('objects: [null]', async () => {
    const c = shop();
    (c.manifest as unknown as { objects: unknown[] }).objects = [null];
    expect((await refusal(c)).message).toMatch(/^damaged archive .*: manifest\.json: objects\[0\]: Invalid input: expected object, received null/);
  });

  it('not JSON; not an object; a newer format', async () => {
    expect(await refusal({ ...shop(), manifest: Buffer.from('{"formatVersion": 1,') })).toMatchObject({ code: 'VERIFY', message: `damaged archive ${NAME}: manifest.json is not JSON` });
    expect((await refusal({ ...shop(), manifest: Buffer.from('null') })).message).toBe(`damaged archive ${NAME}: manifest.json: (top level): Invalid input: expected object, received null`);
    const c = shop();
    c.manifest.formatVersion = 2;
    expect((await refusal(c)).message).toMatch(/format version 2 is newer than this cronflock reads \(1\); upgrade cronflock/);
  });

  it('a selection regexp prune would compile, a duplicated path or uid, counts that are not the entries', async () => {
    const c = shop();
    c.manifest.selection = { resourceSets: [{ apiVersion: 'v1', nameRegexp: '(' }] };
    c.manifest.objects[1]!.uid = c.manifest.objects[0]!.uid;
    c.manifest.counts = { configmaps: 3 };
    expect((await refusal(c)).message).toBe(
      `damaged archive ${NAME}: manifest.json: selection.resourceSets[0].nameRegexp: is not a valid regular expression; objects[1].uid: uid-0 is also the uid of objects[0]; counts.configmaps: is 3; the objects hold 2`,
    );
  });

  it("a file renamed to another backup's name (e.g. to look newer) is refused: the manifest names it", async () => {
    const e = await refusal(shop(), DEFAULT_LIMITS, 'nightly-20261201T020000Z.tar.gz');
    expect(e.message).toBe(
      `damaged archive nightly-20261201T020000Z.tar.gz: the manifest says this is ${NAME} of schedule nightly, not nightly-20261201T020000Z.tar.gz (renamed? restore it under its own name)`,
    );
  });
});

describe('reader: sizes are bounded before memory or time is spent', () => {
  it('an entry over maxObjectSize is refused from its header: its 64 MiB of data are never read', async () => {
    const d = path.join(dir, 'bomb');
    fs.mkdirSync(d);
    await writeBomb(path.join(d, NAME), [{ path: 'configmaps.#v1/shop/a.json', sizeBytes: 64 * 1024 * 1024 }]);
    const t0 = performance.now();
    const e = await openBackup({ storage: localStorage({ directory: d }), name: NAME }).catch((x: unknown) => x);
    expect(e).toMatchObject({
      code: 'LIMIT',
      message: `damaged archive ${NAME}: entry configmaps.#v1/shop/a.json is 64 MiB, more than the 8 MiB a file may be (raise limits.maxObjectSize (cronflock restore: --limit maxObjectSize=<value>) if this backup is genuine)`,
    });
    // Reading 64 MiB through gunzip takes a while; refusing from the header does not (a generous bound).
    expect(performance.now() - t0).toBeLessThan(2000);
    // With the limit raised, it is read (and then refused for what it is: not JSON).
    await expect(openBackup({ storage: localStorage({ directory: d }), name: NAME, limits: archiveLimits({ maxObjectSize: 128 * 1024 * 1024, maxCompressionRatio: 2000 }) })).rejects.toMatchObject({
      code: 'VERIFY',
      message: `damaged archive ${NAME}: configmaps.#v1/shop/a.json is not JSON`,
    });
  });

  it('the manifest, the number of entries and the declared total have their own limits', async () => {
    expect(await refusal(shop(), archiveLimits({ maxManifestSize: 100 }))).toMatchObject({ code: 'LIMIT', message: expect.stringMatching(/entry manifest\.json is .* more than the 100 bytes a manifest may be \(raise limits\.maxManifestSize/) });
    expect(await refusal(shop(), archiveLimits({ maxObjects: 2 }))).toMatchObject({ code: 'LIMIT', message: `damaged archive ${NAME}: more than 2 entries (raise limits.maxObjects (cronflock restore: --limit maxObjects=<value>) if this backup is genuine)` });
    expect(await refusal(shop(), archiveLimits({ maxTotalSize: 2048 }))).toMatchObject({ code: 'LIMIT', message: expect.stringMatching(/unpacks to more than 2 KiB \(raise limits\.maxTotalSize/) });
  });

  it('the sizes the headers declare add up past maxTotalSize: refused at the header that passes it, before its data', async () => {
    const d = path.join(dir, 'declared');
    fs.mkdirSync(d);
    await writeBomb(path.join(d, NAME), [6, 6].map((mb, i) => ({ path: `configmaps.#v1/shop/c${i}.json`, sizeBytes: mb * 1024 * 1024 })), { json: true });
    await expect(openBackup({ storage: localStorage({ directory: d }), name: NAME, limits: archiveLimits({ maxTotalSize: 10 * 1024 * 1024 }) })).rejects.toMatchObject({
      code: 'LIMIT',
      message: `damaged archive ${NAME}: its entries add up to more than 10 MiB (at configmaps.#v1/shop/c1.json; raise limits.maxTotalSize (cronflock restore: --limit maxTotalSize=<value>) if this backup is genuine)`,
    });
  });

  it('a decompression bomb of entries each within maxObjectSize is stopped by the ratio once 64 MiB came out', async () => {
    const d = path.join(dir, 'ratio');
    fs.mkdirSync(d);
    await writeBomb(path.join(d, NAME), Array.from({ length: 12 }, (_, i) => ({ path: `configmaps.#v1/shop/c${i}.json`, sizeBytes: 8 * 1024 * 1024 })), { json: true });
    await expect(openBackup({ storage: localStorage({ directory: d }), name: NAME })).rejects.toMatchObject({
      code: 'LIMIT',
      message: expect.stringMatching(/unpacked to more than 64\.\d MiB, over 200 times \(a decompression bomb\? raise limits\.maxCompressionRatio/),
    });
  });
});
