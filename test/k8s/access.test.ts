/** SelfSubjectAccessReview against the real API server's RBAC authorizer, checked against real requests. */
import { beforeAll, describe, expect, it } from 'vitest';
import { canI, createObject, isK8sError, listAll, type KubeClient } from '../../k8s/index.js';
import { configMap, grantRole } from './fixtures.js';
import { clientFor, testNamespace } from './harness.js';

describe('canI (SelfSubjectAccessReview)', () => {
  let admin: KubeClient;
  let restricted: KubeClient;
  let ns: string;
  beforeAll(async () => {
    admin = clientFor('admin');
    restricted = clientFor('restricted');
    ns = await testNamespace(admin, 'rbac');
    await createObject(admin, configMap(ns, 'c'));
  });

  it('allows system:masters everything', async () => {
    expect(await canI(admin, { verb: 'delete', resource: 'pods', namespace: ns })).toMatchObject({ allowed: true, denied: false });
    expect((await canI(admin, { verb: 'delete', resource: 'jobs', group: 'batch' })).allowed).toBe(true);
  });

  it('the restricted user is denied by RBAC, and the review says so before the request fails', async () => {
    const decision = await canI(restricted, { verb: 'list', resource: 'configmaps', namespace: ns });
    expect(decision).toMatchObject({ allowed: false, denied: false }); // RBAC does not deny: it fails to allow
    const e = await listAll(restricted, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns }).catch((err: unknown) => err);
    expect(isK8sError(e, 'FORBIDDEN')).toBe(true);
    expect((await canI(restricted, { verb: 'delete', resource: 'configmaps', namespace: ns, name: 'c' })).allowed).toBe(false);
    // what every authenticated user may do (system:basic-user): create SelfSubjectAccessReviews
    expect((await canI(restricted, { verb: 'create', resource: 'selfsubjectaccessreviews', group: 'authorization.k8s.io' })).allowed).toBe(true);
  });

  it('follows RBAC grants: namespace, verb, resource name and subresource', async () => {
    await grantRole(admin, ns, 'read-cm', { kind: 'User', name: 'cronflock-restricted' }, [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] },
      { apiGroups: ['batch'], resources: ['jobs/status'], verbs: ['patch'] },
    ]);
    const listing = await canI(restricted, { verb: 'list', resource: 'configmaps', namespace: ns });
    expect(listing.allowed).toBe(true);
    expect(listing.reason).toContain('read-cm');
    expect((await listAll(restricted, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns })).items.length).toBeGreaterThan(0);
    expect((await canI(restricted, { verb: 'delete', resource: 'configmaps', namespace: ns })).allowed).toBe(false);
    expect((await canI(restricted, { verb: 'list', resource: 'configmaps', namespace: 'default' })).allowed).toBe(false);
    expect((await canI(restricted, { verb: 'list', resource: 'configmaps' })).allowed).toBe(false); // cluster-wide
    expect((await canI(restricted, { verb: 'patch', resource: 'jobs', group: 'batch', subresource: 'status', namespace: ns })).allowed).toBe(true);
    expect((await canI(restricted, { verb: 'patch', resource: 'jobs', group: 'batch', namespace: ns })).allowed).toBe(false);
  });
});
