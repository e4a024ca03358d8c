/**
 * Receiving cronflock's calls in Node: a function for `node:http` servers and an Express-compatible middleware.
 * Both read the raw body (bounded), check the signature (and replays), parse the JSON, and, when the body
 * carries `occurrence` and `fencingToken` (an http job's call), apply the fencing guard.
 *
 *     import { createServer } from 'node:http';
 *     import { receiveCronflockCall, memoryFencingStore, createReplayGuard } from 'cronflock/receiver';
 *     const opts = { keys: [process.env.HOOK_KEY], fencing: memoryFencingStore(), replay: createReplayGuard() };
 *     createServer(async (req, res) => {
 *       const r = await receiveCronflockCall(req, opts);
 *       if (!r.ok) { res.writeHead(r.status).end(r.message); return; }
 *       // r.body.occurrence, r.body.fencingToken …: do the work
 *       res.writeHead(200).end('ok');
 *     }).listen(8080);
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { acceptFencingToken, type FencingStore } from './fencing.js';
import type { ReplayGuard } from './replay.js';
import { SIGNATURE_HEADER, verifySignatureValue, type SignatureCheck, type VerifyOptions } from './signature.js';

/** Options of {@link receiveCronflockCall} and {@link cronflockMiddleware}. */
export interface ReceiveOptions extends VerifyOptions {
  /** Refuses a second use of the same signature within the tolerance (409). */
  replay?: ReplayGuard;
  /** Refuses a fencing token lower than the highest seen for the body's `occurrence` (409). */
  fencing?: FencingStore;
  /** Largest body read, in bytes (default 1 MiB); a larger one is refused with 413. */
  maxBytes?: number;
}

/** The outcome of a check: the parsed body, or the HTTP status to answer with and why. */
export type ReceiveResult =
  | { ok: true; body: Record<string, unknown>; raw: Buffer; timestampS: number }
  | { ok: false; status: 400 | 401 | 409 | 413; reason: string; message: string };

/**
 * Checks a request whose raw body is already at hand (any framework): signature, replay, JSON, fencing token.
 * Statuses: 401 bad or missing signature (or outside the tolerance), 409 replay or stale fencing token,
 * 400 not JSON.
 */
export async function checkCronflockCall(
  headers: Record<string, string | string[] | undefined>,
  raw: Buffer | string,
  o: ReceiveOptions,
): Promise<ReceiveResult> {
  const buf = typeof raw === 'string' ? Buffer.from(raw) : raw;
  const header = headers[SIGNATURE_HEADER];
  const sig: SignatureCheck = verifySignatureValue(Array.isArray(header) ? header.join(',') : header, buf, o);
  if (!sig.ok) return { ok: false, status: 401, reason: sig.reason, message: sig.message };
  if (o.replay && !o.replay.firstUse(sig.signature, sig.timestampS)) {
    return { ok: false, status: 409, reason: 'replayed', message: 'this signature was already used: a replayed request' };
  }
  let body: Record<string, unknown>;
  try {
    const parsed: unknown = buf.length === 0 ? {} : JSON.parse(buf.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    body = parsed as Record<string, unknown>;
  } catch {
    return { ok: false, status: 400, reason: 'not-json', message: 'the body is not a JSON object' };
  }
  if (o.fencing && typeof body.occurrence === 'string' && typeof body.fencingToken === 'number') {
    if (!(await acceptFencingToken(o.fencing, body.occurrence, body.fencingToken))) {
      return {
        ok: false,
        status: 409,
        reason: 'stale-fencing-token',
        message: `fencing token ${body.fencingToken} of ${body.occurrence} is lower than one already seen: a stale claimant`,
      };
    }
  }
  return { ok: true, body, raw: buf, timestampS: sig.timestampS };
}

/**
 * Signed-body check for any object with `headers` and the raw `body` (a string or Buffer): the Stripe-style
 * `verifySignature(req)`. Does not parse or fence; see {@link checkCronflockCall} for the whole check.
 */
export function verifySignature(req: { headers: Record<string, string | string[] | undefined>; body: string | Buffer }, o: VerifyOptions): SignatureCheck {
  const header = req.headers[SIGNATURE_HEADER];
  return verifySignatureValue(Array.isArray(header) ? header.join(',') : header, req.body, o);
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > maxBytes) return null;
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** Reads a `node:http` request's body (at most `maxBytes`) and runs {@link checkCronflockCall} on it. */
export async function receiveCronflockCall(req: IncomingMessage, o: ReceiveOptions): Promise<ReceiveResult> {
  const raw = await readBody(req, o.maxBytes ?? 1 << 20);
  if (raw === null) return { ok: false, status: 413, reason: 'too-large', message: `the body is larger than ${o.maxBytes ?? 1 << 20} bytes` };
  return checkCronflockCall(req.headers, raw, o);
}

/**
 * Express (or Connect) middleware: on success sets `req.cronflock` to the parsed body and calls `next()`; else
 * answers the status with the reason. Mount it before any JSON body parser, or after `express.raw({ type:
 * 'application/json' })` (the signature is over the raw bytes; a parsed body cannot be checked).
 */
export function cronflockMiddleware(o: ReceiveOptions) {
  return (req: IncomingMessage & { body?: unknown; cronflock?: Record<string, unknown> }, res: ServerResponse, next: (err?: unknown) => void): void => {
    const pre = req.body;
    let pending: Promise<ReceiveResult>;
    if (Buffer.isBuffer(pre) || typeof pre === 'string') pending = checkCronflockCall(req.headers, pre, o);
    else if (pre !== undefined && !(typeof pre === 'object' && pre !== null && Object.keys(pre).length === 0)) {
      next(new Error('cronflockMiddleware: the body was already parsed; mount it before express.json(), or use express.raw({ type: "application/json" })'));
      return;
    } else pending = receiveCronflockCall(req, o);
    pending.then(
      (r) => {
        if (!r.ok) {
          res.statusCode = r.status;
          res.setHeader('content-type', 'text/plain; charset=utf-8');
          res.end(`${r.reason}: ${r.message}\n`);
          return;
        }
        req.cronflock = r.body;
        next();
      },
      (err: unknown) => next(err),
    );
  };
}
