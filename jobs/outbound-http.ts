/**
 * One HTTP exchange on behalf of a job (the `http` kind, cleanup notifications): redirects followed by hand under an
 * origin policy, the answer's body read with bounded memory, and messages that never carry a header's value.
 *
 * - Redirects: `fetch` would follow a redirect to another origin with every custom header (Node drops only
 *   Authorization and Cookie) and re-send the body on a 307/308. Here a redirect is followed only as the policy
 *   allows; on a hop to another origin (`any`) neither the job's headers nor the body go along.
 * - Body: at most `keepBodyBytes` of it are kept (for the record); the rest is read and dropped as it streams, so
 *   a 1.5 GiB answer costs no more memory than a small one. Reading it is part of the exchange: it stops when the
 *   signal fires (e.g. a timeout).
 * - Header values: {@link headerValueProblem} refuses at load what HTTP cannot carry (a line break would make every
 *   run fail with an error that quotes the value); messages built here replace header values with `***`.
 */

/** RFC 9110 §5.1 token: what a header name may be made of. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Headers the HTTP client manages itself (RFC 9110 §7.6.1 connection options, message framing). */
const CLIENT_MANAGED = new Set(['connection', 'content-length', 'expect', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/**
 * Why a user-supplied header name cannot be used, or undefined. Names are compared case-insensitively.
 * `x-cronflock-*` is cronflock's own (occurrence, fencing token, signature): a receiver must be able to trust it.
 */
export function headerNameProblem(name: string): string | undefined {
  if (!HEADER_NAME.test(name)) return 'is not a valid HTTP header name (letters, digits and !#$%&\'*+.^_`|~- only)';
  const lower = name.toLowerCase();
  if (lower === '__proto__') return 'is not a usable header name';
  if (CLIENT_MANAGED.has(lower)) return 'is set by the HTTP client itself and cannot be given here';
  if (lower.startsWith('x-cronflock-')) return 'is reserved: cronflock sets the x-cronflock-* headers itself';
  return undefined;
}

/**
 * Why a header value cannot be sent as given (RFC 9110 §5.5: visible characters, spaces and tabs), or undefined.
 * The answer never quotes the value: header values are often secrets.
 */
export function headerValueProblem(value: string): string | undefined {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x0a || c === 0x0d) return 'contains a line break; a header value is one line';
    if (c === 0) return 'contains a NUL character';
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return 'contains a control character';
    if (c > 0xff) return 'contains a character HTTP headers cannot carry (beyond Latin-1, e.g. an emoji or €); use ASCII';
  }
  if (/^[ \t]|[ \t]$/.test(value)) return 'starts or ends with a space or tab, which HTTP would drop';
  return undefined;
}

/** Which redirects an exchange follows: within the URL's origin (default), none, or any (see {@link exchange}). */
export type RedirectPolicy = 'same-origin' | 'none' | 'any';

/** One request. */
export interface ExchangeRequest {
  /** http(s) URL without credentials. */
  url: string;
  method: string;
  /** cronflock's own headers (content type, `x-cronflock-*`): sent on every hop. */
  headers: Record<string, string>;
  /** The schedule author's headers (and an Authorization made from URL credentials): sent to the URL's origin only. */
  jobHeaders: Record<string, string>;
  body?: string;
  /** Ends the exchange, the body read included; the caller tells a timeout from other aborts. */
  signal: AbortSignal;
  redirects: RedirectPolicy;
  /** How many bytes of the final answer's body to keep (the rest is read and dropped). */
  keepBodyBytes: number;
  /** More values never to show in messages or kept bodies (e.g. a password from the URL); header values always are. */
  secrets?: readonly string[];
}

/** The final answer. */
export interface ExchangeResponse {
  status: number;
  /** Origin of the URL that gave it (after redirects). */
  origin: string;
  /** The first `keepBodyBytes` of the body as UTF-8 text, header values replaced by `***`. */
  body: string;
  /** The whole body's length in bytes. */
  bodyBytes: number;
  /** Redirects followed. */
  redirects: number;
}

/** Why an exchange failed without an answer to show (the signal firing rethrows the signal's reason instead). */
export class ExchangeError extends Error {
  constructor(
    readonly code: 'NETWORK' | 'REDIRECT_REFUSED' | 'TOO_MANY_REDIRECTS',
    message: string,
  ) {
    super(message);
    this.name = 'ExchangeError';
  }
}

/** Redirects followed at most (fetch's own limit is 20). */
export const MAX_REDIRECTS = 10;
const REDIRECT = new Set([301, 302, 303, 307, 308]);

/**
 * Sends `req`, following redirects as `req.redirects` says:
 * - `same-origin`: follows redirects within the URL's origin (scheme, host and port); a redirect elsewhere fails;
 * - `none`: follows none; a 3xx is the answer;
 * - `any`: follows to other origins too, but from the first hop that leaves the origin on, without `jobHeaders`
 *   and without the body: 301/302 (after a POST) and 303 become GET as in the Fetch standard; a 307/308, which would
 *   re-send the body, fails.
 * Method changes on redirects follow the Fetch standard (§4.4 HTTP-redirect fetch).
 * @throws the signal's reason when `req.signal` fires (while waiting or while reading the body);
 *   ExchangeError `NETWORK` (message without header values), `REDIRECT_REFUSED`, `TOO_MANY_REDIRECTS`.
 */
export async function exchange(req: ExchangeRequest): Promise<ExchangeResponse> {
  const secrets = [...Object.values(req.jobHeaders), ...(req.secrets ?? [])];
  const firstOrigin = new URL(req.url).origin;
  let url = req.url;
  let method = req.method;
  let body = req.body;
  let headers = { ...req.headers };
  let withJobHeaders = true;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { ...headers, ...(withJobHeaders ? req.jobHeaders : {}) },
        body,
        redirect: 'manual',
        signal: req.signal,
      });
    } catch (err) {
      if (req.signal.aborted) throw req.signal.reason;
      throw new ExchangeError('NETWORK', scrub(String((err as Error).cause ?? (err as Error).message), secrets));
    }
    const location = res.headers.get('location');
    if (!REDIRECT.has(res.status) || location === null || req.redirects === 'none') {
      const { text, bytes } = await readBody(res, req.keepBodyBytes, req.signal);
      return { status: res.status, origin: new URL(url).origin, body: scrub(text, secrets), bodyBytes: bytes, redirects: hop };
    }
    await res.body?.cancel().catch(() => undefined);
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new ExchangeError('REDIRECT_REFUSED', `answered ${res.status} with a Location that is not a URL; not followed`);
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') {
      throw new ExchangeError('REDIRECT_REFUSED', `answered ${res.status}, a redirect to a ${next.protocol} URL; only http and https are followed`);
    }
    if (hop >= MAX_REDIRECTS) throw new ExchangeError('TOO_MANY_REDIRECTS', `more than ${MAX_REDIRECTS} redirects; stopped at ${next.origin}`);
    next.username = '';
    next.password = '';
    const elsewhere = next.origin !== firstOrigin;
    if (elsewhere && req.redirects === 'same-origin') {
      throw new ExchangeError(
        'REDIRECT_REFUSED',
        `answered ${res.status}, a redirect to another origin (${next.origin}); not followed (redirects: same-origin): ` +
          'call that URL directly, or set redirects: any to follow it without the job\'s headers and body',
      );
    }
    if (((res.status === 301 || res.status === 302) && method === 'POST') || (res.status === 303 && method !== 'GET' && method !== 'HEAD')) {
      method = 'GET';
      body = undefined;
      headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !k.toLowerCase().startsWith('content-')));
    }
    if (elsewhere && body !== undefined) {
      throw new ExchangeError(
        'REDIRECT_REFUSED',
        `answered ${res.status}, a redirect to another origin (${next.origin}) that would re-send the request body; not followed`,
      );
    }
    if (elsewhere) withJobHeaders = false;
    url = next.href;
  }
}

/** Reads the whole body, keeping its first `keep` bytes; stops with the signal's reason when it fires. */
async function readBody(res: Response, keep: number, signal: AbortSignal): Promise<{ text: string; bytes: number }> {
  if (!res.body) return { text: '', bytes: 0 };
  const reader = res.body.getReader();
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (keptBytes < keep) {
        const part = value.slice(0, keep - keptBytes); // a copy: the chunk itself is not held
        kept.push(part);
        keptBytes += part.byteLength;
      }
    }
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw new ExchangeError('NETWORK', `reading the answer failed: ${String((err as Error).cause ?? (err as Error).message)}`);
  } finally {
    reader.releaseLock();
  }
  return { text: Buffer.concat(kept).toString('utf8'), bytes };
}

/**
 * `text` with every secret replaced by `***`. Values shorter than 4 characters are left alone: they are not secrets,
 * and replacing them would garble the message.
 */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.replaceAll(s, '***');
  return out;
}
