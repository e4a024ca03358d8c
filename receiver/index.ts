/**
 * `cronflock/receiver`: what a service that cronflock calls needs to refuse stale or forged work.
 *
 * - {@link verifySignature} / {@link verifySignatureValue}: the `x-cronflock-signature` check (HMAC-SHA256 over
 *   `t.body`, a timestamp tolerance, two keys during a rotation), and {@link createReplayGuard} for replays within
 *   the tolerance.
 * - {@link acceptFencingToken}: refuses a fencing token lower than the highest seen for an occurrence, with an
 *   in-memory, a Redis and a Postgres (one statement) store.
 * - {@link receiveCronflockCall} (node:http) and {@link cronflockMiddleware} (Express): all of the above on a
 *   request.
 *
 * No dependencies: the Redis and Postgres stores take your client (ioredis, pg).
 */
export { SIGNATURE_HEADER, DEFAULT_TOLERANCE_S, signPayload, signatureHeaderValue, verifySignatureValue } from './signature.js';
export type { SignatureCheck, SignatureRefusal, VerifyOptions } from './signature.js';
export { createReplayGuard, type ReplayGuard } from './replay.js';
export { acceptFencingToken, memoryFencingStore, redisFencingStore, postgresFencingStore } from './fencing.js';
export type { FencingStore, PgQueryable, RedisEvalClient } from './fencing.js';
export { checkCronflockCall, cronflockMiddleware, receiveCronflockCall, verifySignature } from './node.js';
export type { ReceiveOptions, ReceiveResult } from './node.js';
