/**
 * "Can I?": asks the API server whether the client's own identity may do something, with a
 * `SelfSubjectAccessReview` (authorization.k8s.io/v1), as `kubectl auth can-i` does. Jobs use it to fail early
 * with a clear message ("cronflock's service account may not delete pods in ns x") instead of a 403 half-way
 * through a cleanup. The answer comes from the server's authorizers (RBAC here), so it is the same decision the
 * real request would get.
 */
import type { KubeClient } from './client.js';
import { K8sError } from './errors.js';

/** What to ask about: the fields of `ResourceAttributes` (`group` `''` = core). */
export interface AccessQuery {
  /** `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or `*`. */
  verb: string;
  /** Plural resource, e.g. `pods`, `jobs`, `cronjobs`, `widgets`. */
  resource: string;
  /** API group; default `''` (core). */
  group?: string;
  /** Namespace; omitted = cluster-wide (all namespaces for namespaced resources). */
  namespace?: string;
  /** One object's name; omitted = any. */
  name?: string;
  /** Subresource, e.g. `status`. */
  subresource?: string;
  signal?: AbortSignal;
}

/** The server's decision. */
export interface AccessDecision {
  /** True when the request would be authorized. */
  allowed: boolean;
  /** True when an authorizer explicitly denied it (RBAC never denies explicitly: it only fails to allow). */
  denied: boolean;
  /** The authorizer's explanation, when it gave one (RBAC: which binding allowed it). */
  reason?: string;
  /** An error the authorizer met while deciding (the decision may then be incomplete). */
  evaluationError?: string;
}

interface SelfSubjectAccessReviewStatus {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/**
 * Sends a SelfSubjectAccessReview for `query` (POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews,
 * which every authenticated user may do) and returns the decision. Errors: `UNAUTHORIZED` (bad credentials),
 * `UNEXPECTED_RESPONSE` (no status in the answer), and the other errors of {@link KubeClient.request}.
 */
export async function canI(client: KubeClient, query: AccessQuery): Promise<AccessDecision> {
  const resourceAttributes: Record<string, string> = { verb: query.verb, resource: query.resource, group: query.group ?? '' };
  if (query.namespace !== undefined) resourceAttributes.namespace = query.namespace;
  if (query.name !== undefined) resourceAttributes.name = query.name;
  if (query.subresource !== undefined) resourceAttributes.subresource = query.subresource;
  const res = await client.request<{ status?: SelfSubjectAccessReviewStatus }>({
    method: 'POST',
    path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
    body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes } },
    ...(query.signal ? { signal: query.signal } : {}),
  });
  const status = res.body?.status;
  if (!status) {
    throw new K8sError({ code: 'UNEXPECTED_RESPONSE', message: 'SelfSubjectAccessReview answer has no status' });
  }
  return {
    allowed: status.allowed === true,
    denied: status.denied === true,
    ...(status.reason ? { reason: status.reason } : {}),
    ...(status.evaluationError ? { evaluationError: status.evaluationError } : {}),
  };
}
