/**
 * The HTTP core of the access layer: one {@link KubeClient} per cluster identity. It sends every request
 * through client-node 1.4's own machinery (the KubeConfig's authentication and TLS settings, its
 * `ServerConfiguration` and fetch-based `HttpLibrary`), after a client-side token bucket, and retries answers
 * that ask for it.
 *
 * Retry rule (after client-go's rest/request.go `checkWait` and `IsRetryableError`): a `429 Too Many Requests`
 * is retried for any method, since the server did not process the request (API Priority and Fairness and the
 * max-in-flight filter reject before handling); a `5xx` is retried only for GET/HEAD and only when it carries
 * `Retry-After`. The wait is the `Retry-After` header (seconds or HTTP-date), else the Status'
 * `details.retryAfterSeconds`, else 1 s, capped by `maxRetryAfterMs`. Each attempt takes a token again.
 */
import {
  createConfiguration,
  HttpMethod,
  ServerConfiguration,
  type Configuration,
  type KubeConfig,
} from '@kubernetes/client-node';
import { linkedSignal } from '../runner/time/deadline.js';
import { assertUsableKubeConfig, type LoadedKubeConfig } from './config.js';
import { Discovery, type DiscoveryOptions } from './discovery.js';
import { errorFromResponse, K8sError } from './errors.js';
import { TokenBucket } from './ratelimit.js';
import { sleep } from '../runner/time/wait.js';

/** Options of {@link createKubeClient}. */
export interface KubeClientOptions {
  /**
   * Sustained requests per second of the client-side limiter; default 20. (client-go's default is 5 with burst
   * 10; kubectl uses 50/300 for discovery. 20/40 lets a cleanup of thousands of objects finish in minutes while
   * the server's Priority and Fairness still protects it.)
   */
  qps?: number;
  /** Burst of the client-side limiter; default 40. */
  burst?: number;
  /** Retries of one request after 429 / retryable 5xx; default 5 (client-go: 10). 0 = none. */
  maxRetries?: number;
  /** Longest single wait honoured from `Retry-After`, in ms; longer asks are capped; default 30 000. */
  maxRetryAfterMs?: number;
  /** Timeout of one attempt (connect to last body byte), in ms; default 30 000. */
  timeoutMs?: number;
  /** `User-Agent` header; default `cronflock`. */
  userAgent?: string;
  /** Called before each retry wait (for logs and metrics). */
  onRetry?: (event: RetryEvent) => void;
  /** Options of the client's {@link Discovery} cache. */
  discovery?: DiscoveryOptions;
}

/** A retry the client is about to make. */
export interface RetryEvent {
  /** `METHOD path?query` of the request. */
  request: string;
  /** HTTP status that caused the retry (429 or 5xx). */
  status: number;
  /** 1 for the first retry. */
  attempt: number;
  /** Milliseconds the client will wait, after capping. */
  waitMs: number;
  /** Milliseconds the server asked for (header or Status details), when it asked. */
  retryAfterMs?: number;
}

/** One request for {@link KubeClient.request}. */
export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
  /** Path from the server root, e.g. `/api/v1/namespaces/x/configmaps`, without query. */
  path: string;
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  /** Request body: objects are sent as JSON; strings as they are. */
  body?: unknown;
  /** `Content-Type` of the body; default `application/json` when there is a body. */
  contentType?: string;
  /** `Accept`; default `application/json`. */
  accept?: string;
  /** Extra headers. */
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** A 2xx answer. */
export interface KubeResponse<T = unknown> {
  status: number;
  /** Response headers, lower-case names. */
  headers: Record<string, string>;
  /** The JSON body parsed (undefined for an empty body). */
  body: T;
}

/** A client for one cluster identity: see the module docs. Make one with {@link createKubeClient}. */
export class KubeClient {
  /** The KubeConfig in use (its current context). */
  readonly kubeConfig: KubeConfig;
  /** API server base URL, e.g. `https://127.0.0.1:6443`. */
  readonly server: string;
  /** Default namespace of the context (or the pod's), else `default`. */
  readonly namespace: string;
  /** The client-side limiter (shared by every request of this client). */
  readonly limiter: TokenBucket;
  /** Discovery cache of this client (see {@link Discovery}). */
  readonly discovery: Discovery;
  /** Counts since creation, for tests and metrics. */
  readonly stats = { requests: 0, retries: 0, throttledMs: 0 };

  private readonly configuration: Configuration;
  private readonly maxRetries: number;
  private readonly maxRetryAfterMs: number;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly onRetry: ((event: RetryEvent) => void) | undefined;

  /** Use {@link createKubeClient}. */
  constructor(kubeConfig: KubeConfig, namespace: string, options: KubeClientOptions = {}) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new K8sError({ code: 'KUBECONFIG_INVALID', message: 'the KubeConfig has no current cluster' });
    this.kubeConfig = kubeConfig;
    this.server = cluster.server.replace(/\/+$/, '');
    this.namespace = namespace;
    this.limiter = new TokenBucket({ qps: options.qps ?? 20, burst: options.burst ?? 40 });
    this.maxRetries = options.maxRetries ?? 5;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.userAgent = options.userAgent ?? 'cronflock';
    this.onRetry = options.onRetry;
    // The same Configuration client-node's makeApiClient builds: base server + the KubeConfig as auth method.
    this.configuration = createConfiguration({
      baseServer: new ServerConfiguration(this.server, {}),
      authMethods: { default: kubeConfig },
    });
    this.discovery = new Discovery(this, options.discovery);
  }

  /**
   * Sends one request (after the limiter; with the retries of the module docs) and parses the JSON answer.
   * Errors: {@link K8sError} with the code of the HTTP status (`NOT_FOUND`, `CONFLICT`, `GONE`, `FORBIDDEN`,
   * `TOO_MANY_REQUESTS` when retries ran out, ...), `NETWORK`, `TIMEOUT`, `ABORTED`, `UNEXPECTED_RESPONSE`
   * for a 2xx body that is not JSON.
   */
  async request<T = unknown>(req: KubeRequest): Promise<KubeResponse<T>> {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const line = `${req.method} ${req.path}${qs.size > 0 ? `?${qs}` : ''}`;
    for (let attempt = 0; ; attempt++) {
      const t0 = performance.now();
      await this.limiter.take(req.signal);
      this.stats.throttledMs += performance.now() - t0;
      this.stats.requests++;
      const res = await this.send(req, qs, line);
      if (res.status >= 200 && res.status <= 299) {
        return { status: res.status, headers: res.headers, body: parseBody<T>(res, line) };
      }
      const err = errorFromResponse(res.status, res.text, res.headers, line);
      const retryable =
        res.status === 429 ||
        (res.status >= 500 && (req.method === 'GET' || req.method === 'HEAD') && err.retryAfterMs !== undefined);
      if (!retryable || attempt >= this.maxRetries) throw err;
      const waitMs = Math.min(err.retryAfterMs ?? 1000, this.maxRetryAfterMs);
      this.stats.retries++;
      this.onRetry?.({
        request: line,
        status: res.status,
        attempt: attempt + 1,
        waitMs,
        ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}),
      });
      await sleep(waitMs, req.signal);
      if (req.signal?.aborted) throw new K8sError({ code: 'ABORTED', message: `${line}: aborted`, request: line, cause: req.signal.reason });
    }
  }

  private async send(
    req: KubeRequest,
    qs: URLSearchParams,
    line: string,
  ): Promise<{ status: number; headers: Record<string, string>; text: string }> {
    const ctx = this.configuration.baseServer.makeRequestContext(req.path, req.method as HttpMethod);
    for (const [k, v] of qs) ctx.setQueryParam(k, v);
    await this.kubeConfig.applySecurityAuthentication(ctx);
    ctx.setHeaderParam('Accept', req.accept ?? 'application/json');
    ctx.setHeaderParam('User-Agent', this.userAgent);
    for (const [k, v] of Object.entries(req.headers ?? {})) ctx.setHeaderParam(k, v);
    if (req.body !== undefined) {
      ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
      ctx.setBody(typeof req.body === 'string' ? req.body : JSON.stringify(req.body));
    }
    // A timer we hold, not AbortSignal.timeout/any, whose combination can be garbage-collected and never fire.
    const deadline = linkedSignal([req.signal], this.timeoutMs);
    ctx.setSignal(deadline.signal);
    try {
      const res = await this.configuration.httpApi.send(ctx).toPromise();
      return { status: res.httpStatusCode, headers: res.headers, text: await res.body.text() };
    } catch (e) {
      if (req.signal?.aborted) {
        throw new K8sError({ code: 'ABORTED', message: `${line}: aborted`, request: line, cause: e });
      }
      if (deadline.timedOut) {
        throw new K8sError({ code: 'TIMEOUT', message: `${line}: no answer within ${this.timeoutMs} ms`, request: line, cause: e });
      }
      const msg = e instanceof Error ? e.message : String(e);
      throw new K8sError({ code: 'NETWORK', message: `${line}: ${msg}`, request: line, cause: e });
    } finally {
      deadline.dispose();
    }
  }
}

/**
 * Makes a {@link KubeClient} from {@link loadKubeConfig}'s result or from a client-node KubeConfig (checked
 * with {@link assertUsableKubeConfig}: client-node's localhost:8080 fallback is refused with
 * `KUBECONFIG_INVALID`). `RangeError` for a bad `qps`/`burst`.
 */
export function createKubeClient(source: LoadedKubeConfig | KubeConfig, options: KubeClientOptions = {}): KubeClient {
  if ('kubeConfig' in source) return new KubeClient(source.kubeConfig, source.namespace, options);
  assertUsableKubeConfig(source);
  const ctx = source.getContextObject(source.getCurrentContext());
  return new KubeClient(source, ctx?.namespace ?? 'default', options);
}

function parseBody<T>(res: { text: string; headers: Record<string, string> }, line: string): T {
  if (res.text === '') return undefined as T;
  try {
    return JSON.parse(res.text) as T;
  } catch (e) {
    throw new K8sError({
      code: 'UNEXPECTED_RESPONSE',
      message: `${line}: answer is not JSON (content-type ${res.headers['content-type'] ?? 'none'}): ${res.text.slice(0, 200)}`,
      request: line,
      cause: e,
    });
  }
}

