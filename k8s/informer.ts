/**
 * An informer: a local copy of every object of one kind (in one namespace or all), kept current by a list
 * followed by a watch, the way client-go's reflector does it.
 *
 * Where the rules come from (k8s.io/client-go/tools/cache/reflector.go and the API's watch protocol):
 * - list (paged, one consistent snapshot: {@link listAll}), then watch from the list's `resourceVersion` with
 *   `allowWatchBookmarks=true`; every event, bookmarks included, moves the resourceVersion on, so a watch the
 *   server ends (its `timeoutSeconds`, an apiserver restart) resumes where it stopped without a relist;
 * - a `410 Gone` (an `ERROR` event with a Status of code 410, or an HTTP 410) means the resourceVersion was
 *   compacted away: list again and replace the copy (objects deleted meanwhile disappear from it);
 * - other failures (network, 5xx, 403 while RBAC is being fixed) are retried with exponential backoff
 *   (1 s doubling to 30 s), from the last resourceVersion.
 * Consumers read the copy ({@link Informer.list}) when {@link InformerOptions.onChange} says it changed.
 */
import { Watch, type KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { resourcePath } from './discovery.js';
import { errorFromResponse, isK8sError, K8sError, type ApiStatus } from './errors.js';
import { listAll } from './list.js';
import { resolveFor } from './objects.js';
import { sleep } from '../runner/time/wait.js';

/** Options of an {@link Informer}. */
export interface InformerOptions {
  apiVersion: string;
  kind: string;
  /** Namespace to watch; `''` = all namespaces (namespaced kinds). */
  namespace: string;
  /** Label selector, e.g. `flock=a`. */
  labelSelector?: string;
  /** How long the server keeps one watch request open, in seconds; default 300. */
  watchTimeoutSeconds?: number;
  /** Called (synchronously) after the copy changed: an event was applied, or a (re)list replaced it. */
  onChange?: (change: InformerChange) => void;
  /** Called when a list or watch failed and will be retried (for logs). */
  onError?: (error: K8sError, retryInMs: number) => void;
  /** First retry delay after a failure, in ms; doubles up to `maxBackoffMs` (30 000); default 1 000. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

/** What changed: one object (`ADDED`, `MODIFIED`, `DELETED`), or the whole copy after a (re)list (`RESYNC`). */
export type InformerChange =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; key: string }
  | { type: 'RESYNC' };

/** Counts since start, for tests and metrics. */
export interface InformerStats {
  lists: number;
  watches: number;
  events: number;
  bookmarks: number;
  gone: number;
  errors: number;
}

/** A list+watch copy of one kind; see the module docs. */
export class Informer<T extends KubernetesObject = KubernetesObject> {
  private readonly objects = new Map<string, T>();
  private resourceVersion = '';
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private watchAbort: AbortController | undefined;
  readonly stats: InformerStats = { lists: 0, watches: 0, events: 0, bookmarks: 0, gone: 0, errors: 0 };

  constructor(
    private readonly client: KubeClient,
    readonly options: InformerOptions,
  ) {}

  /** Key of an object in the copy: `<namespace>/<name>`, or `<name>` for cluster-scoped objects. */
  static keyOf(o: KubernetesObject): string {
    const m = o.metadata ?? {};
    return m.namespace ? `${m.namespace}/${m.name ?? ''}` : (m.name ?? '');
  }

  /**
   * Lists once (the copy is complete when this resolves), then keeps it current in the background.
   * Errors: those of the first list (e.g. `FORBIDDEN`, `RESOURCE_UNKNOWN`): nothing runs in the background then.
   */
  async start(): Promise<void> {
    await this.relist();
    this.loop = this.run();
  }

  /** Stops watching (the copy stays readable). */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.watchAbort?.abort();
    await this.loop;
  }

  /** The objects of the copy (a snapshot array). */
  list(): T[] {
    return [...this.objects.values()];
  }

  /** One object of the copy by {@link Informer.keyOf} key. */
  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  /** The resourceVersion the copy is at. */
  get version(): string {
    return this.resourceVersion;
  }

  private async relist(): Promise<void> {
    this.stats.lists++;
    const res = await listAll<T>(this.client, {
      apiVersion: this.options.apiVersion,
      kind: this.options.kind,
      namespace: this.options.namespace,
      ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
      signal: this.stopping.signal,
    });
    this.objects.clear();
    for (const o of res.items) this.objects.set(Informer.keyOf(o), o);
    this.resourceVersion = res.resourceVersion;
    this.options.onChange?.({ type: 'RESYNC' });
  }

  private async run(): Promise<void> {
    let backoff = this.options.backoffMs ?? 1_000;
    const maxBackoff = this.options.maxBackoffMs ?? 30_000;
    while (!this.stopping.signal.aborted) {
      try {
        await this.watchOnce();
        backoff = this.options.backoffMs ?? 1_000; // a watch the server ended normally: resume at once
      } catch (e) {
        if (this.stopping.signal.aborted) return;
        const err = e instanceof K8sError ? e : new K8sError({ code: 'NETWORK', message: String((e as Error).message ?? e), cause: e });
        if (isK8sError(err, 'GONE')) {
          this.stats.gone++;
          try {
            await this.relist();
            continue;
          } catch (listErr) {
            if (this.stopping.signal.aborted) return;
            this.resourceVersion = ''; // list again after the wait
            this.report(listErr, backoff);
          }
        } else this.report(err, backoff);
        await sleep(backoff, this.stopping.signal); // stop() ends the wait
        backoff = Math.min(backoff * 2, maxBackoff);
        if (this.resourceVersion === '' && !this.stopping.signal.aborted) {
          try {
            await this.relist();
          } catch (listErr) {
            this.report(listErr, backoff);
          }
        }
      }
    }
  }

  private report(e: unknown, retryInMs: number): void {
    this.stats.errors++;
    const err = e instanceof K8sError ? e : new K8sError({ code: 'NETWORK', message: String((e as Error).message ?? e), cause: e });
    this.options.onError?.(err, retryInMs);
  }

  /** One watch request from the current resourceVersion, until the server ends it. Throws on failure. */
  private async watchOnce(): Promise<void> {
    const { apiVersion, kind, namespace, labelSelector } = this.options;
    const info = await resolveFor(this.client, { apiVersion, kind }, 'watch', this.stopping.signal);
    const path = resourcePath(info, namespace ? { namespace } : {});
    const line = `WATCH ${path}`;
    await this.client.limiter.take(this.stopping.signal);
    this.client.stats.requests++;
    this.stats.watches++;
    let failure: K8sError | undefined;
    const ended = new Promise<void>((resolve) => {
      const finish = (err?: K8sError): void => {
        failure ??= err;
        resolve();
      };
      void new Watch(this.client.kubeConfig)
        .watch(
          path,
          {
            allowWatchBookmarks: true,
            resourceVersion: this.resourceVersion,
            timeoutSeconds: this.options.watchTimeoutSeconds ?? 300,
            ...(labelSelector ? { labelSelector } : {}),
          },
          (type: string, object: unknown) => {
            if (type === 'ERROR') {
              const status = object as ApiStatus;
              finish(errorFromResponse(status.code ?? 500, JSON.stringify(status), {}, line));
              this.watchAbort?.abort();
              return;
            }
            this.apply(type, object as T);
          },
          (err: unknown) => {
            if (!err) return finish();
            const x = err as { statusCode?: number; message?: string; name?: string };
            if (x.name === 'AbortError') return finish();
            finish(
              x.statusCode !== undefined
                ? errorFromResponse(x.statusCode, x.message ?? '', {}, line, err)
                : new K8sError({ code: 'NETWORK', message: `${line}: ${x.message ?? String(err)}`, request: line, cause: err }),
            );
          },
        )
        .then((c) => {
          this.watchAbort = c;
          if (this.stopping.signal.aborted) c.abort();
        }, (err: unknown) => finish(new K8sError({ code: 'NETWORK', message: `${line}: ${String((err as Error).message ?? err)}`, request: line, cause: err })));
    });
    const onStop = (): void => this.watchAbort?.abort();
    this.stopping.signal.addEventListener('abort', onStop, { once: true });
    try {
      await ended;
    } finally {
      this.stopping.signal.removeEventListener('abort', onStop);
      this.watchAbort?.abort();
    }
    if (failure) throw failure;
  }

  private apply(type: string, object: T): void {
    const rv = object?.metadata?.resourceVersion;
    if (type === 'BOOKMARK') {
      this.stats.bookmarks++;
      if (rv) this.resourceVersion = rv;
      return;
    }
    if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
    this.stats.events++;
    const key = Informer.keyOf(object);
    if (type === 'DELETED') this.objects.delete(key);
    else this.objects.set(key, object);
    if (rv) this.resourceVersion = rv;
    this.options.onChange?.({ type, key });
  }
}
