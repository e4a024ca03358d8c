/**
 * Typed errors of the Kubernetes access layer. Every failure the layer raises is a {@link K8sError} with a
 * stable `code` for programs, the HTTP `status` and the API's `Status.reason` when the server answered, and
 * the underlying error as `cause` (a client-node `ApiException`, a fetch/TLS error, a filesystem error...).
 *
 * Where the mapping comes from: the API server answers failures with a `meta.k8s.io/v1` `Status` object whose
 * `reason` and `code` follow k8s.io/apimachinery/pkg/api/errors (NotFound 404, AlreadyExists/Conflict 409,
 * Gone/Expired 410, Invalid 422, TooManyRequests 429, Forbidden 403, Unauthorized 401, ...).
 */
import { ApiException } from '@kubernetes/client-node';

/**
 * What went wrong, for programs (the message is for people).
 * - `KUBECONFIG_NOT_FOUND`: no explicit path, no `KUBECONFIG`, no `~/.kube/config` and not in a pod: there is
 *   no cluster to talk to (client-node would silently use `http://localhost:8080`; we refuse).
 * - `KUBECONFIG_INVALID`: a kubeconfig was found but cannot be read or parsed, has no current context, or its
 *   context names a cluster/user it does not define; also a KubeConfig that is client-node's localhost:8080
 *   fallback.
 * - `CONTEXT_NOT_FOUND`: the requested context is not in the kubeconfig.
 * - `IN_CLUSTER_UNAVAILABLE`: in-cluster config was asked for but the service-account files or the
 *   `KUBERNETES_SERVICE_HOST`/`_PORT` variables are missing.
 * - `RESOURCE_UNKNOWN`: discovery has no resource for the apiVersion+kind (CRD not installed, wrong group...).
 * - `VERB_UNSUPPORTED`: the resource exists but discovery does not list the verb (e.g. `delete` on a
 *   read-only resource).
 * - `BAD_REQUEST` (400), `UNAUTHORIZED` (401), `FORBIDDEN` (403), `NOT_FOUND` (404), `METHOD_NOT_ALLOWED` (405),
 *   `CONFLICT` (409: precondition or resourceVersion mismatch, apply conflict, already exists), `GONE` (410:
 *   resourceVersion or continue token too old), `INVALID` (422), `TOO_MANY_REQUESTS` (429 after the retries ran
 *   out), `SERVER_ERROR` (5xx), `HTTP_ERROR` (any other status).
 * - `NETWORK`: no HTTP answer (connection refused, TLS failure, DNS, reset).
 * - `TIMEOUT`: no complete answer within the request timeout.
 * - `ABORTED`: the caller's `AbortSignal` fired.
 * - `RESTARTS_EXHAUSTED`: a paged list kept getting 410 Gone and gave up after the allowed restarts.
 * - `UNEXPECTED_RESPONSE`: a 2xx answer that is not the JSON the call expects.
 */
export type K8sErrorCode =
  | 'KUBECONFIG_NOT_FOUND'
  | 'KUBECONFIG_INVALID'
  | 'CONTEXT_NOT_FOUND'
  | 'IN_CLUSTER_UNAVAILABLE'
  | 'RESOURCE_UNKNOWN'
  | 'VERB_UNSUPPORTED'
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'GONE'
  | 'INVALID'
  | 'TOO_MANY_REQUESTS'
  | 'SERVER_ERROR'
  | 'HTTP_ERROR'
  | 'NETWORK'
  | 'TIMEOUT'
  | 'ABORTED'
  | 'RESTARTS_EXHAUSTED'
  | 'UNEXPECTED_RESPONSE';

/** The `meta.k8s.io/v1` `Status` object the API server sends with a failure (fields we use). */
export interface ApiStatus {
  kind?: string;
  apiVersion?: string;
  status?: string;
  message?: string;
  /** Machine-readable reason, e.g. `NotFound`, `Conflict`, `Expired`, `Forbidden`, `TooManyRequests`. */
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: { reason?: string; message?: string; field?: string }[];
    /** Seconds the client should wait before retrying (429 and some 5xx/409 answers). */
    retryAfterSeconds?: number;
  };
  code?: number;
  /** For 410 on a paged list the server may offer a continue token for an inconsistent continuation. */
  metadata?: { continue?: string; resourceVersion?: string };
}

/** Fields of a {@link K8sError}. */
export interface K8sErrorInit {
  code: K8sErrorCode;
  message: string;
  /** HTTP status of the answer, when there was one. */
  status?: number;
  /** `Status.reason` of the answer, when the server sent a Status (e.g. `Expired`, `Conflict`). */
  reason?: string;
  /** The Status object the server sent, when it sent one. */
  apiStatus?: ApiStatus;
  /** HTTP method and path (with query) of the request that failed, when the error is about a request. */
  request?: string;
  /** Milliseconds the server asked us to wait (Retry-After header or `details.retryAfterSeconds`). */
  retryAfterMs?: number;
  cause?: unknown;
}

/** A failure of the Kubernetes access layer; see {@link K8sErrorCode} for the codes. */
export class K8sError extends Error {
  readonly code: K8sErrorCode;
  readonly status?: number;
  readonly reason?: string;
  readonly apiStatus?: ApiStatus;
  readonly request?: string;
  readonly retryAfterMs?: number;

  constructor(init: K8sErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'K8sError';
    this.code = init.code;
    if (init.status !== undefined) this.status = init.status;
    if (init.reason !== undefined) this.reason = init.reason;
    if (init.apiStatus !== undefined) this.apiStatus = init.apiStatus;
    if (init.request !== undefined) this.request = init.request;
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
  }
}

/** True when `e` is a {@link K8sError}, optionally with one of the given codes. */
export function isK8sError(e: unknown, ...codes: K8sErrorCode[]): e is K8sError {
  return e instanceof K8sError && (codes.length === 0 || codes.includes(e.code));
}

/**
 * The {@link K8sErrorCode} for an HTTP status (k8s.io/apimachinery/pkg/api/errors' status codes).
 * Only meaningful for non-2xx statuses.
 */
export function codeForStatus(status: number): K8sErrorCode {
  switch (status) {
    case 400:
      return 'BAD_REQUEST';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'METHOD_NOT_ALLOWED';
    case 409:
      return 'CONFLICT';
    case 410:
      return 'GONE';
    case 422:
      return 'INVALID';
    case 429:
      return 'TOO_MANY_REQUESTS';
    default:
      return status >= 500 && status <= 599 ? 'SERVER_ERROR' : 'HTTP_ERROR';
  }
}

/** Parses a response body as a `Status` when it is one (JSON with `kind: Status`); otherwise undefined. */
export function parseApiStatus(body: unknown): ApiStatus | undefined {
  let value = body;
  if (typeof value === 'string' || Buffer.isBuffer(value)) {
    try {
      value = JSON.parse(value.toString());
    } catch {
      return undefined;
    }
  }
  if (value !== null && typeof value === 'object' && (value as { kind?: unknown }).kind === 'Status') {
    return value as ApiStatus;
  }
  return undefined;
}

/**
 * Milliseconds to wait from a `Retry-After` header value (delta-seconds or an HTTP-date, RFC 9110 §10.2.3),
 * falling back to a Status' `details.retryAfterSeconds`. Undefined when neither is present or parseable.
 * `nowMs` is the local clock, used only for the HTTP-date form.
 */
export function retryAfterMs(header: string | undefined, apiStatus?: ApiStatus, nowMs = Date.now()): number | undefined {
  if (header !== undefined && header.trim() !== '') {
    const h = header.trim();
    if (/^\d+$/.test(h)) return Number(h) * 1000;
    const at = Date.parse(h);
    if (!Number.isNaN(at)) return Math.max(0, at - nowMs);
  }
  const s = apiStatus?.details?.retryAfterSeconds;
  return typeof s === 'number' && s >= 0 ? s * 1000 : undefined;
}

/**
 * Converts an HTTP failure into a {@link K8sError}: `status`, the response `body` (string, Buffer or parsed),
 * response `headers` (lower-case names) and the request line for the message.
 */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: Record<string, string>,
  request: string,
  cause?: unknown,
): K8sError {
  const apiStatus = parseApiStatus(body);
  const wait = retryAfterMs(headers['retry-after'], apiStatus);
  const detail = apiStatus?.message ?? (typeof body === 'string' && body.length > 0 ? body.slice(0, 300) : undefined);
  return new K8sError({
    code: codeForStatus(status),
    message: `${request}: HTTP ${status}${apiStatus?.reason ? ` ${apiStatus.reason}` : ''}${detail ? `: ${detail}` : ''}`,
    status,
    ...(apiStatus?.reason !== undefined ? { reason: apiStatus.reason } : {}),
    ...(apiStatus !== undefined ? { apiStatus } : {}),
    request,
    ...(wait !== undefined ? { retryAfterMs: wait } : {}),
    ...(cause !== undefined ? { cause } : {}),
  });
}

/**
 * Converts what a client-node 1.4 typed API (`CoreV1Api`, `BatchV1Api`, ...) threw into a {@link K8sError},
 * for code that uses those APIs directly. client-node 1.4 throws `ApiException` whose `body` is the response
 * body as a JSON string (not parsed) and whose `headers` are lower-case. Anything that is already a
 * K8sError is returned as is; anything else (fetch/TLS errors) becomes `NETWORK`.
 */
export function toK8sError(e: unknown, request = 'kubernetes API call'): K8sError {
  if (e instanceof K8sError) return e;
  if (e instanceof ApiException) {
    return errorFromResponse(e.code, e.body as unknown, (e.headers ?? {}) as Record<string, string>, request, e);
  }
  if (e instanceof Error && e.name === 'AbortError') {
    return new K8sError({ code: 'ABORTED', message: `${request}: aborted`, request, cause: e });
  }
  const msg = e instanceof Error ? e.message : String(e);
  return new K8sError({ code: 'NETWORK', message: `${request}: ${msg}`, request, cause: e });
}
