/**
 * The signature cronflock puts on what it sends (http job bodies, notification webhooks), and its check.
 *
 * Header (Stripe's scheme, chosen because receivers know it and it binds a time to the body):
 *
 *     x-cronflock-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key, t + "." + raw body)>[,v1=<hex>]
 *
 * One `v1=` per signing key: during a key rotation cronflock signs with the new and the previous key, so a
 * receiver that knows either accepts. The timestamp lets a receiver refuse a replay after its tolerance
 * (default 300 s); within the tolerance, a replay has the same signature, which {@link ReplayGuard} refuses.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Name of the signature header (lower case, as Node's `IncomingMessage.headers` has it). */
export const SIGNATURE_HEADER = 'x-cronflock-signature';

/** Default largest |receiver now − t| in seconds (Stripe's default, 5 minutes). */
export const DEFAULT_TOLERANCE_S = 300;

/** Hex HMAC-SHA256 of `${timestampS}.${body}` under `key`. */
export function signPayload(key: string | Buffer, timestampS: number, body: string | Buffer): string {
  return createHmac('sha256', key).update(`${timestampS}.`).update(body).digest('hex');
}

/**
 * The header value signing `body` at `timestampS` (default: now) with each of `keys` (the current key first,
 * then the previous one during a rotation). Throws when `keys` is empty.
 */
export function signatureHeaderValue(keys: readonly (string | Buffer)[], body: string | Buffer, timestampS = Math.floor(Date.now() / 1000)): string {
  if (keys.length === 0) throw new Error('signatureHeaderValue: no signing key');
  return [`t=${timestampS}`, ...keys.map((k) => `v1=${signPayload(k, timestampS, body)}`)].join(',');
}

/** Why a signature was refused. */
export type SignatureRefusal = 'missing' | 'malformed' | 'expired' | 'mismatch';

/** Result of {@link verifySignatureValue} and {@link verifySignature}. */
export type SignatureCheck =
  | { ok: true; timestampS: number; signature: string }
  | { ok: false; reason: SignatureRefusal; message: string };

/** Options of a signature check. */
export interface VerifyOptions {
  /** Keys the receiver accepts (the current and, during a rotation, the previous one). At least one. */
  keys: readonly (string | Buffer)[];
  /** Largest |now − t| in seconds (default {@link DEFAULT_TOLERANCE_S}). */
  toleranceS?: number;
  /** The receiver's clock, unix seconds (default: `Date.now()`); for tests. */
  nowS?: number;
}

/**
 * Checks a header value against the raw body: well formed, `t` within the tolerance, and some `v1` equal (in
 * constant time) to the HMAC under some key. Never throws for bad input; throws only when `keys` is empty.
 */
export function verifySignatureValue(header: string | undefined, body: string | Buffer, o: VerifyOptions): SignatureCheck {
  if (o.keys.length === 0) throw new Error('verifySignature: no keys to check against');
  if (!header) return { ok: false, reason: 'missing', message: `no ${SIGNATURE_HEADER} header` };
  let t: number | undefined;
  const sigs: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (eq < 0) return { ok: false, reason: 'malformed', message: `${SIGNATURE_HEADER}: "${part.slice(0, 20)}" is not name=value` };
    if (name === 't' && /^\d{1,12}$/.test(value)) t = Number(value);
    else if (name === 'v1' && /^[0-9a-f]{64}$/.test(value)) sigs.push(value);
  }
  if (t === undefined || sigs.length === 0) {
    return { ok: false, reason: 'malformed', message: `${SIGNATURE_HEADER} needs t=<unix seconds> and v1=<64 hex digits>` };
  }
  const now = o.nowS ?? Math.floor(Date.now() / 1000);
  const tolerance = o.toleranceS ?? DEFAULT_TOLERANCE_S;
  if (Math.abs(now - t) > tolerance) {
    return { ok: false, reason: 'expired', message: `signed at ${t}, ${now - t} s from now: outside the tolerance of ${tolerance} s (a replay, or a clock off)` };
  }
  for (const key of o.keys) {
    const want = Buffer.from(signPayload(key, t, body), 'hex');
    for (const s of sigs) {
      if (timingSafeEqual(want, Buffer.from(s, 'hex'))) return { ok: true, timestampS: t, signature: s };
    }
  }
  return { ok: false, reason: 'mismatch', message: 'no v1 signature matches the body under any of the keys' };
}
