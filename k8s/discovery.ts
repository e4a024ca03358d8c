/**
 * Discovery: from an object's `apiVersion` + `kind` to the REST resource that serves it (plural name, scope,
 * verbs, subresources), with a cache, so that jobs can handle any kind (built-in or CRD) without a table of
 * their own.
 *
 * Where the rules come from: the API server's discovery documents (`GET /api/v1` for the core group,
 * `GET /apis/<group>/<version>` for others) are `APIResourceList`s; entries whose `name` contains a `/` are
 * subresources (`pods/status`, `jobs/status`). Like client-go's memory-cached discovery and kubectl's RESTMapper,
 * a miss (unknown kind, or a group/version the server does not serve yet) refetches that group/version once
 * before failing, so a CRD installed after the cache was filled is found.
 */
import type { KubeClient } from './client.js';
import { isK8sError, K8sError } from './errors.js';

/** Options of a {@link Discovery} cache. */
export interface DiscoveryOptions {
  /** How long a fetched group/version stays fresh, in ms; default 600 000 (10 min). */
  ttlMs?: number;
  /** A miss refetches a group/version only when its copy is at least this old, in ms; default 0. */
  minRefreshMs?: number;
}

/** The REST resource serving a kind, as discovery describes it. */
export interface ResourceInfo {
  /** API group; `''` for the core group. */
  group: string;
  version: string;
  /** `v1` for core, else `<group>/<version>`. */
  apiVersion: string;
  kind: string;
  /** Plural resource name used in URLs, e.g. `configmaps`, `cronjobs`. */
  resource: string;
  /** True when objects live in namespaces. */
  namespaced: boolean;
  /** Verbs the resource supports: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`. */
  verbs: string[];
  /** Subresource names, e.g. `['status', 'scale']`. */
  subresources: string[];
}

interface ApiResource {
  name: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
}

interface Entry {
  fetchedAt: number;
  /** undefined = the server does not serve this group/version (404). */
  resources: ApiResource[] | undefined;
}

/**
 * A discovery cache bound to one {@link KubeClient} (each client has one: `client.discovery`).
 * `stats.fetches` counts discovery requests sent, for tests and metrics.
 */
export class Discovery {
  readonly stats = { fetches: 0 };
  private readonly cache = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<Entry>>();
  private readonly ttlMs: number;
  private readonly minRefreshMs: number;

  /** A cache that sends its discovery requests through `client` (with its credentials and rate limit). */
  constructor(
    private readonly client: KubeClient,
    options: DiscoveryOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 600_000;
    this.minRefreshMs = options.minRefreshMs ?? 0;
  }

  /**
   * The resource serving `kind` in `apiVersion` (`v1`, `batch/v1`, `example.com/v1alpha1`).
   * Errors: {@link K8sError} `RESOURCE_UNKNOWN` when the server serves no such group/version or kind (after one
   * refetch), or the errors of {@link KubeClient.request} (e.g. `FORBIDDEN`).
   */
  async resolve(apiVersion: string, kind: string, signal?: AbortSignal): Promise<ResourceInfo> {
    let entry = await this.get(apiVersion, false, signal);
    let found = entry.resources?.find((r) => r.kind === kind && !r.name.includes('/'));
    if (!found && performance.now() - entry.fetchedAt >= this.minRefreshMs) {
      entry = await this.get(apiVersion, true, signal);
      found = entry.resources?.find((r) => r.kind === kind && !r.name.includes('/'));
    }
    if (!found) {
      throw new K8sError({
        code: 'RESOURCE_UNKNOWN',
        message:
          entry.resources === undefined
            ? `the server does not serve ${apiVersion} (is the CRD or API group installed?)`
            : `the server serves no kind ${kind} in ${apiVersion} (kinds: ${kindsOf(entry.resources).join(', ')})`,
      });
    }
    return toInfo(apiVersion, found, entry.resources ?? []);
  }

  /**
   * Every resource of `apiVersion` (subresources folded into their resource). Empty when the server does
   * not serve the group/version. Errors: those of {@link KubeClient.request}.
   */
  async resources(apiVersion: string, signal?: AbortSignal): Promise<ResourceInfo[]> {
    const entry = await this.get(apiVersion, false, signal);
    const all = entry.resources ?? [];
    return all.filter((r) => !r.name.includes('/')).map((r) => toInfo(apiVersion, r, all));
  }

  /** Forgets one group/version, or everything. */
  invalidate(apiVersion?: string): void {
    if (apiVersion === undefined) this.cache.clear();
    else this.cache.delete(apiVersion);
  }

  private async get(apiVersion: string, force: boolean, signal?: AbortSignal): Promise<Entry> {
    const cached = this.cache.get(apiVersion);
    if (!force && cached && performance.now() - cached.fetchedAt < this.ttlMs) return cached;
    const running = this.inflight.get(apiVersion);
    if (running) return running;
    const p = this.fetch(apiVersion, signal).finally(() => this.inflight.delete(apiVersion));
    this.inflight.set(apiVersion, p);
    return p;
  }

  private async fetch(apiVersion: string, signal?: AbortSignal): Promise<Entry> {
    const { group } = splitApiVersion(apiVersion);
    const path = group === '' ? `/api/${apiVersion}` : `/apis/${apiVersion}`;
    this.stats.fetches++;
    let entry: Entry;
    try {
      const res = await this.client.request<{ resources?: ApiResource[] }>({
        method: 'GET',
        path,
        ...(signal ? { signal } : {}),
      });
      entry = { fetchedAt: performance.now(), resources: res.body.resources ?? [] };
    } catch (e) {
      if (!isK8sError(e, 'NOT_FOUND')) throw e;
      entry = { fetchedAt: performance.now(), resources: undefined };
    }
    this.cache.set(apiVersion, entry);
    return entry;
  }
}

/** Splits `batch/v1` into `{ group: 'batch', version: 'v1' }` and `v1` into `{ group: '', version: 'v1' }`. */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

/** Where an object or a collection lives; see {@link resourcePath}. */
export interface PathOptions {
  /** Namespace; ignored for cluster-scoped resources; omitted on a namespaced list = all namespaces. */
  namespace?: string;
  /** Object name; omitted = the collection. */
  name?: string;
  /** Subresource, e.g. `status`; needs `name`. */
  subresource?: string;
}

/**
 * The URL path of a resource's collection or object: `/api/v1[/namespaces/<ns>]/<resource>[/<name>[/<sub>]]`
 * for the core group, `/apis/<group>/<version>/...` for others. `TypeError` when a namespaced object is named
 * without a namespace, or a subresource without a name.
 */
export function resourcePath(info: ResourceInfo, options: PathOptions = {}): string {
  const root = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  if (options.subresource !== undefined && options.name === undefined) {
    throw new TypeError(`subresource ${options.subresource} of ${info.resource} needs an object name`);
  }
  if (info.namespaced && options.name !== undefined && !options.namespace) {
    throw new TypeError(`${info.kind} ${options.name} is namespaced: a namespace is needed`);
  }
  let p = root;
  if (info.namespaced && options.namespace) p += `/namespaces/${encodeURIComponent(options.namespace)}`;
  p += `/${info.resource}`;
  if (options.name !== undefined) p += `/${encodeURIComponent(options.name)}`;
  if (options.subresource !== undefined) p += `/${options.subresource}`;
  return p;
}

function toInfo(apiVersion: string, r: ApiResource, all: ApiResource[]): ResourceInfo {
  const { group, version } = splitApiVersion(apiVersion);
  const prefix = `${r.name}/`;
  return {
    group,
    version,
    apiVersion,
    kind: r.kind,
    resource: r.name,
    namespaced: r.namespaced,
    verbs: [...(r.verbs ?? [])],
    subresources: all.filter((s) => s.name.startsWith(prefix)).map((s) => s.name.slice(prefix.length)),
  };
}

function kindsOf(resources: ApiResource[]): string[] {
  return [...new Set(resources.filter((r) => !r.name.includes('/')).map((r) => r.kind))].sort();
}
