/**
 * Paged lists of any kind (resolved through discovery), full objects or metadata only, restarted from the
 * first page when the server says the list's snapshot is gone.
 *
 * Where the rules come from: API "chunking" (KEP 365; k8s.io/apiserver's list handler): `limit` caps a page,
 * the answer's `metadata.continue` token fetches the next page of the same snapshot, and once etcd has
 * compacted that snapshot's revision the server answers `410 Gone` (reason `Expired`). client-go's
 * tools/pager then relists; we restart the paged list from its first page (up to `maxRestarts` times), so that
 * {@link listAll} returns one consistent snapshot. (The 410 Status may carry a token for an inconsistent
 * continuation; we do not use it.) Metadata-only lists ask for `PartialObjectMetadataList` via `Accept`
 * (`application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`), as client-go's metadata client does:
 * the server sends only `metadata` of each object, which is what cleanup needs and much smaller.
 */
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { resourcePath } from './discovery.js';
import { isK8sError, K8sError } from './errors.js';
import { resolveFor } from './objects.js';

/** `Accept` of a metadata-only list (with plain JSON as the fallback the server may choose). */
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json';

/** What to list; see {@link listPages}. */
export interface ListOptions {
  apiVersion: string;
  kind: string;
  /** Namespace to list; omitted: the client's namespace for namespaced kinds; `''` = all namespaces. */
  namespace?: string;
  /** Label selector, e.g. `app=web,tier!=db`. */
  labelSelector?: string;
  /** Field selector, e.g. `metadata.name=x` or `status.phase=Succeeded` (only fields the kind supports). */
  fieldSelector?: string;
  /** Page size (objects per request); default 500 (client-go's pager default). */
  limit?: number;
  /** True: ask for metadata only (items are `PartialObjectMetadata`); default false. */
  metadataOnly?: boolean;
  /** How many times a 410 Gone may restart the list; default 3. */
  maxRestarts?: number;
  /** Called when a 410 restarts the list, before the first page is fetched again. */
  onRestart?: (event: { restarts: number; error: K8sError }) => void;
  signal?: AbortSignal;
}

/** One object's metadata, as a metadata-only list returns it (kind `PartialObjectMetadata`). */
export interface PartialObjectMetadata {
  apiVersion: 'meta.k8s.io/v1';
  kind: 'PartialObjectMetadata';
  metadata: V1ObjectMeta;
}

/** One page of a list. */
export interface ListPage<T> {
  items: T[];
  /** 0 for the first page of the current pass (it goes back to 0 after a restart). */
  index: number;
  /** How many times a 410 restarted the list before this page. */
  restarts: number;
  /** The snapshot's resourceVersion (the same on every page of one pass). */
  resourceVersion: string;
  /** Token of the next page; undefined on the last page. */
  continue?: string;
  /** The server's estimate of objects after this page; it gives none on the last page or when a selector is used. */
  remainingItemCount?: number;
}

interface ListBody<T> {
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items?: T[];
}

/**
 * Yields the pages of a list. After a 410 Gone on a continue token, it starts again from the first page
 * (`restarts` grows and `index` goes back to 0): a consumer that streams pages may then see objects again.
 * Errors: `RESTARTS_EXHAUSTED` (410 more than `maxRestarts` times), `RESOURCE_UNKNOWN`, `VERB_UNSUPPORTED`,
 * `FORBIDDEN`, and the other errors of {@link KubeClient.request}; `RangeError` for a bad `limit`.
 */
export async function* listPages<T = KubernetesObject>(client: KubeClient, options: ListOptions): AsyncGenerator<ListPage<T>> {
  const limit = options.limit ?? 500;
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be an integer >= 1, got ${limit}`);
  const maxRestarts = options.maxRestarts ?? 3;
  const info = await resolveFor(client, options, 'list', options.signal);
  const namespace = options.namespace ?? (info.namespaced ? client.namespace : undefined);
  const path = resourcePath(info, namespace ? { namespace } : {});
  let restarts = 0;
  let token: string | undefined;
  let index = 0;
  for (;;) {
    let body: ListBody<T>;
    try {
      const res = await client.request<ListBody<T>>({
        method: 'GET',
        path,
        query: {
          limit,
          continue: token,
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
        },
        ...(options.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      body = res.body;
    } catch (e) {
      if (!(token !== undefined && isK8sError(e, 'GONE'))) throw e;
      if (restarts >= maxRestarts) {
        throw new K8sError({
          code: 'RESTARTS_EXHAUSTED',
          message: `listing ${info.resource}: the snapshot expired (410) ${restarts + 1} times; gave up`,
          cause: e,
        });
      }
      restarts++;
      options.onRestart?.({ restarts, error: e });
      token = undefined;
      index = 0;
      continue;
    }
    let items = body.items ?? [];
    if (options.metadataOnly && body.kind !== 'PartialObjectMetadataList') {
      // The server ignored `as=` (possible for aggregated APIs): keep the promised shape.
      items = items.map((o) => toPartial(o as KubernetesObject) as T);
    }
    const next = body.metadata?.continue || undefined;
    const page: ListPage<T> = {
      items,
      index,
      restarts,
      resourceVersion: body.metadata?.resourceVersion ?? '',
      ...(next !== undefined ? { continue: next } : {}),
      ...(body.metadata?.remainingItemCount !== undefined ? { remainingItemCount: body.metadata.remainingItemCount } : {}),
    };
    yield page;
    if (next === undefined) return;
    token = next;
    index++;
  }
}

/** What {@link listAll} returns. */
export interface ListResult<T> {
  /** Every object of one consistent snapshot. */
  items: T[];
  /** The snapshot's resourceVersion (usable to start a watch). */
  resourceVersion: string;
  /** Pages fetched in the pass that completed. */
  pages: number;
  /** How many times a 410 restarted the list. */
  restarts: number;
}

/**
 * Lists every object, page by page (see {@link listPages}); a restart discards what the expired pass had
 * collected, so `items` is one snapshot. Errors: those of {@link listPages}.
 */
export async function listAll<T = KubernetesObject>(client: KubeClient, options: ListOptions): Promise<ListResult<T>> {
  let items: T[] = [];
  let result: ListResult<T> = { items, resourceVersion: '', pages: 0, restarts: 0 };
  for await (const page of listPages<T>(client, options)) {
    if (page.index === 0) items = [];
    items.push(...page.items);
    result = { items, resourceVersion: page.resourceVersion, pages: page.index + 1, restarts: page.restarts };
  }
  return result;
}

/**
 * Lists metadata only (`PartialObjectMetadata` items): {@link listAll} with `metadataOnly: true`.
 * Errors: those of {@link listPages}.
 */
export function listMetadata(client: KubeClient, options: Omit<ListOptions, 'metadataOnly'>): Promise<ListResult<PartialObjectMetadata>> {
  return listAll<PartialObjectMetadata>(client, { ...options, metadataOnly: true });
}

function toPartial(o: KubernetesObject): PartialObjectMetadata {
  return { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: o.metadata ?? {} };
}
