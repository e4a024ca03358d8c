/**
 * Reading archives back: {@link openBackup} (used by the backup's own read-back verification and by restore)
 * and {@link readArchiveFiles}, a streamed tar.gz reader. Memory: one file of the archive at a time (plus, while
 * opening, one path and hash per object).
 */
import { createHash } from 'node:crypto';
import { Readable, pipeline } from 'node:stream';
import { Parser, type ReadEntry } from 'tar';
import { createDecryptStream } from './encryption.js';
import { BackupError } from './errors.js';
import {
  FORMAT_VERSION,
  MANIFEST_PATH,
  objectPath,
  parseBackupName,
  type BackupManifest,
  type BackupObject,
  type BackupStorage,
  type ManifestEntry,
  type OpenBackupOptions,
  type OpenedBackup,
} from './format.js';

/** One file of an archive. */
export interface ArchiveFile {
  path: string;
  data: Buffer;
}

const MAX_QUEUE = 16;

/**
 * Streams the files of a tar.gz (gzip detected by the tar parser) from `source`. Errors (thrown by the
 * iterator): `BackupError` `VERIFY` for anything that is not a well-formed archive of regular files (bad gzip,
 * bad tar header, truncation, links or devices; directories are skipped), or the source's own error (e.g. a decryption `VERIFY`).
 */
export async function* readArchiveFiles(source: NodeJS.ReadableStream, signal?: AbortSignal): AsyncGenerator<ArchiveFile> {
  const parser = new Parser({ strict: true });
  const queue: ArchiveFile[] = [];
  let failure: unknown;
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const src = source as Readable;
  let pausedByUs = false;
  const fail = (e: unknown): void => {
    if (failure === undefined) failure = e;
    notify();
  };
  parser.on('entry', (e: ReadEntry) => {
    if (e.type === 'Directory') {
      // Ours have none; backup-restore-operator's tarballs list their directories: nothing to read in them.
      e.resume();
      return;
    }
    if (e.type !== 'File' && e.type !== 'OldFile') {
      fail(new BackupError('VERIFY', `archive entry ${e.path} is a ${e.type}, not a file`));
      e.resume();
      return;
    }
    const chunks: Buffer[] = [];
    e.on('data', (c: Buffer) => chunks.push(c));
    e.on('end', () => {
      queue.push({ path: e.path, data: Buffer.concat(chunks) });
      if (queue.length >= MAX_QUEUE && !pausedByUs) {
        pausedByUs = true;
        src.pause();
      }
      notify();
    });
  });
  parser.on('error', (e: Error) => fail(new BackupError('VERIFY', `archive is damaged: ${e.message}`, { cause: e })));
  parser.on('warn', (code: string, msg: string | Error) => fail(new BackupError('VERIFY', `archive is damaged: ${code}: ${msg instanceof Error ? msg.message : msg}`)));
  parser.on('end', () => {
    ended = true;
    notify();
  });
  src.on('data', (c: Buffer) => {
    if (!parser.write(c)) src.pause();
  });
  parser.on('drain', () => {
    if (!pausedByUs) src.resume();
  });
  src.on('end', () => parser.end());
  src.on('error', fail);
  const onAbort = (): void => fail(new BackupError('ABORTED', 'reading the archive: aborted'));
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      if (failure !== undefined) throw failure;
      const f = queue.shift();
      if (f) {
        if (pausedByUs && queue.length < MAX_QUEUE / 2) {
          pausedByUs = false;
          src.resume();
        }
        yield f;
        continue;
      }
      if (ended) return;
      await new Promise<void>((r) => (wake = r));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (!ended || failure !== undefined) (src as Readable).destroy?.();
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

/** What {@link openBackup} adds to {@link OpenedBackup} for the writer's own check. */
export interface VerifiedBackup extends OpenedBackup {
  /** Hex SHA-256 of `manifest.json`'s bytes. */
  manifestSha256: string;
  /** Key id named by the envelope (undefined for a plain archive). */
  envelopeKeyId?: string;
}

function checkManifest(m: BackupManifest, name: string): void {
  if (typeof m !== 'object' || m === null || !Array.isArray(m.objects) || typeof m.formatVersion !== 'number') {
    throw new BackupError('VERIFY', `backup ${name}: manifest.json is not a cronflock manifest`);
  }
  if (m.formatVersion > FORMAT_VERSION) {
    throw new BackupError('VERIFY', `backup ${name}: format version ${m.formatVersion} is newer than this cronflock reads (${FORMAT_VERSION}); upgrade cronflock`);
  }
}

/**
 * Opens an archive: reads it once in full (decrypting an `.enc` one with the matching key), checks that every
 * file's sha256 matches the manifest, that no manifest entry is missing and no file is unlisted, that each entry's
 * path is its layout path, that `manifest.json` is the last entry, and that the manifest's encryption key id is
 * the envelope's. Returns the manifest and a second, streamed pass over the objects (see {@link OpenedBackup}).
 * Errors: `BackupError` `NOT_FOUND`, `KEY` (no key, wrong key), `VERIFY` (any mismatch, damage, truncation;
 * the message names the file), `STORAGE`, `ABORTED`.
 */
export async function openBackup(options: OpenBackupOptions): Promise<VerifiedBackup> {
  const { storage, name, signal } = options;
  const keys = options.keys ?? [];
  const parsedName = parseBackupName(name);
  let envelopeKeyId: string | undefined;
  const hashes = new Map<string, string>();
  let manifest: BackupManifest | undefined;
  let manifestSha256 = '';
  const encrypted = options.encrypted ?? name.endsWith('.enc');
  const plain = await plainStream(storage, name, encrypted, keys, signal, (id) => (envelopeKeyId = id));
  for await (const f of readArchiveFiles(plain, signal)) {
    if (manifest) throw new BackupError('VERIFY', `backup ${name}: ${f.path} follows manifest.json (the manifest must be last)`);
    if (f.path === MANIFEST_PATH) {
      manifestSha256 = sha256(f.data);
      try {
        manifest = JSON.parse(f.data.toString('utf8')) as BackupManifest;
      } catch (e) {
        throw new BackupError('VERIFY', `backup ${name}: manifest.json is not JSON`, { cause: e });
      }
      continue;
    }
    if (hashes.has(f.path)) throw new BackupError('VERIFY', `backup ${name}: ${f.path} appears twice`);
    hashes.set(f.path, sha256(f.data));
  }
  if (!manifest) throw new BackupError('VERIFY', `backup ${name}: no manifest.json (truncated, or not a cronflock backup)`);
  checkManifest(manifest, name);
  if (encrypted !== (manifest.encryption !== null)) {
    throw new BackupError('VERIFY', `backup ${name}: the manifest says ${manifest.encryption ? 'encrypted' : 'not encrypted'}, the archive is ${encrypted ? 'encrypted' : 'not'}`);
  }
  if (manifest.encryption && manifest.encryption.keyId !== envelopeKeyId) {
    throw new BackupError('VERIFY', `backup ${name}: manifest key id ${manifest.encryption.keyId} differs from the envelope's ${envelopeKeyId ?? 'none'}`);
  }
  if (parsedName && manifest.schedule !== parsedName.schedule) {
    throw new BackupError('VERIFY', `backup ${name}: the manifest belongs to schedule ${String(manifest.schedule)}`);
  }
  const byPath = new Map<string, ManifestEntry>();
  for (const e of manifest.objects) {
    const want = objectPath(e);
    if (e.path !== want) throw new BackupError('VERIFY', `backup ${name}: manifest entry ${e.path} should be at ${want}`);
    const got = hashes.get(e.path);
    if (got === undefined) throw new BackupError('VERIFY', `backup ${name}: ${e.path} is in the manifest but not in the archive`);
    if (got !== e.sha256) throw new BackupError('VERIFY', `backup ${name}: ${e.path} does not match its manifest sha256 (changed after the backup was made)`);
    byPath.set(e.path, e);
  }
  for (const p of hashes.keys()) if (!byPath.has(p)) throw new BackupError('VERIFY', `backup ${name}: ${p} is in the archive but not in the manifest`);
  hashes.clear();
  const m = manifest;
  return {
    manifest: m,
    manifestSha256,
    ...(envelopeKeyId !== undefined ? { envelopeKeyId } : {}),
    async *objects(o: { signal?: AbortSignal } = {}): AsyncIterable<BackupObject> {
      const sig = o.signal ?? signal;
      let n = 0;
      const stream = await plainStream(storage, name, encrypted, keys, sig);
      for await (const f of readArchiveFiles(stream, sig)) {
        if (f.path === MANIFEST_PATH) continue;
        const entry = byPath.get(f.path);
        if (!entry || sha256(f.data) !== entry.sha256) throw new BackupError('VERIFY', `backup ${name}: ${f.path} changed since the archive was opened`);
        n++;
        yield { entry, object: JSON.parse(f.data.toString('utf8')) as Record<string, unknown> };
      }
      if (n !== m.objects.length) throw new BackupError('VERIFY', `backup ${name}: ${m.objects.length - n} objects went missing since the archive was opened`);
    },
  };
}
