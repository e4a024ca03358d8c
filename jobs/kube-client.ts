/** The Kubernetes client of a job (job, cleanup, backup, restore): kubeconfig, context and client-side rate. */
import { createKubeClient, loadKubeConfig, type KubeClient } from '../k8s/index.js';

/** Where a job's client connects and how fast it may ask. */
export interface KubeTarget {
  /** kubeconfig path; default: KUBECONFIG, ~/.kube/config, then in-cluster (kubectl's loading order). */
  kubeconfig?: string;
  /** kubeconfig context; default: its current-context. */
  context?: string;
  /** Client-side request rate, requests per second; bursts of up to 2 × qps (at least 1), as client-go's default ratio. */
  qps: number;
}

/**
 * Makes the client a job uses: the given kubeconfig/context, or kubectl's default loading, or in-cluster.
 * Errors: those of {@link loadKubeConfig} (no usable kubeconfig, unknown context).
 */
export function kubeClientFor(p: KubeTarget): KubeClient {
  const loaded = loadKubeConfig({ ...(p.kubeconfig ? { kubeconfig: p.kubeconfig } : {}), ...(p.context ? { context: p.context } : {}) });
  return createKubeClient(loaded, { qps: p.qps, burst: Math.max(1, Math.ceil(p.qps * 2)) });
}
