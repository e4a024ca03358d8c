/**
 * KubeClient against the real API server: typed errors from real answers, the client-side QPS limit, and
 * 429 + Retry-After from the server's own API Priority and Fairness, which a test configures to give one
 * service account a priority level with almost no seats and `Reject` as its limit response.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createKubeClient,
  createObject,
  deleteObject,
  isK8sError,
  K8sError,
  loadKubeConfig,
  toK8sError,
  type KubeClient,
  type RetryEvent,
} from '../../k8s/index.js';
import { writeKubeconfig } from './control-plane.js';
import { configMap, createAll, grantRole, mintToken } from './fixtures.js';
import { clientFor, controlPlane, testNamespace, uniqueName } from './harness.js';

async function caught(p: Promise<unknown>): Promise<K8sError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof K8sError) return e;
    throw e;
  }
  throw new Error('expected a K8sError');
}

describe('KubeClient.request', () => {
  let admin: KubeClient;
  let ns: string;
  beforeAll(async () => {
    admin = clientFor('admin');
    ns = await testNamespace(admin);
  });

  it('sends requests with the kubeconfig credentials and parses JSON', async () => {
    const res = await admin.request<{ gitVersion: string }>({ method: 'GET', path: '/version' });
    expect(res.status).toBe(200);
    expect(res.body.gitVersion).toBe(controlPlane().version);
    expect(res.headers['content-type']).toContain('application/json');

    // a client-node KubeConfig made elsewhere works too (checked, not the localhost:8080 fallback)
    const kc = new KubeConfig();
    kc.loadFromFile(controlPlane().users.admin.kubeconfig);
    const fromKc = createKubeClient(kc);
    expect(fromKc.namespace).toBe('default');
    expect(fromKc.server).toBe(controlPlane().server);
    expect((await fromKc.request<{ gitVersion: string }>({ method: 'GET', path: '/version' })).body.gitVersion).toBe(controlPlane().version);
  });

  it('turns failures into K8sError with code, status, reason and the request line', async () => {
    const notFound = await caught(admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/absent` }));
    expect(notFound).toMatchObject({ code: 'NOT_FOUND', status: 404, reason: 'NotFound', request: `GET /api/v1/namespaces/${ns}/configmaps/absent` });
    expect(notFound.apiStatus?.details).toMatchObject({ name: 'absent', kind: 'configmaps' });

    const forbidden = await caught(clientFor('restricted').request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` }));
    expect(forbidden).toMatchObject({ code: 'FORBIDDEN', status: 403, reason: 'Forbidden' });
    expect(forbidden.message).toContain('User "cronflock-restricted" cannot list resource "configmaps"');

    const invalid = await caught(
      admin.request({ method: 'POST', path: `/api/v1/namespaces/${ns}/configmaps`, body: { metadata: { name: 'Not_A_Name' } } }),
    );
    expect(invalid).toMatchObject({ code: 'INVALID', status: 422, reason: 'Invalid' });
  });

  it('maps client-node 1.4 ApiException (JSON string body) from typed APIs with toK8sError', async () => {
    const core = admin.kubeConfig.makeApiClient(CoreV1Api);
    const e = await core.readNamespacedConfigMap({ name: 'absent', namespace: ns }).then(
      () => undefined,
      (err: unknown) => err,
    );
    const k = toK8sError(e, 'read configmap');
    expect(k).toMatchObject({ code: 'NOT_FOUND', status: 404, reason: 'NotFound' });
    expect(k.cause).toBe(e);
  });

  it('reports NETWORK, TIMEOUT and ABORTED without an HTTP answer', async () => {
    const cp = controlPlane();
    const loaded = loadKubeConfig({ kubeconfig: cp.users.admin.kubeconfig });
    // a server URL where nothing listens (port 1 on loopback)
    const file = writeKubeconfig(`${cp.dir}/closed.kubeconfig`, 'https://127.0.0.1:1', cp.caFile, cp.users.admin.token);
    const unreachable = createKubeClient(loadKubeConfig({ kubeconfig: file }));
    expect(await caught(unreachable.request({ method: 'GET', path: '/version' }))).toMatchObject({ code: 'NETWORK' });

    // a watch holds the answer open: a 300 ms timeout ends it
    const slow = createKubeClient(loaded, { timeoutMs: 300 });
    expect(
      await caught(slow.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps`, query: { watch: 'true', timeoutSeconds: 10 } })),
    ).toMatchObject({ code: 'TIMEOUT' });

    const ac = new AbortController();
    const pending = admin.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps`, query: { watch: 'true', timeoutSeconds: 10 }, signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    expect(await caught(pending)).toMatchObject({ code: 'ABORTED' });
  });

  it('holds requests to the client-side QPS (token bucket)', async () => {
    const limited = clientFor('admin', { qps: 5, burst: 1 });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 6 }, () => limited.request({ method: 'GET', path: '/version' })));
    const elapsed = performance.now() - t0;
    // 1 at once, then one every 200 ms: the sixth starts at 1000 ms
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(limited.stats.throttledMs).toBeGreaterThan(2500); // 200+400+600+800+1000 ms of waiting in all
  });
});

describe('429 Too Many Requests from API Priority and Fairness', () => {
  let admin: KubeClient;
  let ns: string;
  let kubeconfig: string;
  const level = uniqueName('cronflock-tiny');

  beforeAll(async () => {
    const cp = controlPlane();
    admin = clientFor('admin');
    ns = await testNamespace(admin, 'apf');
    const token = await mintToken(admin, ns, 'throttled');
    kubeconfig = writeKubeconfig(`${cp.dir}/${ns}-throttled.kubeconfig`, cp.server, cp.caFile, token, ns);
    await grantRole(admin, ns, 'lister', { kind: 'ServiceAccount', name: 'throttled' }, [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] },
    ]);
    // A priority level with 1 nominal share of the server's concurrency (ceil(600 * 1 / ~246) = 3 seats),
    // nothing borrowed, and Reject instead of queueing: excess requests get 429 at once.
    await createObject(admin, {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'PriorityLevelConfiguration',
      metadata: { name: level },
      spec: {
        type: 'Limited',
        limited: { nominalConcurrencyShares: 1, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } },
      },
    });
    await createObject(admin, {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: { name: level },
      spec: {
        priorityLevelConfiguration: { name: level },
        matchingPrecedence: 500, // before the suggested `service-accounts` schema (9000)
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: 'throttled', namespace: ns } }],
            resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }],
            nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
          },
        ],
      },
    });
    // 50 ConfigMaps of 2 KB: each list holds its seats long enough for parallel ones to collide.
    await createAll(admin, Array.from({ length: 50 }, (_, i) => configMap(ns, `cm-${i}`, { pad: 'x'.repeat(2000) })));
    // APF picks up new configuration asynchronously: wait until the FlowSchema reports itself in effect.
    for (let i = 0; i < 50; i++) {
      const fs = await admin.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
        method: 'GET',
        path: `/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/${level}`,
      });
      if (fs.body.status?.conditions?.some((c) => c.type === 'Dangling' && c.status === 'False')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  afterAll(async () => {
    await deleteObject(admin, { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', name: level });
    await deleteObject(admin, { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', name: level });
  });

  const burst = (c: KubeClient, n: number) =>
    Promise.allSettled(Array.from({ length: n }, () => c.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` })));

  it('without retries, surfaces TOO_MANY_REQUESTS with the Retry-After the server sent', async () => {
    const noRetry = createKubeClient(loadKubeConfig({ kubeconfig }), { qps: 1000, burst: 1000, maxRetries: 0 });
    let rejected: K8sError[] = [];
    for (let round = 0; round < 5 && rejected.length === 0; round++) {
      const results = await burst(noRetry, 30);
      rejected = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as K8sError] : []));
    }
    expect(rejected.length).toBeGreaterThan(0);
    for (const e of rejected) {
      expect(isK8sError(e, 'TOO_MANY_REQUESTS')).toBe(true);
      expect(e.status).toBe(429);
      // APF's Retry-After is whole seconds: 1 at first, doubled while its priority level keeps dropping requests
      // (k8s.io/apiserver util/flowcontrol/dropped_requests_tracker.go)
      expect(e.retryAfterMs).toBeGreaterThanOrEqual(1000);
      expect((e.retryAfterMs ?? 1) % 1000).toBe(0);
    }
  });

  it('with retries, waits as long as Retry-After says and every request succeeds', async () => {
    const events: RetryEvent[] = [];
    const retrying = createKubeClient(loadKubeConfig({ kubeconfig }), {
      qps: 1000,
      burst: 1000,
      maxRetries: 10,
      maxRetryAfterMs: 10_000,
      onRetry: (e) => events.push(e),
    });
    for (let round = 0; round < 5 && events.length === 0; round++) {
      const t0 = performance.now();
      const results = await burst(retrying, 30);
      expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
      if (events.length > 0) expect(performance.now() - t0).toBeGreaterThanOrEqual(Math.min(...events.map((e) => e.waitMs)));
    }
    expect(events.length).toBeGreaterThan(0);
    expect(retrying.stats.retries).toBe(events.length);
    for (const e of events) {
      expect(e.status).toBe(429);
      expect(e.retryAfterMs).toBeGreaterThanOrEqual(1000);
      expect(e.waitMs).toBe(Math.min(e.retryAfterMs ?? 0, 10_000));
    }
  });

  it('caps a Retry-After wait at maxRetryAfterMs', async () => {
    const events: RetryEvent[] = [];
    const capped = createKubeClient(loadKubeConfig({ kubeconfig }), {
      qps: 1000,
      burst: 1000,
      maxRetries: 10,
      maxRetryAfterMs: 50,
      onRetry: (e) => events.push(e),
    });
    for (let round = 0; round < 5 && events.length === 0; round++) await burst(capped, 30);
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) {
      expect(e).toMatchObject({ status: 429, waitMs: 50 });
      expect(e.retryAfterMs).toBeGreaterThanOrEqual(1000);
    }
  });

  it('counts requests per client', async () => {
    const c = createKubeClient(loadKubeConfig({ kubeconfig }), { qps: 1000, burst: 1000 });
    await c.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps/cm-1` });
    expect(c.stats.requests).toBe(1);
  });
});
