/**
 * Whether and how a replica watches the cluster's Schedules (`cronflock start --watch-schedules`):
 * - `auto` (default): only when the replica runs in a pod (in-cluster config: `KUBERNETES_SERVICE_HOST` and the
 *   service-account files), the API server serves the Schedule kind (the CRD is installed) and the replica may
 *   list Schedules (a chart can install the CRD without granting them: then files only, with a warning). Outside a pod
 *   nothing is watched unless asked for: a replica started on a laptop whose kubeconfig points at a production
 *   cluster must not start running that cluster's Schedules.
 * - `on`: the kubeconfig (`--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, else in-cluster); a missing CRD or
 *   a refused list is an error.
 * - `off`: files only.
 */
import { createKubeClient, isK8sError, K8sError, loadKubeConfig, type KubeClient } from '../../k8s/index.js';
import type { Logger } from '../log.js';
import { API_VERSION, CRD_NAME, KIND } from './resource.js';
import { ScheduleSource } from './source.js';
import { watchesSchedules, type WatchMode } from './watch-mode.js';

export type { WatchMode } from './watch-mode.js';

/** Options of {@link openScheduleSource}. */
export interface OpenScheduleSourceOptions {
  mode: WatchMode;
  /** `--kubeconfig`; default: KUBECONFIG, ~/.kube/config, in-cluster. */
  kubeconfig?: string;
  /** `--kube-context`. */
  context?: string;
  /** `--watch-namespaces`; empty = all namespaces the replica may list. */
  namespaces: readonly string[];
  /** `--schedule-selector`: a label selector. */
  labelSelector?: string;
  /** Client-side request rate of the replica's own API client (status, Events, watches); default 20/s. */
  qps?: number;
  log: Logger;
  /** Environment (for tests); default process.env. */
  env?: Record<string, string | undefined>;
}

/** A watched Schedule source and the client it (and the status and Event writers) use. */
export interface OpenedScheduleSource {
  client: KubeClient;
  source: ScheduleSource;
}

/**
 * Opens the Schedule source for `mode` (see the module docs); undefined when nothing is to be watched.
 * Errors (`on`, and `auto` in a pod once the CRD is found): a {@link K8sError} with a message that says what to
 * do (no kubeconfig, CRD not installed, list forbidden).
 */
export async function openScheduleSource(o: OpenScheduleSourceOptions): Promise<OpenedScheduleSource | undefined> {
  const env = o.env ?? process.env;
  if (!watchesSchedules(o.mode, env)) {
    if (o.mode === 'auto') o.log.debug('not in a pod: Schedules from the cluster are not watched (--watch-schedules on to watch them)');
    return undefined;
  }
  const loaded = loadKubeConfig({
    ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}),
    ...(o.context ? { context: o.context } : {}),
    mode: o.mode === 'auto' && !o.kubeconfig ? 'in-cluster' : 'auto',
    env,
  });
  const qps = o.qps ?? 20;
  const client = createKubeClient(loaded, { qps, burst: Math.max(1, Math.ceil(qps * 2)), userAgent: 'cronflock' });
  try {
    await client.discovery.resolve(API_VERSION, KIND);
  } catch (e) {
    if (!isK8sError(e, 'RESOURCE_UNKNOWN')) throw e;
    if (o.mode === 'auto') {
      o.log.info({ crd: CRD_NAME }, 'the Schedule CRD is not installed: Schedules from the cluster are not watched');
      return undefined;
    }
    throw new K8sError({
      code: 'RESOURCE_UNKNOWN',
      message: `the API server at ${client.server} does not serve ${KIND} (${API_VERSION}): install the CRD (kubectl apply -f k8s/crds/schedules.cronflock.io.yaml) or start with --watch-schedules off`,
      cause: e,
    });
  }
  const source = await ScheduleSource.start({
    client,
    namespaces: o.namespaces,
    ...(o.labelSelector ? { labelSelector: o.labelSelector } : {}),
    log: o.log,
  }).catch((e: unknown) => {
    if (isK8sError(e, 'FORBIDDEN') && o.mode === 'auto') {
      // The CRD is installed (e.g. by a Helm chart) but this replica was not granted Schedules: run the files.
      o.log.warn({ err: e.message }, 'may not watch Schedules (see k8s/deploy/base/rbac.yaml): Schedules from the cluster are not watched');
      return undefined;
    }
    if (isK8sError(e, 'FORBIDDEN')) {
      throw new K8sError({
        code: 'FORBIDDEN',
        message: `${e.message}; the replica needs list and watch on schedules.${API_VERSION.split('/')[0]} (see k8s/deploy/base/rbac.yaml)`,
        cause: e,
      });
    }
    throw e;
  });
  if (!source) return undefined;
  o.log.info(
    { namespaces: source.namespaces.map((n) => n || '*'), selector: o.labelSelector, server: client.server, schedules: source.objects().length },
    'watching Schedules in the cluster',
  );
  return { client, source };
}
