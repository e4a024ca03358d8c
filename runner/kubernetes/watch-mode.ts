/**
 * `cronflock start --watch-schedules`: whether a replica watches the cluster's Schedules (the rule lives here,
 * apart from the Kubernetes client, so that a replica that does not watch never loads the client).
 */

/** `--watch-schedules`: `auto` (in a pod), `on`, `off`. See runner/kubernetes/connect.ts. */
export type WatchMode = 'auto' | 'on' | 'off';

/**
 * True when Schedules are to be watched: `on`, or `auto` in a pod (`KUBERNETES_SERVICE_HOST` is set, as the
 * kubelet sets it in every container). `auto` still needs the CRD to be installed (connect.ts checks).
 */
export function watchesSchedules(mode: WatchMode, env: Record<string, string | undefined> = process.env): boolean {
  return mode === 'on' || (mode === 'auto' && Boolean(env.KUBERNETES_SERVICE_HOST));
}
