/**
 * The schedule sources of `cronflock start`, assembled: schedule files, the cluster's Schedules (when watched),
 * their combination, and the status and Event writers of the Schedules, wired to the replica's run events.
 */
import type { EngineEvents } from '../engine/events.js';
import type { Replica } from '../engine/replica.js';
import type { Logger } from '../log.js';
import type { KubernetesReporter } from '../kubernetes/reporter.js';
import type { ScheduleSource } from '../kubernetes/source.js';
import { watchesSchedules, type WatchMode } from '../kubernetes/watch-mode.js';
import type { Combined } from './combine.js';
import { ScheduleSources } from './sources.js';
import type { StoredSchedules } from './stored.js';
import type { CompiledSchedule } from '../config/load.js';

/** The `start` flags this needs. */
export interface StartSourcesOptions {
  /** Schedule file or directory; undefined: Schedules from the cluster only. */
  path?: string;
  watchSchedules: WatchMode;
  kubeconfig?: string;
  kubeContext?: string;
  /** Empty: every namespace the replica may list. */
  watchNamespaces: readonly string[];
  scheduleSelector?: string;
  kubeQps?: number;
  /** This replica's name (Events name it). */
  replica: string;
  log: Logger;
}

/** What `start` gets: the first combination, the subscription to the replica's events, and the lifecycle. */
export interface StartedSources {
  /** The first combination of the files and Schedules (again after {@link addStored}). */
  readonly first: Combined;
  /** Adds the stored schedules (loaded from Redis) and combines them with the files and Schedules already loaded (not read again). */
  addStored(stored: StoredSchedules): Promise<void>;
  /** What the replica starts with: {@link first}'s schedules and the stored ones whose names those do not run. */
  schedules(): CompiledSchedule[];
  /** True when Schedules from the cluster are watched. */
  watchingCluster: boolean;
  /** Subscribes the Schedules' status and Events to the replica's events (before `Replica.start`, to miss none). */
  subscribe(events: EngineEvents): void;
  /** Call once the replica runs `first`: starts the reloads and the status owner's checks. */
  started(replica: Replica, watchFiles: boolean): void;
  /** Stops watching the sources (no more reloads); status and Events keep flowing until {@link stop}. */
  stopWatching(): Promise<void>;
  /** Sends the queued status and Events and stops. */
  stop(): Promise<void>;
}

/**
 * Opens the sources (see runner/kubernetes/connect.ts for when the cluster is watched) and combines them
 * once. Errors: those of opening the Schedule source (no kubeconfig, CRD missing with `on`, list forbidden).
 */
export async function openStartSources(o: StartSourcesOptions): Promise<StartedSources> {
  // The Kubernetes client is loaded only by replicas that watch Schedules (startup time and memory).
  const k8s = watchesSchedules(o.watchSchedules)
    ? await Promise.all([import('../kubernetes/connect.js'), import('../kubernetes/events.js'), import('../kubernetes/reporter.js'), import('../kubernetes/status-writer.js')])
    : undefined;
  const cluster = await k8s?.[0].openScheduleSource({
    mode: o.watchSchedules,
    ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}),
    ...(o.kubeContext ? { context: o.kubeContext } : {}),
    namespaces: o.watchNamespaces,
    ...(o.scheduleSelector ? { labelSelector: o.scheduleSelector } : {}),
    ...(o.kubeQps !== undefined ? { qps: o.kubeQps } : {}),
    log: o.log,
  });
  const sources = new ScheduleSources({ ...(o.path !== undefined ? { path: o.path } : {}), ...(cluster ? { cluster: cluster.source } : {}), log: o.log });
  let first = await sources.compose();
  let reporter: KubernetesReporter | undefined;
  if (cluster && k8s) {
    const [, { EventRecorder }, { KubernetesReporter }, { StatusWriter }] = k8s;
    const source: ScheduleSource = cluster.source;
    const writer = new StatusWriter({ client: cluster.client, cached: (ns, name) => source.object(ns, name), log: o.log });
    const events = new EventRecorder(cluster.client, o.replica, o.log);
    reporter = new KubernetesReporter({ source, writer, events, log: o.log, replica: o.replica });
    sources.onApplied = (c) => reporter!.applied(c);
  }
  return {
    get first() {
      return first;
    },
    async addStored(stored) {
      sources.setStored(stored);
      first = await sources.recombine(); // the files and Schedules just loaded, not loaded again (unless edited since)
    },
    schedules: () => sources.withStored(first),
    watchingCluster: cluster !== undefined,
    subscribe(events) {
      if (!reporter) return;
      events.on('run', (e) => reporter!.onRun(e));
      events.on('plannedFinal', (x) => reporter!.onPlannedFinal(x));
    },
    started(replica, watchFiles) {
      sources.applied(first);
      reporter?.attach(replica);
      sources.watch(replica, watchFiles);
    },
    async stopWatching() {
      await sources.unwatch();
      await cluster?.source.stop();
    },
    async stop() {
      await reporter?.stop();
    },
  };
}
