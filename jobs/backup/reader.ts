/**
 * Reading archives back: {@link openBackup} (used by the backup's own read-back verification and by restore)
 * and {@link readArchiveFiles}, a streamed tar.gz reader. Memory: one file of the archive at a time, at most
 * `limits.maxObjectSize` (plus, while opening, one path, hash and identity per object).
 *
 * Nothing read from an archive is used before it is checked: sizes against the limits (limits.ts) as they are
 * read, the manifest against its schema (manifest-schema.ts), and every object file against its manifest entry
 * (sha256, and the apiVersion, kind, namespace and name it holds). Every refusal is a `BackupError` `VERIFY` or
 * `LIMIT` made by `damagedArchive`: "damaged archive <name>: <what>".
 */
import { createHash } from 'node:crypto';
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { createDecryptStream } from './encryption.js';
import { BackupError, damagedArchive, isBackupError } from './errors.js';
import {
  FORMAT_VERSION,
  MANIFEST_PATH,
  parseBackupName,
  type BackupManifest,
  type BackupObject,
  type BackupStorage,
  type ManifestEntry,
  type OpenBackupOptions,
  type OpenedBackup,
} from './format.js';
import { DEFAULT_LIMITS, formatByteSize, limitHint, RATIO_FLOOR_BYTES, type ArchiveLimits } from './limits.js';
import { validateManifest } from './manifest-schema.js';

/** One file of an archive. */
export interface ArchiveFile {
  path: string;
  data: Buffer;
}

/** Files read ahead of the consumer at most, and their bytes at most. */
const MAX_QUEUE = 16;
const MAX_QUEUE_BYTES = 16 * 1024 * 1024;

/**
 * Deepest nesting of an object file's JSON. Deeper objects overflow the stack of every recursive consumer
 * (structuredClone, JSON.stringify: "Maximum call stack size exceeded" near 10,000 levels); no Kubernetes object
 * comes near it.
 */
export const MAX_OBJECT_DEPTH = 1000;

/** A reader's refusal without the archive's name (openBackup adds it). */
function refuse(what: string, code: 'VERIFY' | 'LIMIT' = 'VERIFY', cause?: unknown): BackupError {
  return new BackupError(code, what, { what, ...(cause !== undefined ? { cause } : {}) });
}

/**
 * Streams the files of a tar.gz from `source`, checking every size against `limits` (default
 * `DEFAULT_LIMITS`) before spending memory or time on it: an entry's size and the archive's declared total from
 * each tar header (before its data is read), the number of entries, the bytes gunzip produces and their ratio to
 * the compressed bytes. Errors (thrown by the iterator): `BackupError` `LIMIT` for a limit, `VERIFY` for anything
 * that is not a well-formed gzip-compressed tar of regular files (bad gzip, bad tar header, truncation, links or
 * devices; directories are skipped), each with `what` set; or the source's own error (e.g. a decryption `VERIFY`).
 */
export async function* readArchiveFiles(source: NodeJS.ReadableStream, options: { signal?: AbortSignal; limits?: ArchiveLimits } = {}): AsyncGenerator<ArchiveFile> {
  const { signal } = options;
  const limits = options.limits ?? DEFAULT_LIMITS;
  const src = source as Readable;
  // Decompressed here, not by the tar parser, so that the bytes on both sides are counted.
  const gunzip = createGunzip();
  const parser = new Parser({ strict: true, brotli: false, zstd: false, maxDecompressionRatio: Infinity });
  const queue: ArchiveFile[] = [];
  let queuedBytes = 0;
  let failure: unknown;
  let ended = false;
  let wake: (() => void) | undefined;
  let compressed = 0;
  let uncompressed = 0;
  let declared = 0;
  let entries = 0;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const fail = (e: unknown): void => {
    if (failure === undefined) failure = e;
    notify();
  };
  // The gunzip output stops while the parser is behind or the queue is full (and the source with it).
  let parserFull = false;
  let queueFull = false;
  const flow = (): void => {
    if (failure !== undefined) return;
    if (parserFull || queueFull) gunzip.pause();
    else gunzip.resume();
  };
  parser.on('entry', (e: ReadEntry) => {
    if (failure !== undefined) return;
    entries++;
    declared += e.size ?? 0;
    if (entries > limits.maxObjects) return fail(refuse(`more than ${limits.maxObjects} entries (${limitHint('maxObjects')})`, 'LIMIT'));
    if (declared > limits.maxTotalSize) {
      return fail(refuse(`its entries add up to more than ${formatByteSize(limits.maxTotalSize)} (at ${e.path}; ${limitHint('maxTotalSize')})`, 'LIMIT'));
    }
    if (e.type === 'Directory') {
      // Ours have none; backup-restore-operator's tarballs list their directories: nothing to read in them.
      e.resume();
      return;
    }
    if (e.type !== 'File' && e.type !== 'OldFile') {
      fail(refuse(`entry ${e.path} is a ${e.type}, not a file`));
      return;
    }
    const [max, limit] = e.path === MANIFEST_PATH ? [limits.maxManifestSize, 'maxManifestSize' as const] : [limits.maxObjectSize, 'maxObjectSize' as const];
    if ((e.size ?? 0) > max) {
      // Refused from the header: none of its bytes are read.
      fail(refuse(`entry ${e.path} is ${formatByteSize(e.size ?? 0)}, more than the ${formatByteSize(max)} a ${e.path === MANIFEST_PATH ? 'manifest' : 'file'} may be (${limitHint(limit)})`, 'LIMIT'));
      return;
    }
    const chunks: Buffer[] = [];
    e.on('data', (c: Buffer) => chunks.push(c));
    e.on('end', () => {
      if (failure !== undefined) return;
      const data = Buffer.concat(chunks);
      queue.push({ path: e.path, data });
      queuedBytes += data.length;
      if (queue.length >= MAX_QUEUE || queuedBytes >= MAX_QUEUE_BYTES) {
        queueFull = true;
        flow();
      }
      notify();
    });
  });
  parser.on('error', (e: Error) => fail(refuse(`not a well-formed tar: ${e.message}`, 'VERIFY', e)));
  parser.on('warn', (code: string, msg: string | Error) => fail(refuse(`not a well-formed tar: ${code}: ${msg instanceof Error ? msg.message : msg}`)));
  parser.on('end', () => {
    ended = true;
    notify();
  });
  parser.on('drain', () => {
    parserFull = false;
    flow();
  });
  gunzip.on('data', (c: Buffer) => {
    if (failure !== undefined) return;
    uncompressed += c.length;
    if (uncompressed > limits.maxTotalSize) {
      return fail(refuse(`it unpacks to more than ${formatByteSize(limits.maxTotalSize)} (${limitHint('maxTotalSize')})`, 'LIMIT'));
    }
    if (uncompressed > RATIO_FLOOR_BYTES && uncompressed > limits.maxCompressionRatio * compressed) {
      return fail(
        refuse(
          `${formatByteSize(compressed)} unpacked to more than ${formatByteSize(uncompressed)}, over ${limits.maxCompressionRatio} times (a decompression bomb? ${limitHint('maxCompressionRatio')})`,
          'LIMIT',
        ),
      );
    }
    if (!parser.write(c)) {
      parserFull = true;
      flow();
    }
  });
  gunzip.on('end', () => parser.end());
  gunzip.on('error', (e: Error) => fail(refuse(`not a gzip stream, or a damaged one: ${e.message}`, 'VERIFY', e)));
  src.on('data', (c: Buffer) => {
    compressed += c.length;
    if (!gunzip.write(c)) src.pause();
  });
  gunzip.on('drain', () => src.resume());
  src.on('end', () => gunzip.end());
  src.on('error', fail);
  const onAbort = (): void => fail(new BackupError('ABORTED', 'reading the archive: aborted'));
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      if (failure !== undefined) throw failure;
      const f = queue.shift();
      if (f) {
        queuedBytes -= f.data.length;
        if (queueFull && queue.length < MAX_QUEUE / 2 && queuedBytes < MAX_QUEUE_BYTES / 2) {
          queueFull = false;
          flow();
        }
        yield f;
        continue;
      }
      if (ended) return;
      await new Promise<void>((r) => (wake = r));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (!ended || failure !== undefined) {
      src.destroy?.();
      gunzip.destroy();
    }
  }
}

/** The plaintext tar.gz bytes of a stored archive: decrypted (and authenticated) when its name ends in `.enc`. */
async function plainStream(
  storage: BackupStorage,
  name: string,
  encrypted: boolean,
  keys: readonly Uint8Array[],
  signal: AbortSignal | undefined,
  onKeyId?: (id: string) => void,
): Promise<Readable> {
  const raw = (await storage.read(name, signal)) as Readable;
  if (!encrypted) return raw;
  if (keys.length === 0) throw new BackupError('KEY', `backup ${name} is encrypted: give its key (encryption.key, or --key-* for the CLI)`);
  const dec = createDecryptStream(keys, onKeyId);
  return pipeline(raw, dec, () => undefined) as unknown as Readable;
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/** What an object file says it is. */
interface Identity {
  apiVersion: unknown;
  kind: unknown;
  namespace: unknown;
  name: unknown;
}

/** Depth of nested objects and arrays in `v` (iterative: deep input must not overflow this either). */
function depthOf(v: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    if (d > max) max = d;
    if (max > MAX_OBJECT_DEPTH) return max;
    for (const c of Object.values(x)) if (c !== null && typeof c === 'object') stack.push([c, d + 1]);
  }
  return max;
}

/** Parses an object file and returns what it says it is. Errors: a refusal naming the file. */
function identityOf(f: ArchiveFile): Identity {
  let o: unknown;
  try {
    o = JSON.parse(f.data.toString('utf8'));
  } catch (e) {
    throw refuse(`${f.path} is not JSON`, 'VERIFY', e);
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw refuse(`${f.path} is not a JSON object`);
  if (depthOf(o) > MAX_OBJECT_DEPTH) throw refuse(`${f.path} is nested more than ${MAX_OBJECT_DEPTH} levels deep`, 'LIMIT');
  const { apiVersion, kind, metadata } = o as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } };
  const md = metadata !== null && typeof metadata === 'object' ? metadata : {};
  // A cluster-scoped object has no namespace; the API server writes none, and an empty one means the same.
  return { apiVersion, kind, namespace: md.namespace === '' ? undefined : md.namespace, name: md.name };
}

const show = (i: Identity): string =>
  `${typeof i.apiVersion === 'string' ? i.apiVersion : JSON.stringify(i.apiVersion ?? null)} ${typeof i.kind === 'string' ? i.kind : JSON.stringify(i.kind ?? null)} ` +
  `${i.namespace === undefined ? '' : `${typeof i.namespace === 'string' ? i.namespace : JSON.stringify(i.namespace)}/`}${typeof i.name === 'string' ? i.name : JSON.stringify(i.name ?? null)}`;

/** What `entry` says its file holds. */
function identityOfEntry(e: ManifestEntry): Identity {
  return { apiVersion: e.group ? `${e.group}/${e.version}` : e.version, kind: e.kind, namespace: e.namespaced ? e.namespace : undefined, name: e.name };
}

/** What {@link openBackup} adds to {@link OpenedBackup} for the writer's own check. */
export interface VerifiedBackup extends OpenedBackup {
  /** Hex SHA-256 of `manifest.json`'s bytes. */
  manifestSha256: string;
  /** Key id named by the envelope (undefined for a plain archive). */
  envelopeKeyId?: string;
}

/**
 * The manifest, checked: a format version this reader knows, then the schema (manifest-schema.ts), then the
 * fields that must agree with the archive: encryption as the file is, the key id the envelope's, and for a file
 * named like a backup (format.ts `parseBackupName`) the manifest's name and schedule (an archive renamed to look
 * newer is refused: in an encrypted archive the name is authenticated).
 */
function checkManifest(raw: unknown, o: { name: string; encrypted: boolean; envelopeKeyId: string | undefined }): BackupManifest {
  const version = (raw as { formatVersion?: unknown } | null)?.formatVersion;
  if (typeof version === 'number' && version > FORMAT_VERSION) {
    throw refuse(`format version ${version} is newer than this cronflock reads (${FORMAT_VERSION}); upgrade cronflock`);
  }
  const checked = validateManifest(raw);
  if ('issues' in checked) throw refuse(`manifest.json: ${checked.issues.join('; ')}${checked.more > 0 ? `; and ${checked.more} more` : ''}`);
  const m = checked.manifest;
  if (o.encrypted !== (m.encryption !== null)) {
    throw refuse(`the manifest says ${m.encryption ? 'encrypted' : 'not encrypted'}, the archive is ${o.encrypted ? 'encrypted' : 'not'}`);
  }
  if (m.encryption && m.encryption.keyId !== o.envelopeKeyId) throw refuse(`manifest key id ${m.encryption.keyId} differs from the envelope's ${o.envelopeKeyId ?? 'none'}`);
  const parsedName = parseBackupName(o.name);
  if (parsedName && (m.schedule !== parsedName.schedule || m.name !== o.name)) {
    throw refuse(`the manifest says this is ${m.name} of schedule ${String(m.schedule)}, not ${o.name} (renamed? restore it under its own name)`);
  }
  return m;
}

/**
 * Opens an archive: reads it once in full (decrypting an `.enc` one with the matching key) within
 * `options.limits`, checks the manifest (see {@link checkManifest}), that every file's sha256 matches its entry,
 * that every object file holds the apiVersion, kind, namespace and name of its entry, that no entry is missing
 * and no file unlisted, and that `manifest.json` is the last entry. Returns the manifest and a second, streamed
 * pass over the objects (see {@link OpenedBackup}). Errors: `BackupError` `NOT_FOUND`, `KEY` (no key, wrong
 * key), `VERIFY` (any mismatch, damage, truncation) and `LIMIT` (over a limit), both "damaged archive <name>:
 * <what>" naming the file and field; `STORAGE`, `ABORTED`.
 */
export async function openBackup(options: OpenBackupOptions): Promise<VerifiedBackup> {
  const { storage, name, signal } = options;
  const limits = options.limits ?? DEFAULT_LIMITS;
  const keys = options.keys ?? [];
  const named = (e: unknown): unknown =>
    isBackupError(e, 'VERIFY', 'LIMIT') && e.archive === undefined ? damagedArchive(name, e.what ?? e.message, e.code as 'VERIFY' | 'LIMIT', e.cause ?? e) : e;
  let envelopeKeyId: string | undefined;
  const files = new Map<string, { sha256: string; identity: Identity }>();
  let raw: unknown;
  let sawManifest = false;
  let manifestSha256 = '';
  const encrypted = options.encrypted ?? name.endsWith('.enc');
  let manifest: BackupManifest;
  const byPath = new Map<string, ManifestEntry>();
  try {
    const plain = await plainStream(storage, name, encrypted, keys, signal, (id) => (envelopeKeyId = id));
    for await (const f of readArchiveFiles(plain, { limits, ...(signal ? { signal } : {}) })) {
      if (sawManifest) throw refuse(`${f.path} follows manifest.json (the manifest must be the last entry)`);
      if (f.path === MANIFEST_PATH) {
        sawManifest = true;
        manifestSha256 = sha256(f.data);
        try {
          raw = JSON.parse(f.data.toString('utf8'));
        } catch (e) {
          throw refuse('manifest.json is not JSON', 'VERIFY', e);
        }
        continue;
      }
      if (files.has(f.path)) throw refuse(`${f.path} appears twice`);
      files.set(f.path, { sha256: sha256(f.data), identity: identityOf(f) });
    }
    if (!sawManifest) throw refuse('no manifest.json (truncated, or not a cronflock backup)');
    manifest = checkManifest(raw, { name, encrypted, envelopeKeyId });
    raw = undefined;
    manifest.objects.forEach((e, i) => {
      const got = files.get(e.path);
      if (got === undefined) throw refuse(`${e.path} is in the manifest but not in the archive`);
      if (got.sha256 !== e.sha256) throw refuse(`${e.path} does not match its manifest sha256 (changed after the backup was made)`);
      const want = identityOfEntry(e);
      for (const field of ['apiVersion', 'kind', 'namespace', 'name'] as const) {
        if (got.identity[field] !== want[field]) {
          throw refuse(`${e.path} holds ${show(got.identity)}, but its manifest entry objects[${i}] says ${show(want)} (its ${field} differs)`);
        }
      }
      byPath.set(e.path, e);
    });
    for (const p of files.keys()) if (!byPath.has(p)) throw refuse(`${p} is in the archive but not in the manifest`);
    files.clear();
  } catch (e) {
    throw named(e);
  }
  const m = manifest;
  return {
    manifest: m,
    authenticated: encrypted,
    manifestSha256,
    ...(envelopeKeyId !== undefined ? { envelopeKeyId } : {}),
    async *objects(o: { signal?: AbortSignal } = {}): AsyncIterable<BackupObject> {
      const sig = o.signal ?? signal;
      let n = 0;
      try {
        const stream = await plainStream(storage, name, encrypted, keys, sig);
        for await (const f of readArchiveFiles(stream, { limits, ...(sig ? { signal: sig } : {}) })) {
          if (f.path === MANIFEST_PATH) continue;
          const entry = byPath.get(f.path);
          if (!entry || sha256(f.data) !== entry.sha256) throw refuse(`${f.path} changed since the archive was opened`);
          n++;
          // The same bytes as in the first pass (same sha256): they parsed, and hold the entry's identity.
          yield { entry, object: JSON.parse(f.data.toString('utf8')) as Record<string, unknown> };
        }
        if (n !== m.objects.length) throw refuse(`${m.objects.length - n} objects went missing since the archive was opened`);
      } catch (e) {
        throw named(e);
      }
    },
  };
}
