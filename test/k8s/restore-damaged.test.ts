/**
 * `cronflock restore` (the built CLI, as users run it; needs dist/) on crafted archives (test/support/archives.ts)
 * against the real kube-apiserver and a real redis-server: every damaged archive — an object file that is not
 * what its manifest entry says, a manifest that breaks its schema or is not JSON, an entry whose resource is
 * not its kind's, malformed owner references — ends as "damaged archive <name> in <dir>: <what>; nothing was
 * applied" with exit 2, never a stack trace, and nothing reaches the cluster. A 1 GiB entry in a 1.8 MB tar.gz
 * is refused from its header with the process's peak RSS bounded (measured by the kernel: a preload prints
 * `process.resourceUsage().maxRSS` at exit). Prune from a plain archive is refused unless allowed.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackupManifest } from '../../jobs/backup/format.js';
import type { RestoreReport } from '../../jobs/restore/index.js';
import { getObject, listAll, type KubeObject } from '../../k8s/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { CONFIGMAP, craft, replaceBody, writeBomb, writeCrafted, type Crafted } from '../support/archives.js';
import { BIN, ROOT } from '../support/replica.js';
import { configMap, createAll } from './fixtures.js';
import { clientFor, controlPlane, testNamespace, uniqueName } from './harness.js';

let redisServer: RedisServerProcess;
let dir: string;
const PEAK = join(ROOT, 'test/support/peak-rss.mjs');

beforeAll(async () => {
  redisServer = await RedisServerProcess.start();
  dir = mkdtempSync(join(tmpdir(), 'cronflock-damaged-'));
});
afterAll(async () => {
  await redisServer?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Peak resident set of the process, MB (the kernel's high-water mark). */
  peakRssMb: number;
}

/** `cronflock restore <args>` as its own process. */
function restoreCli(args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', PEAK, BIN, 'restore', ...args], { cwd: ROOT, env: { ...process.env, REDIS_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.once('exit', (code) => {
      const kb = Number(/peak-rss-kb (\d+)/.exec(stderr)?.[1] ?? NaN);
      resolve({ code, stdout, stderr: stderr.replace(/peak-rss-kb \d+\n/, ''), peakRssMb: Math.round(kb / 1024) });
    });
  });
}

const NAME = 'shop-20261130T020000Z.tar.gz';
const admin = () => clientFor('admin');
const common = (): string[] => ['--kubeconfig', controlPlane().users.admin.kubeconfig, '--redis', redisServer.url, '--namespace', 'damaged'];

/** Writes `c` as NAME in a fresh directory; returns the archive's path. */
async function archive(c: Crafted): Promise<string> {
  const d = join(dir, uniqueName('a'));
  mkdirSync(d);
  await writeCrafted(join(d, NAME), c);
  return join(d, NAME);
}

async function configMapNames(ns: string): Promise<string[]> {
  return (await listAll<KubeObject>(admin(), { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns })).items.map((o) => o.metadata!.name!).filter((n) => n !== 'kube-root-ca.crt');
}

describe('cronflock restore: damaged archives', () => {
  it('each kind of damage: exit 2, "damaged archive … : <what>; nothing was applied", nothing applied', async () => {
    const ns = await testNamespace(admin(), 'rs-dmg');
    const crb = uniqueName('crb');
    const good = (): Crafted & { manifest: BackupManifest } =>
      craft(NAME, [
        { info: CONFIGMAP, object: { metadata: { name: 'a', namespace: ns }, data: { k: 'a' } } },
        { info: CONFIGMAP, object: { metadata: { name: 'b', namespace: ns }, data: { k: 'b' } } },
      ]);
    const A = `configmaps.#v1/${ns}/a.json`;
    const cm = (over: Record<string, unknown>, md: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: ns, ...md }, data: { k: 'a' }, ...over });
    const cases: [string, (c: Crafted & { manifest: BackupManifest }) => Crafted, RegExp][] = [
      [
        'a ConfigMap entry whose file (right sha256) holds a ClusterRoleBinding',
        (c) => {
          replaceBody(c, A, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: crb }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'Group', name: 'system:authenticated', apiGroup: 'rbac.authorization.k8s.io' }] });
          return c;
        },
        new RegExp(`${A} holds rbac\\.authorization\\.k8s\\.io/v1 ClusterRoleBinding ${crb}, but its manifest entry objects\\[0\\] says v1 ConfigMap ${ns}/a \\(its apiVersion differs\\)`),
      ],
      ['kind', (c) => (replaceBody(c, A, cm({ kind: 'Secret' })), c), /holds v1 Secret .*\(its kind differs\)/],
      ['apiVersion', (c) => (replaceBody(c, A, cm({ apiVersion: 'v2' })), c), /holds v2 ConfigMap .*\(its apiVersion differs\)/],
      ['name', (c) => (replaceBody(c, A, cm({}, { name: 'c' })), c), new RegExp(`holds v1 ConfigMap ${ns}/c, .*\\(its name differs\\)`)],
      ['namespace', (c) => (replaceBody(c, A, cm({}, { namespace: 'default' })), c), /holds v1 ConfigMap default\/a, .*\(its namespace differs\)/],
      [
        'path',
        (c) => {
          c.files[0]!.path = `configmaps.#v1/${ns}/zzz.json`;
          c.manifest.objects[0]!.path = `configmaps.#v1/${ns}/zzz.json`;
          return c;
        },
        new RegExp(`manifest\\.json: objects\\[0\\]\\.path: is "configmaps\\.#v1/${ns}/zzz\\.json"; this entry's file is ${A}`),
      ],
      ['namespace ".."', (c) => ((c.manifest.objects[0]!.namespace = '..'), c), /manifest\.json: objects\[0\]\.namespace: must be a DNS-1123 label/],
      ['objects: [null]', (c) => (((c.manifest as unknown as { objects: unknown[] }).objects = [null]), c), /manifest\.json: objects\[0\]: Invalid input: expected object, received null/],
      ['a manifest that is not JSON', (c) => ({ files: c.files, manifest: Buffer.from('{"formatVersion": 1, "objects": [') }), /manifest\.json is not JSON/],
      [
        "an entry whose resource is not its kind's (prune would delete the object it restores)",
        (c) => {
          const e = c.manifest.objects[0]!;
          e.resource = 'secrets';
          e.path = `secrets.#v1/${ns}/a.json`;
          c.files[0]!.path = e.path;
          c.manifest.counts = { configmaps: 1, secrets: 1 };
          return c;
        },
        new RegExp(`secrets\\.#v1/${ns}/a\\.json: its manifest entry says ConfigMap \\(v1\\) is resource secrets, namespaced; the target cluster serves it as configmaps, namespaced`),
      ],
      ['malformed owner references', (c) => (replaceBody(c, A, cm({}, { ownerReferences: [null] })), c), new RegExp(`${A}: metadata\\.ownerReferences\\[0\\]: Invalid input: expected object, received null`)],
    ];
    for (const [what, damage, message] of cases) {
      const file = await archive(damage(good()));
      const r = await restoreCli([file, ...common()]);
      expect(r.code, `${what}: ${r.stderr}`).toBe(2);
      expect(r.stderr, what).toMatch(new RegExp(`^cronflock: damaged archive ${NAME.replaceAll('.', '\\.')}( in ${dir}/[^ ]+/)?: `));
      expect(r.stderr, what).toMatch(message);
      expect(r.stderr, what).toMatch(/; nothing was applied\n$/);
      expect(r.stderr, what).not.toMatch(/\n\s+at /); // no stack trace
      expect(r.stdout, what).toBe('');
    }
    expect(await configMapNames(ns)).toEqual([]);
    await expect(getObject(admin(), { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', name: crb })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // The same archive undamaged restores (the cases fail for their damage, not for something else).
    const ok = await restoreCli([await archive(good()), ...common(), '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect((JSON.parse(ok.stdout) as RestoreReport).done).toEqual({ ConfigMap: { create: 2, update: 0, unchanged: 0, delete: 0 } });
  }, 240_000);

  it('a 1 GiB entry in a 1.8 MB tar.gz: --dry-run refuses it from its header, with peak RSS far below the entry', async () => {
    const d = join(dir, 'bomb');
    mkdirSync(d);
    const t0 = performance.now();
    await writeBomb(join(d, NAME), [{ path: 'configmaps.#v1/shop/a.json', sizeBytes: 1024 ** 3 }], { sparse: true });
    console.info(`1 GiB bomb written in ${Math.round(performance.now() - t0)} ms`);
    const r = await restoreCli([join(d, NAME), '--dry-run', '--kubeconfig', controlPlane().users.admin.kubeconfig]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `cronflock: damaged archive ${NAME} in ${d}/: entry configmaps.#v1/shop/a.json is 1 GiB, more than the 8 MiB a file may be (raise limits.maxObjectSize (cronflock restore: --limit maxObjectSize=<value>) if this backup is genuine); nothing was applied\n`,
    );
    console.info(`restore --dry-run of the 1 GiB entry: peak RSS ${r.peakRssMb} MB`);
    // Node and the loaded modules are ~150 MB; buffering the entry was 2.2 GB. A generous bound.
    expect(r.peakRssMb).toBeGreaterThan(0);
    expect(r.peakRssMb).toBeLessThan(400);
  }, 120_000);

  it('prune from a plain archive is refused (its selection is unauthenticated) unless allowed', async () => {
    const ns = await testNamespace(admin(), 'rs-plain');
    await createAll(admin(), [configMap(ns, 'stray', {}, { app: 'p' })]);
    const c = craft(NAME, [{ info: CONFIGMAP, object: { metadata: { name: 'a', namespace: ns, labels: { app: 'p' } }, data: { k: 'a' } } }], {
      resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns], labelSelector: 'app=p' }],
    });
    const file = await archive(c);
    const refused = await restoreCli([file, ...common(), '--prune']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/backup shop-20261130T020000Z\.tar\.gz is a plain archive: .*not authenticated.*allowUnauthenticatedPrune: true, --allow-unauthenticated-prune\); nothing was applied/);
    expect(await configMapNames(ns)).toEqual(['stray']);
    const allowed = await restoreCli([file, ...common(), '--prune', '--allow-unauthenticated-prune', '--json']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect((JSON.parse(allowed.stdout) as RestoreReport).done).toEqual({ ConfigMap: { create: 1, update: 0, unchanged: 0, delete: 1 } });
    expect(await configMapNames(ns)).toEqual(['a']);
  }, 120_000);
});
