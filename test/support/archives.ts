/**
 * Crafted backup archives for tests of the reader and of restore: a well-formed plain archive built from
 * objects as the backup writer stores them (format.ts `storedObject`, the writer's own tar.gz writer), which a
 * test then changes — a file's body, a manifest field, the manifest bytes — before it is written; and a
 * decompression bomb: tar entries of zero bytes, streamed through gzip (a 1 GiB entry is ~1 MB).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { Header } from 'tar';
import { FORMAT_VERSION, MANIFEST_PATH, storedObject, type BackupManifest, type BackupSelection, type ResourceRef } from '../../jobs/backup/format.js';
import { TarGzWriter } from '../../jobs/backup/tarball.js';

/** An object to put in a crafted archive, and the resource that serves it. */
export interface CraftObject {
  info: ResourceRef;
  object: Record<string, unknown>;
}

/** A crafted archive before it is written: its files in order (objects; the manifest is added last). */
export interface Crafted {
  files: { path: string; data: Buffer }[];
  /** The manifest as an object (change it freely), or exact bytes (e.g. not JSON). */
  manifest: BackupManifest | Record<string, unknown> | Buffer;
}

/** The resource of a core ConfigMap. */
export const CONFIGMAP: ResourceRef = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true };

/** A well-formed archive named `name` holding `objects`, selection `selection` (see the module docs). */
export function craft(name: string, objects: CraftObject[], selection: BackupSelection = { resourceSets: [] }): Crafted & { manifest: BackupManifest } {
  const files: Crafted['files'] = [];
  const entries = objects.map(({ info, object }, i) => {
    const { data, entry } = storedObject(info, { ...object, metadata: { uid: `uid-${i}`, ...(object.metadata as object) } });
    files.push({ path: entry.path, data });
    return entry;
  });
  const counts: Record<string, number> = {};
  for (const e of entries) counts[e.group ? `${e.resource}.${e.group}` : e.resource] = (counts[e.group ? `${e.resource}.${e.group}` : e.resource] ?? 0) + 1;
  const schedule = /^([a-z0-9-]+?)-\d{8}T/.exec(name)?.[1] ?? null;
  const manifest: BackupManifest = {
    formatVersion: FORMAT_VERSION,
    cronflockVersion: 'test',
    kubernetesVersion: 'v0',
    clusterId: 'crafted',
    createdAt: new Date().toISOString(),
    schedule,
    occurrence: null,
    dueTime: null,
    manual: false,
    name,
    selection,
    encryption: null,
    objects: entries,
    counts,
  };
  return { files, manifest };
}

/** Lowercase hex SHA-256. */
export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Replaces the body of the file at `path` with `object` (compact JSON) and sets the entry's sha256 to match it. */
export function replaceBody(c: Crafted & { manifest: BackupManifest }, path: string, object: unknown): void {
  const f = c.files.find((x) => x.path === path);
  if (!f) throw new Error(`no file ${path}`);
  f.data = Buffer.from(JSON.stringify(object), 'utf8');
  const e = c.manifest.objects.find((x) => x.path === path)!;
  e.sha256 = sha256(f.data);
}

/** Writes `c` as a tar.gz at `file` (objects, then manifest.json). */
export async function writeCrafted(file: string, c: Crafted): Promise<void> {
  const tar = new TarGzWriter();
  const out = pipeline(tar.stream, createWriteStream(file));
  const mtime = new Date();
  for (const f of c.files) await tar.add(f.path, f.data, mtime);
  await tar.add(MANIFEST_PATH, Buffer.isBuffer(c.manifest) ? c.manifest : Buffer.from(JSON.stringify(c.manifest), 'utf8'), mtime);
  await tar.end();
  await out;
}

/**
 * Writes a tar.gz at `file` with entries of `sizeBytes` each (streamed: memory stays small), then the tar end.
 * Each header states its size, as any tar does. Each entry is zero bytes (gzip's best: ~1030 to 1), or with
 * `sparse` zeros with a random byte every 4 KiB (~590 to 1: a 1 GiB entry is 1.8 MB, under tar's own ratio
 * check of 1000), or with `json` a JSON object: `{`, spaces, `}` (so a reader that parses each file goes on).
 */
export async function writeBomb(file: string, entries: { path: string; sizeBytes: number }[], o: { json?: boolean; sparse?: boolean } = {}): Promise<void> {
  const gzip = createGzip({ level: 9 });
  const out = pipeline(gzip, createWriteStream(file));
  const write = (b: Buffer): Promise<void> => new Promise((resolve) => (gzip.write(b) ? resolve() : gzip.once('drain', () => resolve())));
  const fill = Buffer.alloc(1024 * 1024, o.json ? 0x20 : 0);
  if (o.sparse) {
    const r = randomBytes(fill.length / 4096);
    for (let i = 0; i < r.length; i++) fill[i * 4096] = r[i]!;
  }
  for (const { path, sizeBytes } of entries) {
    const header = new Header({ path, mode: 0o644, size: sizeBytes, mtime: new Date(), type: 'File', uid: 0, gid: 0 });
    header.encode();
    await write(header.block!);
    if (o.json) await write(Buffer.from('{'));
    const body = o.json ? sizeBytes - 2 : sizeBytes;
    for (let left = body; left > 0; left -= fill.length) await write(left >= fill.length ? fill : fill.subarray(0, left));
    if (o.json) await write(Buffer.from('}'));
    const pad = (512 - (sizeBytes % 512)) % 512;
    if (pad > 0) await write(Buffer.alloc(pad));
  }
  await write(Buffer.alloc(1024));
  gzip.end();
  await out;
}
