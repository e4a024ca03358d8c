/**
 * What a k8s test file needs from the shared control plane (started by test/k8s/global-setup.ts): its
 * coordinates, a client per user, and a fresh namespace per test.
 */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createKubeClient, loadKubeConfig, type KubeClient, type KubeClientOptions } from '../../k8s/index.js';
import type { ControlPlaneInfo } from './control-plane.js';
import { createNamespace } from './fixtures.js';

/** The running control plane's coordinates (users, kubeconfigs, server, CA, etcd URL). */
export function controlPlane(): ControlPlaneInfo {
  return inject('k8s');
}

/** A client for user `who` (loaded from that user's kubeconfig, as a job would load its own). */
export function clientFor(who: 'admin' | 'restricted', options: KubeClientOptions = {}): KubeClient {
  const cp = controlPlane();
  return createKubeClient(loadKubeConfig({ kubeconfig: cp.users[who].kubeconfig }), { qps: 200, burst: 400, ...options });
}

/** A unique DNS-1123 name with `prefix`, e.g. `t-3f9a1c2b`. */
export function uniqueName(prefix = 't'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/**
 * Creates a fresh namespace for one test (with the `default` ServiceAccount the controller-manager would have
 * made) and returns its name. Namespaces are not deleted: without a controller-manager, deletion would hang in
 * Terminating, and the whole control plane goes away at the end of the run.
 */
export async function testNamespace(admin: KubeClient, prefix = 't'): Promise<string> {
  return createNamespace(admin, uniqueName(prefix));
}
