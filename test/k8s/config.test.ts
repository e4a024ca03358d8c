/**
 * Kubeconfig loading against the real API server: every rule of loadKubeConfig ends in a request that the
 * server authenticates, and SelfSubjectReview tells who the server thinks we are.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertUsableKubeConfig,
  createKubeClient,
  isK8sError,
  isLocalhostFallback,
  loadKubeConfig,
  type KubeClient,
} from '../../k8s/index.js';
import { mintToken } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

/** Who the server says the client is (authentication.k8s.io/v1 SelfSubjectReview). */
async function whoAmI(client: KubeClient): Promise<{ username: string; groups: string[] }> {
  const res = await client.request<{ status: { userInfo: { username: string; groups?: string[] } } }>({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return { username: res.body.status.userInfo.username, groups: res.body.status.userInfo.groups ?? [] };
}

let tmp: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cronflock-kubeconfig-'));
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A kubeconfig with one context per user, named `<user>-ctx`; `current` is the current-context. */
function multiUserKubeconfig(file: string, current: string, users: ('admin' | 'restricted')[]): string {
  const cp = controlPlane();
  fs.writeFileSync(
    file,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: cp.server, 'certificate-authority': cp.caFile } }],
      users: users.map((u) => ({ name: u, user: { token: cp.users[u].token } })),
      contexts: users.map((u) => ({ name: `${u}-ctx`, context: { cluster: 'test', user: u, namespace: `ns-of-${u}` } })),
      'current-context': current,
    }),
  );
  return file;
}

describe('loadKubeConfig', () => {
  it('loads an explicit kubeconfig and the server authenticates its user', async () => {
    const cp = controlPlane();
    const loaded = loadKubeConfig({ kubeconfig: cp.users.admin.kubeconfig, env: {} });
    expect(loaded).toMatchObject({ source: 'explicit', files: [cp.users.admin.kubeconfig], server: cp.server, namespace: 'default' });
    expect(await whoAmI(createKubeClient(loaded))).toMatchObject({ username: 'cronflock-admin', groups: expect.arrayContaining(['system:masters']) });
  });

  it('follows KUBECONFIG: missing files skipped, first file wins, explicit context chosen', async () => {
    const a = multiUserKubeconfig(path.join(tmp, 'a.yaml'), 'restricted-ctx', ['restricted']);
    const b = multiUserKubeconfig(path.join(tmp, 'b.yaml'), 'admin-ctx', ['admin', 'restricted']);
    const env = { KUBECONFIG: [path.join(tmp, 'missing.yaml'), a, b].join(path.delimiter), HOME: tmp };
    const first = loadKubeConfig({ env });
    expect(first).toMatchObject({ source: 'KUBECONFIG', files: [a, b], context: 'restricted-ctx', namespace: 'ns-of-restricted' });
    expect((await whoAmI(createKubeClient(first))).username).toBe('cronflock-restricted');

    const chosen = loadKubeConfig({ env, context: 'admin-ctx' });
    expect(chosen).toMatchObject({ context: 'admin-ctx', user: 'admin', namespace: 'ns-of-admin' });
    expect((await whoAmI(createKubeClient(chosen))).username).toBe('cronflock-admin');
  });

  it('falls back to ~/.kube/config', async () => {
    const home = path.join(tmp, 'home');
    fs.mkdirSync(path.join(home, '.kube'), { recursive: true });
    multiUserKubeconfig(path.join(home, '.kube', 'config'), 'admin-ctx', ['admin']);
    const loaded = loadKubeConfig({ env: { HOME: home }, serviceAccountDir: path.join(tmp, 'no-sa') });
    expect(loaded.source).toBe('home');
    expect((await whoAmI(createKubeClient(loaded))).username).toBe('cronflock-admin');
  });

  it('uses the pod service account in-cluster (token from TokenRequest, CA, namespace file)', async () => {
    const cp = controlPlane();
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'incluster');
    const saDir = path.join(tmp, 'sa', 'serviceaccount');
    fs.mkdirSync(saDir, { recursive: true });
    fs.writeFileSync(path.join(saDir, 'token'), await mintToken(admin, ns, 'cleaner'));
    fs.copyFileSync(cp.caFile, path.join(saDir, 'ca.crt'));
    fs.writeFileSync(path.join(saDir, 'namespace'), ns);
    const port = new URL(cp.server).port;
    const env = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port, HOME: path.join(tmp, 'empty-home') };

    const auto = loadKubeConfig({ env, serviceAccountDir: saDir });
    expect(auto).toMatchObject({ source: 'in-cluster', namespace: ns, server: cp.server });
    expect(await whoAmI(createKubeClient(auto))).toMatchObject({
      username: `system:serviceaccount:${ns}:cleaner`,
      groups: expect.arrayContaining(['system:serviceaccounts', `system:serviceaccounts:${ns}`]),
    });
    // mode in-cluster ignores a kubeconfig that would otherwise win
    const forced = loadKubeConfig({ env: { ...env, KUBECONFIG: cp.users.admin.kubeconfig }, serviceAccountDir: saDir, mode: 'in-cluster' });
    expect(forced.source).toBe('in-cluster');
  });

  it('refuses, with a clear error, where client-node would silently use http://localhost:8080', () => {
    const env = { HOME: path.join(tmp, 'empty-home') };
    const err = (() => {
      try {
        loadKubeConfig({ env, serviceAccountDir: path.join(tmp, 'no-sa') });
      } catch (e) {
        return e;
      }
    })();
    expect(isK8sError(err, 'KUBECONFIG_NOT_FOUND')).toBe(true);
    expect((err as Error).message).toMatch(/KUBECONFIG \(unset\).*\.kube\/config \(no such file\).*in-cluster \(KUBERNETES_SERVICE_HOST/);
    expect((err as Error).message).toContain('localhost:8080');
    expect(() => loadKubeConfig({ env, mode: 'in-cluster', serviceAccountDir: path.join(tmp, 'no-sa') })).toThrow(
      expect.objectContaining({ code: 'IN_CLUSTER_UNAVAILABLE' }),
    );
  });

  it("detects client-node's own localhost:8080 fallback and refuses to make a client of it", () => {
    const saved = { KUBECONFIG: process.env.KUBECONFIG, HOME: process.env.HOME };
    delete process.env.KUBECONFIG;
    process.env.HOME = path.join(tmp, 'empty-home');
    const kc = new KubeConfig();
    try {
      kc.loadFromDefault();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(kc.getCurrentCluster()?.server).toBe('http://localhost:8080'); // what client-node does silently
    expect(isLocalhostFallback(kc)).toBe(true);
    expect(() => createKubeClient(kc)).toThrow(expect.objectContaining({ code: 'KUBECONFIG_INVALID', message: expect.stringContaining('localhost:8080') }));

    const real = new KubeConfig();
    real.loadFromFile(controlPlane().users.admin.kubeconfig);
    expect(isLocalhostFallback(real)).toBe(false);
    expect(assertUsableKubeConfig(real)).toBe(real);
  });

  it('reports unknown contexts, broken files and dangling references', () => {
    const cp = controlPlane();
    expect(() => loadKubeConfig({ kubeconfig: cp.users.admin.kubeconfig, context: 'nope' })).toThrow(
      expect.objectContaining({ code: 'CONTEXT_NOT_FOUND', message: expect.stringContaining('cronflock-test') }),
    );
    expect(() => loadKubeConfig({ kubeconfig: path.join(tmp, 'absent') })).toThrow(expect.objectContaining({ code: 'KUBECONFIG_NOT_FOUND' }));
    const broken = path.join(tmp, 'broken.yaml');
    fs.writeFileSync(broken, 'clusters: [unclosed');
    expect(() => loadKubeConfig({ kubeconfig: broken })).toThrow(expect.objectContaining({ code: 'KUBECONFIG_INVALID' }));
    const dangling = path.join(tmp, 'dangling.yaml');
    fs.writeFileSync(dangling, toYaml({ contexts: [{ name: 'c', context: { cluster: 'gone', user: 'u' } }], 'current-context': 'c' }));
    expect(() => loadKubeConfig({ kubeconfig: dangling })).toThrow(
      expect.objectContaining({ code: 'KUBECONFIG_INVALID', message: expect.stringContaining('cluster "gone"') }),
    );
    const noCurrent = path.join(tmp, 'no-current.yaml');
    fs.writeFileSync(noCurrent, toYaml({ contexts: [{ name: 'c', context: { cluster: 'x', user: 'u' } }] }));
    expect(() => loadKubeConfig({ kubeconfig: noCurrent })).toThrow(expect.objectContaining({ code: 'KUBECONFIG_INVALID' }));
  });
});
