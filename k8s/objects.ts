/**
 * Single-object operations on any kind, resolved through discovery: get, create, patch (merge, JSON,
 * strategic; on a subresource such as `status`), delete with preconditions, and server-side apply.
 *
 * Where the rules come from: the Kubernetes API conventions and the apiserver's handlers
 * (k8s.io/apiserver/pkg/endpoints/handlers): `DeleteOptions.preconditions` (`uid`, `resourceVersion`) make a
 * delete conditional and a mismatch answers `409 Conflict` without deleting; a delete of a missing object
 * answers `404`; server-side apply is `PATCH` with `Content-Type: application/apply-patch+yaml` and a required
 * `fieldManager`, `force=true` takes over fields owned by other managers, and an apply that changes nothing
 * does not write (the resourceVersion stays the same).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import { resourcePath, type ResourceInfo } from './discovery.js';
import { isK8sError, K8sError } from './errors.js';

/** Names one object: its kind (via `apiVersion` + `kind`), namespace (for namespaced kinds) and name. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  /** Required for namespaced kinds; ignored for cluster-scoped ones. */
  namespace?: string;
  name: string;
}

/** Any Kubernetes object as JSON; `metadata` fields follow `ObjectMeta`. */
export type KubeObject = KubernetesObject & Record<string, unknown>;

/** Common options of the calls here. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of {@link createObject} and {@link patchObject}. */
export interface WriteOptions extends CallOptions {
  /** Name recorded in `managedFields` for the change. */
  fieldManager?: string;
  /** True: the server validates and answers but stores nothing (`dryRun=All`). */
  dryRun?: boolean;
}

/**
 * Resolves `ref.apiVersion`/`ref.kind` through the client's discovery cache and checks that the resource
 * supports `verb`. Errors: `RESOURCE_UNKNOWN`, `VERB_UNSUPPORTED`, and those of the discovery request.
 */
export async function resolveFor(
  client: KubeClient,
  ref: { apiVersion: string; kind: string },
  verb: string,
  signal?: AbortSignal,
): Promise<ResourceInfo> {
  const info = await client.discovery.resolve(ref.apiVersion, ref.kind, signal);
  if (!info.verbs.includes(verb)) {
    throw new K8sError({
      code: 'VERB_UNSUPPORTED',
      message: `${info.resource} (${ref.apiVersion} ${ref.kind}) does not support ${verb} (verbs: ${info.verbs.join(', ')})`,
    });
  }
  return info;
}

/** Reads one object. Errors: `NOT_FOUND` (404), `FORBIDDEN`, and those of {@link resolveFor}. */
export async function getObject<T extends KubernetesObject = KubeObject>(
  client: KubeClient,
  ref: ObjectRef,
  options: CallOptions & { subresource?: string } = {},
): Promise<T> {
  const info = await resolveFor(client, ref, 'get', options.signal);
  const res = await client.request<T>({
    method: 'GET',
    path: resourcePath(info, { namespace: ref.namespace ?? client.namespace, name: ref.name, ...sub(options.subresource) }),
    ...sig(options.signal),
  });
  return res.body;
}

/**
 * Creates an object (`obj.apiVersion`, `obj.kind`, `obj.metadata.name` or `generateName`, and
 * `metadata.namespace` or the client's namespace for namespaced kinds). Returns the stored object.
 * Errors: `CONFLICT` (409 AlreadyExists), `INVALID` (422), `FORBIDDEN`, and those of {@link resolveFor}.
 */
export async function createObject<T extends KubernetesObject = KubeObject>(
  client: KubeClient,
  obj: KubernetesObject | KubeObject,
  options: WriteOptions = {},
): Promise<T> {
  const { apiVersion, kind } = requireKind(obj);
  const info = await resolveFor(client, { apiVersion, kind }, 'create', options.signal);
  const res = await client.request<T>({
    method: 'POST',
    path: resourcePath(info, { namespace: obj.metadata?.namespace ?? client.namespace }),
    query: writeQuery(options),
    body: obj,
    ...sig(options.signal),
  });
  return res.body;
}

/** The patch formats of {@link patchObject} and their content types. */
export const PATCH_CONTENT_TYPES = {
  /** RFC 7386 JSON merge patch. */
  merge: 'application/merge-patch+json',
  /** RFC 6902 JSON patch (an array of operations). */
  json: 'application/json-patch+json',
  /** Kubernetes strategic merge patch (built-in kinds only; CRDs refuse it with 415). */
  strategic: 'application/strategic-merge-patch+json',
} as const;

/**
 * Patches one object, or its `subresource` (e.g. `status`, to set Job conditions or Pod phases, which the main
 * resource ignores). `type` defaults to `merge`. Returns the patched object.
 * Errors: `NOT_FOUND`, `CONFLICT` (a `metadata.resourceVersion` in the patch that no longer matches),
 * `INVALID` (422), `FORBIDDEN`, `HTTP_ERROR` 415 (strategic patch on a CRD), and those of {@link resolveFor}.
 */
export async function patchObject<T extends KubernetesObject = KubeObject>(
  client: KubeClient,
  ref: ObjectRef,
  patch: unknown,
  options: WriteOptions & { type?: keyof typeof PATCH_CONTENT_TYPES; subresource?: string } = {},
): Promise<T> {
  const info = await resolveFor(client, ref, 'patch', options.signal);
  const res = await client.request<T>({
    method: 'PATCH',
    path: resourcePath(info, { namespace: ref.namespace ?? client.namespace, name: ref.name, ...sub(options.subresource) }),
    query: writeQuery(options),
    contentType: PATCH_CONTENT_TYPES[options.type ?? 'merge'],
    body: patch,
    ...sig(options.signal),
  });
  return res.body;
}

/** Options of {@link deleteObject}. */
export interface DeleteOptions extends CallOptions {
  /**
   * Delete only if the stored object still has this `uid` (not deleted and re-created under the same name)
   * and/or this `resourceVersion` (not changed since it was read). Mismatch: nothing is deleted.
   */
  preconditions?: { uid?: string; resourceVersion?: string };
  /** How dependents are handled; server default per kind (Background for most, Orphan for some legacy kinds). */
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** Seconds of graceful termination (pods); 0 = immediately. */
  gracePeriodSeconds?: number;
  /** True: validate only, delete nothing (`dryRun=All`). */
  dryRun?: boolean;
}

/**
 * What {@link deleteObject} did:
 * - `deleted`: the server accepted the delete. `pending` is true when the object still exists with a
 *   `deletionTimestamp` (finalizers, or graceful pod termination); `object` is the server's answer.
 * - `gone`: 404, the object did not exist (already deleted: fine for cleanup).
 * - `changed`: 409, a precondition no longer holds (re-created: other uid; modified: other resourceVersion);
 *   nothing was deleted. `error` carries the server's Status.
 */
export type DeleteOutcome =
  | { outcome: 'deleted'; pending: boolean; object: unknown }
  | { outcome: 'gone' }
  | { outcome: 'changed'; error: K8sError };

/**
 * Deletes one object, optionally only if it is still the one that was read (see {@link DeleteOptions}).
 * 404 and 409 are outcomes, not errors ({@link DeleteOutcome}). Errors: `FORBIDDEN`, `VERB_UNSUPPORTED`, and
 * the other errors of {@link KubeClient.request} and {@link resolveFor}.
 */
export async function deleteObject(client: KubeClient, ref: ObjectRef, options: DeleteOptions = {}): Promise<DeleteOutcome> {
  const info = await resolveFor(client, ref, 'delete', options.signal);
  const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
  if (options.preconditions) body.preconditions = { ...options.preconditions };
  if (options.propagationPolicy) body.propagationPolicy = options.propagationPolicy;
  if (options.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = options.gracePeriodSeconds;
  if (options.dryRun) body.dryRun = ['All'];
  try {
    const res = await client.request<{ kind?: string; metadata?: { deletionTimestamp?: string } }>({
      method: 'DELETE',
      path: resourcePath(info, { namespace: ref.namespace ?? client.namespace, name: ref.name }),
      body,
      ...sig(options.signal),
    });
    const pending = res.body?.kind !== 'Status' && res.body?.metadata?.deletionTimestamp !== undefined;
    return { outcome: 'deleted', pending, object: res.body };
  } catch (e) {
    if (isK8sError(e, 'NOT_FOUND')) return { outcome: 'gone' };
    if (isK8sError(e, 'CONFLICT')) return { outcome: 'changed', error: e };
    throw e;
  }
}

/** Options of {@link serverSideApply}. */
export interface ApplyOptions extends CallOptions {
  /** The applier's identity in `managedFields`; required by the server for apply. */
  fieldManager: string;
  /** Take ownership of fields other managers own instead of failing with 409; default false. */
  force?: boolean;
  /** Validate only (`dryRun=All`). */
  dryRun?: boolean;
  /** Apply to a subresource, e.g. `status`. */
  subresource?: string;
}

/**
 * Server-side apply: sends `obj` (the fields this manager wants to own, with `apiVersion`, `kind`,
 * `metadata.name` and, for namespaced kinds, `metadata.namespace` or the client's namespace) as an apply patch.
 * Creates the object if missing. Applying the same content again changes nothing (same resourceVersion).
 * Errors: `CONFLICT` (409: fields owned by another manager, without `force`), `INVALID` (422), `FORBIDDEN`,
 * and those of {@link resolveFor}; `TypeError` when `metadata.name` is missing.
 */
export async function serverSideApply<T extends KubernetesObject = KubeObject>(
  client: KubeClient,
  obj: KubernetesObject | KubeObject,
  options: ApplyOptions,
): Promise<T> {
  const { apiVersion, kind } = requireKind(obj);
  const name = obj.metadata?.name;
  if (!name) throw new TypeError(`server-side apply of ${kind} needs metadata.name`);
  const info = await resolveFor(client, { apiVersion, kind }, 'patch', options.signal);
  const res = await client.request<T>({
    method: 'PATCH',
    path: resourcePath(info, { namespace: obj.metadata?.namespace ?? client.namespace, name, ...sub(options.subresource) }),
    query: { fieldManager: options.fieldManager, force: options.force ? 'true' : undefined, dryRun: options.dryRun ? 'All' : undefined },
    // JSON is YAML: the apply content type accepts it as is.
    contentType: 'application/apply-patch+yaml',
    body: obj,
    ...sig(options.signal),
  });
  return res.body;
}

function requireKind(obj: KubernetesObject): { apiVersion: string; kind: string } {
  if (!obj.apiVersion || !obj.kind) throw new TypeError('the object needs apiVersion and kind');
  return { apiVersion: obj.apiVersion, kind: obj.kind };
}

function writeQuery(options: WriteOptions): Record<string, string | undefined> {
  return { fieldManager: options.fieldManager, dryRun: options.dryRun ? 'All' : undefined };
}

function sub(subresource: string | undefined): { subresource?: string } {
  return subresource === undefined ? {} : { subresource };
}

function sig(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}
