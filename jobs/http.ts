/**
 * `kind: http`: serverless-style invocation. POSTs (by default) a JSON body describing the occurrence to a
 * URL. Credentials in the URL (`https://user:pass@host/`) are sent as a Basic Authorization header, never
 * logged. A 2xx answer is success; any other status, a network error or the timeout is a failure. The body carries
 * `fencingToken` so the receiver can refuse a stale claimant's late call (Kleppmann's fencing pattern).
 * The exchange itself (redirect policy, bounded body, no header values in messages) is ./outbound-http.ts.
 */
import { z } from 'zod';
import { timerDurationMs } from '../runner/validate/zod-duration.js';
import { linkedSignal } from '../runner/time/deadline.js';
import { exchange, ExchangeError, headerNameProblem, headerValueProblem, scrub } from './outbound-http.js';
import type { JobContext, JobKind } from './types.js';

/** Bytes of a failed call's answer quoted in its error (and so in the run record). */
export const ANSWER_EXCERPT_BYTES = 256;

/**
 * A map of request headers as the schedule's author writes them: valid names (see {@link headerNameProblem}), each
 * once (names are case-insensitive), one-line values (see {@link headerValueProblem}). Messages never quote a value.
 */
export const headerMapSchema = z
  .record(
    z.string().superRefine((name, ctx) => {
      const why = headerNameProblem(name);
      if (why) ctx.addIssue({ code: 'custom', message: why });
    }),
    z.string('must be text (quote it); the value is not shown here').superRefine((value, ctx) => {
      const why = headerValueProblem(value);
      if (why) ctx.addIssue({ code: 'custom', message: `${why} (the value is not shown here)` });
    }),
  )
  .superRefine(
    (headers, ctx) => {
      if (typeof headers !== 'object' || headers === null) return;
      const seen = new Map<string, string>();
      for (const name of Object.keys(headers)) {
        const first = seen.get(name.toLowerCase());
        if (first !== undefined) ctx.addIssue({ code: 'custom', path: [name], message: `is the same header as "${first}" (header names ignore case); keep one` });
        else seen.set(name.toLowerCase(), name);
      }
    },
    { when: () => true }, // also when a name or value is refused: one pass reports every problem
  );

/** Parameters of an http job, as written in a schedule file. */
export const httpJobSchema = z
  .strictObject({
    kind: z.literal('http').describe('call a URL with a JSON body describing the occurrence'),
    url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).describe('http:// or https:// URL to call'),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST').describe('HTTP method (default POST)'),
    headers: headerMapSchema.default({}).describe('extra request headers; sent to the URL\'s origin only (see redirects)'),
    params: z.record(z.string(), z.unknown()).optional().describe('extra JSON sent in the body under "params"'),
    timeout: timerDurationMs.default(30_000).describe('per-request timeout, reading the answer included, e.g. 10s (default 30s)'),
    redirects: z
      .enum(['same-origin', 'none', 'any'])
      .default('same-origin')
      .describe(
        'same-origin (default): follow redirects within the URL\'s scheme, host and port, fail on one elsewhere; none: a 3xx answer is a failure; any: follow elsewhere too, without the headers and the body',
      ),
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
function splitCredentials(url: string): { url: string; authorization?: string; password?: string } {
  const u = new URL(url);
  if (!u.username && !u.password) return { url };
  const user = decodeURIComponent(u.username);
  const pass = decodeURIComponent(u.password);
  u.username = '';
  u.password = '';
  return { url: u.toString(), authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`, password: pass };
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
  const hasBody = p.method !== 'GET' && p.method !== 'DELETE';
  // A timer we hold, not AbortSignal.timeout/any (see runner/time/deadline.ts): the timeout must fire every time.
  const deadline = linkedSignal([ctx.signal], p.timeoutMs);
  // The body string is built once: it is what the schedule's `signing:` keys sign and what is sent.
  const text = hasBody ? JSON.stringify(body) : '';
  try {
    const res = await exchange({
      url: target.url,
      method: p.method,
      headers: {
        ...(hasBody ? { 'content-type': 'application/json' } : {}),
        'x-cronflock-occurrence': o.key,
        'x-cronflock-fencing-token': String(o.fencingToken),
        // The attempt's span (runner/tracing/); sent on every hop like our other headers (it carries no secret).
        ...(ctx.trace ? { traceparent: ctx.trace.traceparent } : {}),
      },
      // The signature goes where the body goes (the URL's origin, see exchange), after the job's own headers, which
      // cannot replace it (x-cronflock-* names are refused at load anyway). signBody throws when a key cannot be read:
      // the call then fails instead of going out unsigned.
      jobHeaders: { ...(target.authorization ? { authorization: target.authorization } : {}), ...p.headers, ...ctx.signBody?.(text) },
      ...(hasBody ? { body: text } : {}),
      signal: deadline.signal,
      redirects: p.redirects,
      keepBodyBytes: ANSWER_EXCERPT_BYTES,
      ...(target.password ? { secrets: [target.password] } : {}),
    });
    if (res.status < 200 || res.status > 299) {
      const excerpt = res.body.replace(/\s+/g, ' ').trim();
      const more = res.bodyBytes > ANSWER_EXCERPT_BYTES ? ` … (${res.bodyBytes} bytes)` : '';
      throw new HttpJobError(`answered ${res.status}${excerpt ? `: ${excerpt}${more}` : ''}`, res.status);
    }
    return { status: res.status };
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? err;
    if (deadline.timedOut) throw new HttpJobError(`timed out after ${p.timeoutMs} ms`);
    if (err instanceof HttpJobError) throw err;
    // Messages name the URL without its credentials (they end up in logs and run records).
    const why = scrub(String((err as Error).message).replaceAll(p.url, target.url), target.password ? [target.password] : []);
    throw new HttpJobError(err instanceof ExchangeError && err.code !== 'NETWORK' ? why : `request failed: ${why}`);
  } finally {
    deadline.dispose();
  }
}

/** The `http` job kind. */
export const httpJob: JobKind<HttpJobParams> = { kind: 'http', schema: httpJobSchema, run };
