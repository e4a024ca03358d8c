/**
 * Signing what cronflock sends: an http job's body (schedule `signing:`) and notification webhooks
 * (`notify.webhook.secretEnv`). The scheme and its check live in receiver/signature.ts, which the package
 * exports for receivers (`cronflock/receiver`), so sender and receiver cannot drift apart.
 */
import { SIGNATURE_HEADER, signatureHeaderValue } from '../../receiver/signature.js';
import type { SecretRef } from './config.js';
import { readSecret } from './secrets.js';

/**
 * The headers that sign `body` now with each key (current first): `{ 'x-cronflock-signature': 't=…,v1=…' }`,
 * or `{}` without keys. Throws SecretUnavailableError when a key cannot be read (the call must not go unsigned).
 */
export function signatureHeaders(keys: readonly SecretRef[], body: string): Record<string, string> {
  if (keys.length === 0) return {};
  return { [SIGNATURE_HEADER]: signatureHeaderValue(keys.map(readSecret), body) };
}
