/**
 * How much of an archive a reader accepts before it spends the memory or the time: every size read from an
 * archive (a tar header's entry size, the bytes gunzip produces, the number of entries, the manifest's size) is
 * checked against these limits as it is read, so a decompression bomb or a lying header is refused at once,
 * not after it has filled the memory. Pure: no I/O. Light (zod only): the restore schema imports it.
 *
 * Defaults, and why:
 * - `maxObjectSize` 8 MiB: one object file. etcd refuses values over 1.5 MiB by default and the API server
 *   request bodies over 3 MiB, so no object the writer stored is near it.
 * - `maxManifestSize` 128 MiB: about 300 bytes per object, so room for ~400,000 objects.
 * - `maxObjects` 250,000 entries.
 * - `maxTotalSize` 1 GiB uncompressed: a restore holds every object in memory (it orders them before it
 *   applies): parsed, 1–2 times their JSON in heap (measured: 1.0× for ConfigMaps of 4 KB data, 2.1× for small
 *   Deployments).
 * - `maxCompressionRatio` 200: uncompressed bytes per compressed byte, checked once more than 64 MiB came out
 *   (Kubernetes JSON compresses 5–20×; gzip cannot exceed ~1030×, which a bomb of zeros reaches).
 */
import { z } from 'zod';

/** Limits of one archive read. Sizes in bytes. */
export interface ArchiveLimits {
  /** Largest file inside the archive other than `manifest.json`, bytes (checked from the tar header, before reading it). */
  maxObjectSize: number;
  /** Largest `manifest.json`, bytes. */
  maxManifestSize: number;
  /** Most entries (files) in the archive, the manifest included. */
  maxObjects: number;
  /** Most bytes the archive may unpack to (the tar stream: files with their headers); the headers' declared sizes are checked first. */
  maxTotalSize: number;
  /** Most uncompressed bytes per compressed byte, once {@link RATIO_FLOOR_BYTES} came out. */
  maxCompressionRatio: number;
}

/** The defaults (see the module docs). */
export const DEFAULT_LIMITS: Readonly<ArchiveLimits> = Object.freeze({
  maxObjectSize: 8 * 1024 * 1024,
  maxManifestSize: 128 * 1024 * 1024,
  maxObjects: 250_000,
  maxTotalSize: 1024 * 1024 * 1024,
  maxCompressionRatio: 200,
});

/** No limits: for the backup writer checking the archive it has just written itself. */
export const NO_LIMITS: Readonly<ArchiveLimits> = Object.freeze({
  maxObjectSize: Infinity,
  maxManifestSize: Infinity,
  maxObjects: Infinity,
  maxTotalSize: Infinity,
  maxCompressionRatio: Infinity,
});

/** The compression ratio is not judged before this many uncompressed bytes (small archives vary a lot). */
export const RATIO_FLOOR_BYTES = 64 * 1024 * 1024;

const UNITS: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };

/**
 * A size in bytes from `123`, `512Ki`, `8Mi`, `2Gi`, `1Ti` (binary suffixes, as Kubernetes writes memory).
 * `RangeError` for anything else.
 */
export function parseByteSize(text: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|Ti)?$/.exec(text.trim());
  if (!m) throw new RangeError(`${JSON.stringify(text)} is not a size: write bytes, or a number with Ki, Mi, Gi or Ti (e.g. 8Mi, 2Gi)`);
  const n = Number(m[1]) * UNITS[m[2] ?? '']!;
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`${JSON.stringify(text)} is not a size ≥ 1 byte`);
  return n;
}

/** A size for messages: `8 MiB`, `1.0 GiB`, `512 bytes`. */
export function formatByteSize(bytes: number): string {
  if (bytes === Infinity) return 'unlimited';
  for (const [unit, size] of [['TiB', 1024 ** 4], ['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (bytes >= size) return `${Number.isInteger(bytes / size) ? bytes / size : (bytes / size).toFixed(1)} ${unit}`;
  }
  return `${bytes} bytes`;
}

const byteSize = z
  .union([z.number().int().min(1), z.string()])
  .transform((v, ctx) => {
    if (typeof v === 'number') return v;
    try {
      return parseByteSize(v);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: (e as Error).message });
      return z.NEVER;
    }
  });

/** The `limits:` block of a restore (each field optional; the rest keep their defaults). */
export const archiveLimitsSchema = z.strictObject({
  maxObjectSize: byteSize.optional().describe('largest object file in the archive (default 8Mi)'),
  maxManifestSize: byteSize.optional().describe('largest manifest.json (default 128Mi)'),
  maxObjects: z.number().int().min(1).optional().describe('most files in the archive (default 250000)'),
  maxTotalSize: byteSize.optional().describe('most bytes the archive may unpack to (default 1Gi; a restore holds them in memory)'),
  maxCompressionRatio: z.number().min(1).optional().describe('most uncompressed bytes per compressed byte, judged past 64 MiB (default 200)'),
});

/** What the `limits:` block (or `--limit`) gives: some limits. */
export type ArchiveLimitsParams = z.output<typeof archiveLimitsSchema>;

/** The defaults with `over` applied. */
export function archiveLimits(over: Partial<ArchiveLimits> | undefined): ArchiveLimits {
  return { ...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(over ?? {}).filter(([, v]) => v !== undefined)) };
}

/** The option name and how to raise a limit, for messages: `limits.maxObjectSize (--limit maxObjectSize=…)`. */
export function limitHint(name: keyof ArchiveLimits): string {
  return `raise limits.${name} (cronflock restore: --limit ${name}=<value>) if this backup is genuine`;
}

/**
 * What a writer knows of an archive it wrote: entries (manifest included), bytes of the uncompressed tar stream
 * (headers and padding included, as `maxTotalSize` counts them), the largest file, the manifest's bytes.
 */
export interface ArchiveStats {
  objects: number;
  totalBytes: number;
  largest: { path: string; bytes: number };
  manifestBytes: number;
}

/** The limits `stats` are over, one line each (`maxObjectSize: configmaps.#v1/a/b.json is 9 MiB`); empty when none. */
export function overLimits(stats: ArchiveStats, limits: ArchiveLimits): string[] {
  const over: string[] = [];
  if (stats.objects > limits.maxObjects) over.push(`maxObjects: ${stats.objects} entries`);
  if (stats.totalBytes > limits.maxTotalSize) over.push(`maxTotalSize: ${formatByteSize(stats.totalBytes)}`);
  if (stats.largest.bytes > limits.maxObjectSize) over.push(`maxObjectSize: ${stats.largest.path} is ${formatByteSize(stats.largest.bytes)}`);
  if (stats.manifestBytes > limits.maxManifestSize) over.push(`maxManifestSize: ${formatByteSize(stats.manifestBytes)}`);
  return over;
}
