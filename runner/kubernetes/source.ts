/**
 * The Schedules of the cluster, as every replica sees them: one informer (list + watch, k8s/informer.ts) per
 * watched namespace, or one for all namespaces, optionally with a label selector so that several flocks can
 * share a cluster. Each Schedule is run through the schedule-file loader (validate.ts) once per generation;
 * a change of the set of specs (a Schedule added, deleted, its spec edited: a new `metadata.generation`) is
 * reported, debounced; status-only changes (the replicas' own writes) are not.
 */
import { Informer, isK8sError, type KubeClient } from '../../k8s/index.js';
import type { Logger } from '../log.js';
import { API_VERSION, KIND, refKey, type ScheduleObject } from './resource.js';
import { loadScheduleObject, type LoadedSchedule } from './validate.js';

/** Options of {@link ScheduleSource.start}. */
export interface ScheduleSourceOptions {
  client: KubeClient;
  /**
   * Namespaces to watch; empty = all namespaces. When listing all namespaces is forbidden, the client's own
   * namespace (the pod's) is watched instead, with a warning.
   */
  namespaces: readonly string[];
  /** Only Schedules with these labels (a label selector, e.g. `cronflock.io/flock=a`). */
  labelSelector?: string;
  log: Logger;
  /** Directory relative paths in specs resolve against (default: the working directory). */
  baseDir?: string;
  /** Called when the set of Schedule specs changed (debounced by `debounceMs`). */
  onChange?: () => void;
  /** Default 200 ms. */
  debounceMs?: number;
}

/** The cluster's Schedules, kept current; see the module docs. */
export class ScheduleSource {
  private readonly cache = new Map<string, { version: string; loaded: Promise<LoadedSchedule> }>();
  private signature = '';
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  /** Called with every Schedule object change, status included (the status writer reads its copy from here). */
  onObject: ((key: string) => void) | undefined;
  /** Called when the set of Schedule specs changed (debounced); initially `options.onChange`. */
  onChange: (() => void) | undefined;

  private constructor(
    private readonly informers: Informer<ScheduleObject>[],
    private readonly options: ScheduleSourceOptions,
  ) {
    this.onChange = options.onChange;
  }

  /** The namespaces watched (`['']` = all). */
  get namespaces(): string[] {
    return this.informers.map((i) => i.options.namespace);
  }

  /**
   * Lists the Schedules and starts watching. Errors: `RESOURCE_UNKNOWN` when the API server does not serve the
   * Schedule kind (the CRD is not installed), `FORBIDDEN` (a listed namespace may not be watched), and the
   * errors of the first list.
   */
  static async start(options: ScheduleSourceOptions): Promise<ScheduleSource> {
    const source = new ScheduleSource([], options);
    const make = (namespace: string): Informer<ScheduleObject> =>
      new Informer<ScheduleObject>(options.client, {
        apiVersion: API_VERSION,
        kind: KIND,
        namespace,
        ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
        onChange: (c) => source.changed(c.type === 'RESYNC' ? undefined : c.key),
        onError: (err, retryInMs) =>
          options.log.warn({ namespace: namespace || '*', err: err.message, retryInMs }, 'watching Schedules failed; retrying'),
      });
    const wanted = options.namespaces.length > 0 ? [...new Set(options.namespaces)] : [''];
    for (const ns of wanted) {
      let informer = make(ns);
      try {
        await informer.start();
      } catch (e) {
        if (!(ns === '' && isK8sError(e, 'FORBIDDEN'))) throw e;
        const own = options.client.namespace;
        options.log.warn({ namespace: own, err: e.message }, `may not list Schedules in all namespaces; watching namespace ${own} only (set --watch-namespaces)`);
        informer = make(own);
        await informer.start();
      }
      source.informers.push(informer);
    }
    source.signature = source.currentSignature();
    source.started = true;
    return source;
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** The current object of a Schedule (status included), by namespace and name. */
  object(namespace: string, name: string): ScheduleObject | undefined {
    const key = refKey({ namespace, name });
    for (const i of this.informers) {
      const o = i.get(key);
      if (o) return o;
    }
    return undefined;
  }

  /** Every Schedule object now (not being deleted). */
  objects(): ScheduleObject[] {
    return this.informers.flatMap((i) => i.list()).filter((o) => !o.metadata.deletionTimestamp);
  }

  /** Every Schedule through the loader (cached per uid and generation). */
  async load(): Promise<LoadedSchedule[]> {
    const live = new Set<string>();
    const out: Promise<LoadedSchedule>[] = [];
    for (const o of this.objects()) {
      const key = refKey(o.metadata);
      live.add(key);
      const version = `${o.metadata.uid}:${o.metadata.generation ?? 0}`;
      let entry = this.cache.get(key);
      if (entry?.version !== version) {
        entry = { version, loaded: loadScheduleObject(o, this.options.baseDir ? { baseDir: this.options.baseDir } : {}) };
        this.cache.set(key, entry);
      }
      out.push(entry.loaded);
    }
    for (const key of this.cache.keys()) if (!live.has(key)) this.cache.delete(key);
    return Promise.all(out);
  }

  private currentSignature(): string {
    return this.objects()
      .map((o) => `${refKey(o.metadata)}:${o.metadata.uid}:${o.metadata.generation ?? 0}`)
      .sort()
      .join('\n');
  }

  private changed(key: string | undefined): void {
    if (key !== undefined) this.onObject?.(key);
    if (!this.started) return;
    const sig = this.currentSignature();
    if (sig === this.signature) return;
    this.signature = sig;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.onChange?.(), this.options.debounceMs ?? 200);
    this.timer.unref?.();
  }
}
