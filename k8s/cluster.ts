/**
 * Who a cluster is: the `kube-system` namespace's UID (stable for the life of a cluster, the identity
 * Velero and others use) and the API server's version (`GET /version`).
 */
import type { KubeClient } from './client.js';
import { K8sError } from './errors.js';
import { getObject } from './objects.js';

/** What {@link clusterIdentity} returns. */
export interface ClusterIdentity {
  /** UID of the `kube-system` namespace. */
  clusterId: string;
  /** The server's `gitVersion`, e.g. `v1.37.2`. */
  kubernetesVersion: string;
}

/**
 * Reads the cluster's identity. Errors: `FORBIDDEN` when namespaces may not be read (the job needs `get` on
 * namespace `kube-system`), `UNEXPECTED_RESPONSE` when the answers lack the fields, and those of
 * {@link KubeClient.request}.
 */
export async function clusterIdentity(client: KubeClient, signal?: AbortSignal): Promise<ClusterIdentity> {
  const ns = await getObject(client, { apiVersion: 'v1', kind: 'Namespace', name: 'kube-system' }, signal ? { signal } : {});
  const version = await client.request<{ gitVersion?: string }>({ method: 'GET', path: '/version', ...(signal ? { signal } : {}) });
  const clusterId = ns.metadata?.uid;
  const kubernetesVersion = version.body?.gitVersion;
  if (!clusterId || !kubernetesVersion) {
    throw new K8sError({ code: 'UNEXPECTED_RESPONSE', message: `cluster identity: ${!clusterId ? 'namespace kube-system has no uid' : '/version has no gitVersion'}` });
  }
  return { clusterId, kubernetesVersion };
}
