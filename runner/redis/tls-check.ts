/**
 * A `rediss://` URL aimed at a Redis that does not speak TLS: the client's handshake waits for an answer that
 * never comes (Redis reads the ClientHello as an unfinished inline command), and ioredis reports
 * `connect ETIMEDOUT` after its connect timeout, again on every retry — about 21 s for a CLI command and no
 * hint. This check tells that case apart in about a second: when the TLS handshake with a node that accepts
 * TCP connections does not complete within a second, the node is asked `PING` in plain text; a Redis answer
 * (`+PONG`, or `-NOAUTH …`) proves it is a plain server.
 *
 * Only a plain-text Redis answer is a verdict. A node that does not accept connections, or answers neither
 * TLS nor plain Redis, is left to the normal connection, which reports what it finds.
 */
import { connect as connectTcp } from 'node:net';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import type { RedisEndpoint } from './url.js';

/** How long a TLS handshake may take before the node is asked in plain text. */
const HANDSHAKE_WAIT_MS = 1_000;
/** How long the plain-text question waits for an answer. */
const PLAIN_ANSWER_WAIT_MS = 1_000;

/** Thrown when a TLS URL names a server that answers plain-text Redis. */
export class RedisNotTlsError extends Error {
  readonly code = 'REDIS_NOT_TLS';
  constructor(readonly address: string) {
    super(
      `TLS handshake failed — is the server TLS? ${address} answers plain-text Redis, not TLS: ` +
        'use redis:// (or redis+sentinel://, redis+cluster://), or the port where the server listens for TLS',
    );
    this.name = 'RedisNotTlsError';
  }
}

type Handshake = 'tls' | 'unreachable' | 'no-tls';

/** Tries a TLS handshake (certificates are not checked here: only whether TLS is spoken at all). */
function tryHandshake(host: string, port: number): Promise<Handshake> {
  return new Promise((resolve) => {
    let tcpUp = false;
    const socket: TLSSocket = connectTls({ host, port, rejectUnauthorized: false, ...(isIp(host) ? {} : { servername: host }) });
    const done = (r: Handshake): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done(tcpUp ? 'no-tls' : 'unreachable'), HANDSHAKE_WAIT_MS);
    socket.once('connect', () => (tcpUp = true)); // the TCP connection, before the handshake
    socket.once('secureConnect', () => done('tls'));
    socket.once('error', () => done(tcpUp ? 'no-tls' : 'unreachable'));
  });
}

/** Asks `PING` in plain text; true when the answer is a Redis reply (`+…` or `-…`). */
function answersPlainRedis(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectTcp({ host, port });
    const done = (r: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done(false), PLAIN_ANSWER_WAIT_MS);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (b: Buffer) => done(/^[+-][A-Za-z]/.test(b.toString('latin1', 0, 16))));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

const isIp = (host: string): boolean => /^[\d.]+$/.test(host) || host.includes(':');

/**
 * For a TLS endpoint, checks that its nodes do not answer plain-text Redis. Resolves at once for a plain
 * endpoint, and within about 2 s otherwise.
 * @throws RedisNotTlsError naming the first node that answers plain-text Redis.
 */
export async function checkTlsEndpoint(e: RedisEndpoint): Promise<void> {
  if (!e.tls) return;
  const verdicts = await Promise.all(
    e.nodes.map(async (n) => {
      if ((await tryHandshake(n.host, n.port)) !== 'no-tls') return undefined;
      return (await answersPlainRedis(n.host, n.port)) ? `${n.host}:${n.port}` : undefined;
    }),
  );
  const plain = verdicts.find((v) => v !== undefined);
  if (plain) throw new RedisNotTlsError(plain);
}
