/**
 * `kind: http`: serverless-style invocation. POSTs (by default) a JSON body describing the occurrence to a
 * URL. Credentials in the URL (`https://user:pass@host/`) are sent as a Basic Authorization header, never
 * logged. A 2xx answer is success; any other status, a network error or the timeout is a failure. The body carries
 * `fencingToken` so the receiver can refuse a stale claimant's late call (Kleppmann's fencing pattern).
 */
import { z } from 'zod';
import { timerDurationMs } from '../runner/config/zod-duration.js';
import type { JobContext, JobKind } from './types.js';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/; // RFC 9110 §5.1 token

/** Parameters of an http job, as written in a schedule file. */
export const httpJobSchema = z
  .strictObject({
    kind: z.literal('http').describe('call a URL with a JSON body describing the occurrence'),
    url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).describe('http:// or https:// URL to call'),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST').describe('HTTP method (default POST)'),
    headers: z
      .record(z.string().regex(HEADER_NAME, 'is not a valid HTTP header name'), z.string())
      .default({})
      .describe('extra request headers'),
    params: z.record(z.string(), z.unknown()).optional().describe('extra JSON sent in the body under "params"'),
    timeout: timerDurationMs.default(30_000).describe('per-request timeout, e.g. 10s (default 30s)'),
  })
  .superRefine((v, ctx) => {
    // Credentials in the URL become a Basic Authorization header; with an explicit one too, both would be sent
    // joined into one invalid header. Say which to keep instead.
    const auth = Object.keys(v.headers ?? {}).find((h) => h.toLowerCase() === 'authorization');
    let hasUrlCredentials = false;
    try {
      const u = new URL(v.url);
      hasUrlCredentials = u.username !== '' || u.password !== '';
    } catch {
      return; // the url field reports it
    }
    if (auth !== undefined && hasUrlCredentials) {
      ctx.addIssue({
        code: 'custom',
        path: ['headers', auth],
        message: 'the url carries credentials (user:password@), which are sent as Basic authorization; keep either those or this header, not both',
      });
    }
  })
  .transform(({ timeout, ...rest }) => ({ ...rest, timeoutMs: timeout }));

/** Parameters after validation: `timeoutMs` in milliseconds. */
export type HttpJobParams = z.output<typeof httpJobSchema>;

/** Request body sent by an http job. Times are ISO 8601 UTC. */
export interface HttpJobBody {
  schedule: string;
  occurrence: string;
  dueAt: string;
  fireAt: string;
  startedAt: string;
  attempt: number;
  fencingToken: number;
  manual: boolean;
  replica: string;
  params?: Record<string, unknown>;
}

/** Error of a failed http call; `status` is set when the server answered. */
export class HttpJobError extends Error {
  readonly code = 'HTTP_JOB_FAILED';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'HttpJobError';
  }
}

/** The URL without user info, and a Basic Authorization header for it (RFC 7617), as curl does. */
function splitCredentials(url: string): { url: string; authorization?: string } {
  const u = new URL(url);
  if (!u.username && !u.password) return { url };
  const user = decodeURIComponent(u.username);
  const pass = decodeURIComponent(u.password);
  u.username = '';
  u.password = '';
  return { url: u.toString(), authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` };
}

async function run(ctx: JobContext, p: HttpJobParams): Promise<{ status: number }> {
  const o = ctx.occurrence;
  const target = splitCredentials(p.url);
  const body: HttpJobBody = {
    schedule: o.schedule,
    occurrence: o.key,
    dueAt: new Date(o.dueMs).toISOString(),
    fireAt: new Date(o.fireMs).toISOString(),
    startedAt: new Date(o.startMs).toISOString(),
    attempt: o.attempt,
    fencingToken: o.fencingToken,
    manual: o.manual,
    replica: ctx.replica,
    ...(p.params ? { params: p.params } : {}),
  };
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(p.timeoutMs)]);
  const hasBody = p.method !== 'GET' && p.method !== 'DELETE';
  let res: Response;
  try {
    res = await fetch(target.url, {
      method: p.method,
      headers: {
        ...(hasBody ? { 'content-type': 'application/json' } : {}),
        ...(target.authorization ? { authorization: target.authorization } : {}),
        'x-cronflock-occurrence': o.key,
        'x-cronflock-fencing-token': String(o.fencingToken),
        ...(ctx.trace ? { traceparent: ctx.trace.traceparent } : {}), // the attempt's span (runner/tracing/)
        ...p.headers,
      },
      body: hasBody ? JSON.stringify(body) : undefined,
      signal,
    });
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? err;
    if (signal.aborted) throw new HttpJobError(`timed out after ${p.timeoutMs} ms`);
    // Messages name the URL without its credentials (they end up in logs and run records).
    const why = String((err as Error).cause ?? (err as Error).message).replaceAll(p.url, target.url);
    throw new HttpJobError(`request failed: ${why}`);
  }
  // Drain the body so the connection can be reused; its content is not part of the result.
  await res.arrayBuffer().catch(() => undefined);
  if (res.status < 200 || res.status > 299) throw new HttpJobError(`answered ${res.status}`, res.status);
  return { status: res.status };
}

/** The `http` job kind. */
export const httpJob: JobKind<HttpJobParams> = { kind: 'http', schema: httpJobSchema, run };
