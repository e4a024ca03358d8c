/**
 * Encryption of a whole archive: AES-256-GCM under a random 32-byte data key, in fixed-size chunks (streamed),
 * the data key wrapped (AES-256-GCM) by a key-encryption key (KEK) taken from a Kubernetes Secret, a file or an
 * environment variable.
 *
 * Envelope (`.tar.gz.enc`):
 *
 *   "CFLKENC1" (8 bytes) | header length (uint32 BE) | header (JSON, UTF-8) | chunk 0 | chunk 1 | … | final chunk
 *
 * The header is `{"alg":"AES-256-GCM-STREAM-64K","chunkSize":65536,"keyId":"k1-…","wrap":{"alg":"A256GCM",
 * "nonce":<b64 12 bytes>,"key":<b64 wrapped data key + 16-byte tag>}}`; the key id tells a reader which KEK to
 * use before it decrypts anything. Each chunk is `ciphertext | 16-byte tag` of exactly `chunkSize` plaintext
 * bytes, except the final one (0 to chunkSize bytes). Like age's STREAM construction, the 12-byte nonce of chunk
 * i is `i` as an 11-byte big-endian counter followed by a final flag (1 on the last chunk, else 0), and the AAD
 * of every chunk is the SHA-256 of the magic, length and header bytes plus the same index and flag: a reordered,
 * dropped, duplicated or appended chunk, a truncation at a chunk boundary, or a changed header all fail
 * authentication. The data key is fresh for every archive, so counter nonces never repeat under one key.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Transform, type TransformCallback } from 'node:stream';
import { getObject, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { BackupError } from './errors.js';

/** The envelope's magic bytes. */
export const MAGIC = Buffer.from('CFLKENC1', 'ascii');
/** Algorithm name written in the header and the manifest. */
export const ALGORITHM = 'AES-256-GCM-STREAM-64K';
/** Plaintext bytes per chunk. */
export const CHUNK_SIZE = 64 * 1024;
const TAG = 16;
const MAX_HEADER = 64 * 1024;

/** Where a key-encryption key comes from (exactly one field). */
export type KeySource =
  | { secret: { namespace: string; name: string; key: string } }
  | { file: string }
  | { env: string };

interface EnvelopeHeader {
  alg: string;
  chunkSize: number;
  keyId: string;
  wrap: { alg: 'A256GCM'; nonce: string; key: string };
}

/**
 * The id of a KEK: `k1-` and the first 16 hex digits of SHA-256("cronflock-backup-key-id\0" ‖ key). A
 * fingerprint, not a secret: it lets a reader pick the right key among several (key rotation) without trying
 * each. `RangeError` when the key is not 32 bytes.
 */
export function keyIdOf(kek: Uint8Array): string {
  if (kek.length !== 32) throw new RangeError(`a key-encryption key is 32 bytes, got ${kek.length}`);
  return `k1-${createHash('sha256').update('cronflock-backup-key-id\0').update(kek).digest('hex').slice(0, 16)}`;
}

/**
 * Decodes key material: 32 raw bytes, or text holding 32 bytes as base64 (e.g. `openssl rand -base64 32`) or
 * as 64 hex digits. Whitespace around text is ignored. `BackupError` `KEY` otherwise (`where` names the source).
 */
export function decodeKey(material: Uint8Array, where: string): Buffer {
  const buf = Buffer.from(material);
  const text = buf.toString('utf8').trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(text)) {
    const b = Buffer.from(text, 'base64');
    if (b.length === 32) return b;
  }
  if (buf.length === 32) return buf;
  throw new BackupError('KEY', `${where}: not a 32-byte key (give base64 of 32 random bytes, e.g. \`openssl rand -base64 32\`, or 64 hex digits)`);
}

/**
 * Loads a KEK from its source: a key of a Kubernetes Secret (read with `client`), a file (path as given;
 * relative paths are resolved by the caller), or an environment variable. Errors: `BackupError` `KEY` naming the
 * source (missing Secret or key, unreadable file, unset variable, not 32 bytes).
 */
export async function loadKey(source: KeySource, options: { client?: KubeClient; signal?: AbortSignal } = {}): Promise<Buffer> {
  if ('env' in source) {
    const v = process.env[source.env];
    if (v === undefined || v === '') throw new BackupError('KEY', `encryption key: environment variable ${source.env} is not set`);
    return decodeKey(Buffer.from(v, 'utf8'), `encryption key in $${source.env}`);
  }
  if ('file' in source) {
    let data: Buffer;
    try {
      data = await readFile(source.file);
    } catch (e) {
      throw new BackupError('KEY', `encryption key: cannot read file ${source.file}: ${(e as Error).message}`, { cause: e });
    }
    return decodeKey(data, `encryption key file ${source.file}`);
  }
  const { namespace, name, key } = source.secret;
  const where = `Secret ${namespace}/${name} key ${key}`;
  if (!options.client) throw new BackupError('KEY', `encryption key: ${where} needs a Kubernetes client`);
  let secret: { data?: Record<string, string> };
  try {
    secret = await getObject<KubeObject & { data?: Record<string, string> }>(options.client, { apiVersion: 'v1', kind: 'Secret', namespace, name }, options.signal ? { signal: options.signal } : {});
  } catch (e) {
    throw new BackupError('KEY', `encryption key: cannot read ${where}: ${(e as Error).message}`, { cause: e });
  }
  const b64 = secret.data?.[key];
  if (b64 === undefined) throw new BackupError('KEY', `encryption key: ${where} does not exist (keys: ${Object.keys(secret.data ?? {}).join(', ') || 'none'})`);
  return decodeKey(Buffer.from(b64, 'base64'), `encryption key in ${where}`);
}

function nonceFor(index: number, final: boolean): Buffer {
  const n = Buffer.alloc(12);
  n.writeBigUInt64BE(BigInt(index), 3);
  n[11] = final ? 1 : 0;
  return n;
}

function aadFor(headerHash: Buffer, index: number, final: boolean): Buffer {
  const a = Buffer.alloc(headerHash.length + 9);
  headerHash.copy(a, 0);
  a.writeBigUInt64BE(BigInt(index), headerHash.length);
  a[headerHash.length + 8] = final ? 1 : 0;
  return a;
}

function wrapAad(keyId: string): Buffer {
  return Buffer.from(`cronflock-backup-v1 key-wrap ${keyId}`, 'utf8');
}

/**
 * A Transform that encrypts its input into the envelope under `kek` (a fresh data key per stream).
 * `keyId` is {@link keyIdOf}(kek). Memory: one chunk.
 */
export function createEncryptStream(kek: Uint8Array): Transform {
  const keyId = keyIdOf(kek);
  const dataKey = randomBytes(32);
  const wrapNonce = randomBytes(12);
  const w = createCipheriv('aes-256-gcm', kek, wrapNonce);
  w.setAAD(wrapAad(keyId));
  const wrapped = Buffer.concat([w.update(dataKey), w.final(), w.getAuthTag()]);
  const header: EnvelopeHeader = { alg: ALGORITHM, chunkSize: CHUNK_SIZE, keyId, wrap: { alg: 'A256GCM', nonce: wrapNonce.toString('base64'), key: wrapped.toString('base64') } };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(headerBytes.length);
  const prefix = Buffer.concat([MAGIC, len, headerBytes]);
  const headerHash = createHash('sha256').update(prefix).digest();
  let index = 0;
  let pending: Buffer[] = [];
  let pendingLen = 0;
  let started = false;
  const seal = (plain: Buffer, final: boolean): Buffer => {
    const c = createCipheriv('aes-256-gcm', dataKey, nonceFor(index, final));
    c.setAAD(aadFor(headerHash, index, final));
    const out = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
    index++;
    return out;
  };
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      if (!started) {
        this.push(prefix);
        started = true;
      }
      pending.push(chunk);
      pendingLen += chunk.length;
      // Emit full chunks only while more data is known to follow: the last chunk is sealed as final in flush.
      if (pendingLen > CHUNK_SIZE) {
        let all = Buffer.concat(pending);
        while (all.length > CHUNK_SIZE) {
          this.push(seal(all.subarray(0, CHUNK_SIZE), false));
          all = all.subarray(CHUNK_SIZE);
        }
        pending = [Buffer.from(all)];
        pendingLen = all.length;
      }
      cb();
    },
    flush(cb: TransformCallback) {
      if (!started) this.push(prefix);
      this.push(seal(Buffer.concat(pending), true));
      pending = [];
      cb();
    },
  });
}

/**
 * Reads the envelope's header from the start of `head` (at least the first 12 bytes + header length). Returns
 * undefined when more bytes are needed. `BackupError` `VERIFY` when the bytes are not an envelope.
 */
export function parseEnvelopeHeader(head: Buffer): { header: EnvelopeHeader; length: number; headerHash: Buffer } | undefined {
  if (head.length < 12) return undefined;
  if (!head.subarray(0, 8).equals(MAGIC)) throw new BackupError('VERIFY', 'not an encrypted cronflock backup (bad magic bytes)');
  const n = head.readUInt32BE(8);
  if (n > MAX_HEADER) throw new BackupError('VERIFY', `encrypted backup: header of ${n} bytes is too long`);
  if (head.length < 12 + n) return undefined;
  let header: EnvelopeHeader;
  try {
    header = JSON.parse(head.subarray(12, 12 + n).toString('utf8')) as EnvelopeHeader;
  } catch (e) {
    throw new BackupError('VERIFY', 'encrypted backup: header is not JSON', { cause: e });
  }
  if (header.alg !== ALGORITHM || header.chunkSize !== CHUNK_SIZE || typeof header.keyId !== 'string' || header.wrap?.alg !== 'A256GCM') {
    throw new BackupError('VERIFY', `encrypted backup: unsupported envelope (alg ${String(header.alg)}, chunk size ${String(header.chunkSize)})`);
  }
  return { header, length: 12 + n, headerHash: createHash('sha256').update(head.subarray(0, 12 + n)).digest() };
}

/**
 * A Transform that decrypts an envelope with whichever of `keys` has the header's key id, checking every chunk.
 * Errors (emitted on the stream): `BackupError` `KEY` when no key matches (message names the id), `VERIFY` for a
 * bad header, a chunk that fails authentication (tampered, reordered), or a truncated stream. Memory: one chunk.
 * `onKeyId` is called with the archive's key id once the header is read.
 */
export function createDecryptStream(keys: readonly Uint8Array[], onKeyId?: (keyId: string) => void): Transform {
  let head: Buffer | undefined = Buffer.alloc(0);
  let dataKey: Buffer | undefined;
  let headerHash: Buffer | undefined;
  let buf: Buffer = Buffer.alloc(0);
  let index = 0;
  const open = (box: Buffer, final: boolean): Buffer => {
    const d = createDecipheriv('aes-256-gcm', dataKey!, nonceFor(index, final));
    d.setAAD(aadFor(headerHash!, index, final));
    d.setAuthTag(box.subarray(box.length - TAG));
    try {
      const out = Buffer.concat([d.update(box.subarray(0, box.length - TAG)), d.final()]);
      index++;
      return out;
    } catch (e) {
      throw new BackupError('VERIFY', `encrypted backup: chunk ${index} fails authentication (the archive was changed, reordered or truncated)`, { cause: e });
    }
  };
  const unwrap = (header: EnvelopeHeader): Buffer => {
    const kek = keys.find((k) => k.length === 32 && keyIdOf(k) === header.keyId);
    if (!kek) {
      const have = keys.filter((k) => k.length === 32).map(keyIdOf);
      throw new BackupError('KEY', `the backup is encrypted with key ${header.keyId}; the keys given are ${have.join(', ') || 'none'} (give the key it was made with)`);
    }
    const wrapped = Buffer.from(header.wrap.key, 'base64');
    const d = createDecipheriv('aes-256-gcm', kek, Buffer.from(header.wrap.nonce, 'base64'));
    d.setAAD(wrapAad(header.keyId));
    d.setAuthTag(wrapped.subarray(wrapped.length - TAG));
    try {
      return Buffer.concat([d.update(wrapped.subarray(0, wrapped.length - TAG)), d.final()]);
    } catch (e) {
      throw new BackupError('VERIFY', 'encrypted backup: the wrapped data key fails authentication', { cause: e });
    }
  };
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      try {
        if (head !== undefined) {
          head = Buffer.concat([head, chunk]);
          const parsed = parseEnvelopeHeader(head);
          if (!parsed) return cb();
          onKeyId?.(parsed.header.keyId);
          dataKey = unwrap(parsed.header);
          headerHash = parsed.headerHash;
          chunk = head.subarray(parsed.length);
          head = undefined;
        }
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
        const box = CHUNK_SIZE + TAG;
        // A full box is non-final only if more bytes follow it; the last one is opened in flush.
        let off = 0;
        while (buf.length - off > box) {
          this.push(open(buf.subarray(off, off + box), false));
          off += box;
        }
        buf = Buffer.from(buf.subarray(off));
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
    flush(cb: TransformCallback) {
      try {
        if (head !== undefined) throw new BackupError('VERIFY', 'encrypted backup: truncated inside its header');
        if (buf.length < TAG) throw new BackupError('VERIFY', 'encrypted backup: truncated (no final chunk)');
        this.push(open(buf, true));
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
  });
}
