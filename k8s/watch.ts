/**
 * Watches of any kind (resolved through discovery), and "wait until this object is in a state" built on them:
 * one long request that the server answers with a stream of events, instead of a poll loop.
 *
 * Where the rules come from: the API's watch protocol (k8s.io/apiserver's watch handler; client-go's
 * tools/watch `UntilWithSync`): `?watch=true&resourceVersion=<rv>` streams `ADDED`, `MODIFIED`, `DELETED`,
 * `BOOKMARK` and `ERROR` events after `rv`; the server closes a watch after `timeoutSeconds` (or its own
 * min-request-timeout); an `ERROR` event with a `410 Gone` Status means `rv` is too old (compacted), and the
 * client must read the object again and watch from the new resourceVersion. The stream itself is
 * client-node 1.4's `Watch` (same authentication and TLS as the rest of the client).
 */
import { Watch, type KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { resourcePath } from './discovery.js';
import { errorFromResponse, isK8sError, K8sError, type ApiStatus } from './errors.js';
import { getObject, resolveFor, type ObjectRef } from './objects.js';

/** One event of a watch. `BOOKMARK` events carry only `metadata.resourceVersion`. */
export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: T;
}

/** What to watch; see {@link watchEvents}. */
export interface WatchOptions {
  apiVersion: string;
  kind: string;
  /** Namespace; omitted: the client's namespace for namespaced kinds; `''` = all namespaces. */
  namespace?: string;
  labelSelector?: string;
  /** e.g. `metadata.name=x` to watch one object. */
  fieldSelector?: string;
  /** Start after this resourceVersion (from a get or list); omitted: the server sends the current state first. */
  resourceVersion?: string;
  /** Ask the server to end the watch after this many seconds (it may end it earlier); default 300. */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

/**
 * Yields the events of one watch request until the server ends it (the generator returns; watch again from
 * the last resourceVersion seen). Errors: `GONE` when the resourceVersion is too old (read again, then watch),
 * `ABORTED` when `signal` fires, `NETWORK` when the stream breaks, the HTTP errors of a refused watch
 * (`FORBIDDEN`, ...) and those of {@link resolveFor} (the resource must support `watch`).
 */
export async function* watchEvents<T extends KubernetesObject = KubernetesObject>(
  client: KubeClient,
  options: WatchOptions,
): AsyncGenerator<WatchEvent<T>> {
  const { signal } = options;
  const info = await resolveFor(client, options, 'watch', signal);
  const namespace = options.namespace ?? (info.namespaced ? client.namespace : undefined);
  const path = resourcePath(info, namespace ? { namespace } : {});
  const line = `WATCH ${path}${options.fieldSelector ? `?fieldSelector=${options.fieldSelector}` : ''}`;
  await client.limiter.take(signal);
  client.stats.requests++;

  // Events arrive by callback; the generator hands them out in order.
  const queue: WatchEvent<T>[] = [];
  let ended: { error?: K8sError } | undefined;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  const finish = (error?: K8sError): void => {
    ended ??= error ? { error } : {};
    notify();
  };
  const onAbort = (): void => finish(new K8sError({ code: 'ABORTED', message: `${line}: aborted`, request: line, cause: signal?.reason }));
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort, { once: true });

  const controller = await new Watch(client.kubeConfig).watch(
    path,
    {
      allowWatchBookmarks: true,
      timeoutSeconds: options.timeoutSeconds ?? 300,
      ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}),
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
      ...(options.fieldSelector ? { fieldSelector: options.fieldSelector } : {}),
    },
    (type: string, object: unknown) => {
      if (type === 'ERROR') {
        const status = object as ApiStatus;
        finish(errorFromResponse(status.code ?? 500, JSON.stringify(status), {}, line));
      } else if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED' || type === 'BOOKMARK') {
        queue.push({ type, object: object as T });
        notify();
      }
    },
    (err: unknown) => {
      if (!err) return finish();
      const e = err as { statusCode?: number; message?: string; name?: string };
      if (e.name === 'AbortError') return finish(); // our own abort (signal, or done after an ERROR event)
      finish(
        e.statusCode !== undefined
          ? errorFromResponse(e.statusCode, e.message ?? '', {}, line, err)
          : new K8sError({ code: 'NETWORK', message: `${line}: ${e.message ?? String(err)}`, request: line, cause: err }),
      );
    },
  );
  try {
    for (;;) {
      const next = queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (ended) {
        if (ended.error) throw ended.error;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    controller.abort();
  }
}

/** What {@link waitForObject}'s `until` sees: the object, or undefined once it does not exist (any more). */
export type Observed<T> = T | undefined;

/**
 * Waits until `until(object)` returns something other than undefined, and returns it: reads the object, then
 * watches it (field selector on its name) from that resourceVersion, calling `until` with each new state and
 * with `undefined` when the object does not exist or is deleted. When a watch ends or its resourceVersion is
 * too old (410), it reads the object again and watches on (client-go's `UntilWithSync` pattern): no poll loop.
 * Errors: `ABORTED` when `signal` fires; errors of the get and the watch other than 404 and 410.
 */
export async function waitForObject<T extends KubernetesObject, R>(
  client: KubeClient,
  ref: ObjectRef,
  until: (object: Observed<T>) => R | undefined,
  options: { signal?: AbortSignal; timeoutSeconds?: number } = {},
): Promise<R> {
  const { signal } = options;
  for (;;) {
    let current: T | undefined;
    try {
      current = await getObject<T>(client, ref, signal ? { signal } : {});
    } catch (e) {
      if (!isK8sError(e, 'NOT_FOUND')) throw e;
    }
    const done = until(current);
    if (done !== undefined) return done;
    // Watching a missing object from "now" would miss nothing: creation comes as ADDED.
    let rv = current?.metadata?.resourceVersion;
    try {
      for await (const ev of watchEvents<T>(client, {
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        ...(ref.namespace !== undefined ? { namespace: ref.namespace } : {}),
        fieldSelector: `metadata.name=${ref.name}`,
        ...(rv ? { resourceVersion: rv } : {}),
        ...(options.timeoutSeconds !== undefined ? { timeoutSeconds: options.timeoutSeconds } : {}),
        ...(signal ? { signal } : {}),
      })) {
        rv = ev.object.metadata?.resourceVersion ?? rv;
        if (ev.type === 'BOOKMARK') continue;
        const r = until(ev.type === 'DELETED' ? undefined : ev.object);
        if (r !== undefined) return r;
      }
    } catch (e) {
      if (!isK8sError(e, 'GONE')) throw e;
    }
    if (signal?.aborted) throw new K8sError({ code: 'ABORTED', message: `waiting for ${ref.kind} ${ref.name}: aborted`, cause: signal.reason });
  }
}
