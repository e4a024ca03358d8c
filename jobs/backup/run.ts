/**
 * One backup run:
 *
 * 1. resolve the resource sets through discovery; refuse, before anything is listed or written, a selection
 *    that includes Secrets when the archive would not be encrypted (unless `allowPlaintextSecrets`);
 * 2. name the archive from the occurrence (`<schedule>-<due>Z.tar.gz[.enc]`); if that name is already published
 *    (a re-claimed or repeated occurrence), check it and stop: one occurrence, one archive;
 * 3. count the selection (metadata-only lists) for progress, then stream every object from paged lists into a
 *    tar.gz (tar's Pack, gzip), through the encryption envelope when configured, into a temporary name in
 *    storage (a local file or an S3 multipart upload), the manifest last;
 * 4. read the temporary back in full (decrypting), check every object and the manifest against what was written;
 * 5. publish it under its name (atomic, never overwriting), then apply retention.
 *
 * `ctx.signal` aborts every step: lists and uploads stop, the temporary is removed, nothing is published.
 * Memory: one page of a list, a few objects in the tar stream, one encryption chunk, the upload's parts
 * (2 × 8 MiB for S3), and one manifest entry (~300 bytes) per object.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Readable, pipeline } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Gauge, register } from 'prom-client';
import { clusterIdentity } from '../../k8s/cluster.js';
import type { KubeClient, KubeObject } from '../../k8s/index.js';
import { kubeClientFor } from '../kube-client.js';
import { RESULT_LIMIT, type JobContext } from '../types.js';
import { ALGORITHM, createEncryptStream, keyIdOf, loadKey } from './encryption.js';
import { BackupError } from './errors.js';
import {
  FORMAT_VERSION,
  MANIFEST_PATH,
  backupName,
  storedObject,
  type BackupManifest,
  type BackupStorage,
  type ManifestEntry,
} from './format.js';
import { DEFAULT_LIMITS, NO_LIMITS, overLimits, type ArchiveStats } from './limits.js';
import { expandResourceSets } from './presets.js';
import { openBackup } from './reader.js';
import { planRetention, staleTemporaries } from './retention.js';
import { TarGzWriter } from './tarball.js';
import type { BackupParams } from './schema.js';
import { resolveTargets, selectObjects, type Target } from './selection.js';
import { storageFor } from './storage.js';

/** Validated parameters with paths (kubeconfig, local directory, key file) made absolute by `compile`. */
export type CompiledBackup = BackupParams;

/**
 * The run's result, stored in its run record. The engine keeps a result only when its JSON is at most 4 KB
 * ({@link RESULT_LIMIT}), so it holds counts, not object lists: at most {@link REPORT_KINDS} kinds in `counts`
 * and {@link REPORT_DELETED} names of deleted backups (`retention.deleted` counts them all).
 */
export interface BackupReport {
  /** Archive name. */
  name: string;
  /** Storage location, e.g. `s3://bucket/prefix/`. */
  location: string;
  /** True when the archive was already published by an earlier attempt of this occurrence (checked, not rewritten). */
  alreadyExisted: boolean;
  objects: number;
  /** Archive size in bytes. */
  bytes: number;
  encrypted: boolean;
  keyId: string | null;
  clusterId: string;
  /** Objects by `<resource>.<group>` (core: `<resource>`), the most numerous {@link REPORT_KINDS} kinds. */
  counts: Record<string, number>;
  /** Kinds left out of `counts` (0 when none). */
  kindsOmitted: number;
  /** Wall time of the run, ms. */
  durationMs: number;
  /** null without a retention policy; else how many of the schedule's backups remain and which were deleted. */
  retention: { kept: number; deleted: number; deletedNames: string[] } | null;
}

/** Kinds listed in {@link BackupReport.counts} at most. */
export const REPORT_KINDS = 30;
/** Deleted backup names listed in {@link BackupReport.retention} at most. */
export const REPORT_DELETED = 10;

/**
 * Progress gauges, in prom-client's default registry: the job context carries no registry, so they are exposed
 * wherever the default registry is (the admin server's /metrics serves its own registry; until it merges the
 * default one, progress is also in the logs). Created once per process.
 */
function progressGauge(): Gauge<'schedule' | 'progress'> {
  const name = 'cronflock_backup_objects';
  const existing = register.getSingleMetric(name) as Gauge<'schedule' | 'progress'> | undefined;
  return existing ?? new Gauge({ name, help: 'Objects of the running backup: progress="done" written so far, "total" selected', labelNames: ['schedule', 'progress'] });
}

let version: string | undefined;
/** This package's version (the nearest package.json above this file, in the sources or in dist/). */
export function cronflockVersion(): string {
  if (version) return version;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  try {
    version = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    version = '0.0.0';
  }
  return version;
}

/** The client the job uses: {@link kubeClientFor} (kept under this name for its importers). */
export const clientForBackup = kubeClientFor;

function countKey(e: Pick<ManifestEntry, 'resource' | 'group'>): string {
  return e.group ? `${e.resource}.${e.group}` : e.resource;
}

/**
 * Adds one file to the archive, waiting while the storage is behind. `stopped` rejects if the storage stops
 * reading before the archive is complete (its upload or file write failed): then stop waiting and throw that.
 */
async function addFile(tar: TarGzWriter, stopped: Promise<never>, path: string, data: Buffer, mtime: Date): Promise<void> {
  await Promise.race([tar.add(path, data, mtime), stopped]);
}

function aborted(signal: AbortSignal, what: string): BackupError {
  return new BackupError('ABORTED', `${what}: aborted (${signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'claim lost')}); nothing was published`);
}

/**
 * Runs one backup (see the module docs). Errors: {@link BackupError} with its code (`ABORTED` whenever the
 * signal fired, whatever step it interrupted), or Kubernetes errors (`FORBIDDEN`, …).
 */
export async function runBackup(ctx: JobContext, p: CompiledBackup): Promise<BackupReport> {
  try {
    return await backupOnce(ctx, p);
  } catch (e) {
    if (ctx.signal.aborted && !(e instanceof BackupError && e.code === 'ABORTED')) throw aborted(ctx.signal, `backup of ${ctx.occurrence.key}`);
    throw e;
  }
}

async function backupOnce(ctx: JobContext, p: CompiledBackup): Promise<BackupReport> {
  const t0 = performance.now();
  const { signal, occurrence } = ctx;
  const client = clientForBackup(p);
  const sets = expandResourceSets(p.resourceSets);
  const targets = await resolveTargets(client, sets, signal, (msg) => ctx.log.info({ backup: occurrence.key }, msg));
  const secrets = targets.find((t) => t.info.group === '' && t.info.resource === 'secrets');
  if (secrets && !p.encryption && !p.allowPlaintextSecrets) {
    throw new BackupError(
      'PLAINTEXT_SECRETS',
      `resourceSets[${secrets.index}] selects Secrets and the backup is not encrypted: set encryption.key (recommended), exclude Secrets (excludeKinds: [Secret]), or set allowPlaintextSecrets: true; nothing was written`,
    );
  }
  const kek = p.encryption ? await loadKey(p.encryption.key, { client, signal }) : undefined;
  const storage = await storageFor(p.storage, { client, signal });
  const name = backupName({ schedule: occurrence.schedule, dueMs: occurrence.dueMs, manual: occurrence.manual, encrypted: kek !== undefined });
  const keys = kek ? [kek] : [];
  const log = (obj: object, msg: string): void => ctx.log.info({ backup: name, ...obj }, msg);

  // This occurrence's archive may exist already (a re-claim, a repeated run), also under the other extension if
  // the encryption setting changed in between: either way the occurrence has its one archive.
  const other = backupName({ schedule: occurrence.schedule, dueMs: occurrence.dueMs, manual: occurrence.manual, encrypted: kek === undefined });
  const found = (await storage.stat(name, signal)) ?? (await storage.stat(other, signal));
  if (found) {
    // Published only after verification; check it again (cheap compared with a backup) and count it as this run's.
    const opened = await openBackup({ storage, name: found.name, keys, limits: NO_LIMITS, signal }).catch((e: unknown) => {
      if (e instanceof BackupError && e.code === 'VERIFY') {
        throw new BackupError('VERIFY', `${e.message}; this occurrence's archive is already published and damaged: inspect it, then delete it to make the backup again`, { cause: e });
      }
      throw e;
    });
    ctx.log.info({ backup: found.name, objects: opened.manifest.objects.length }, 'backup already published for this occurrence; verified, not written again');
    const retention = await applyRetention(ctx, p, storage, signal);
    return report(found.name, storage, true, opened.manifest, found.sizeBytes, t0, retention);
  }

  const { clusterId, kubernetesVersion } = await clusterIdentity(client, signal);
  const gauge = progressGauge();
  let total = 0;
  for await (const _ of selectObjects(client, targets, { pageSize: p.pageSize, metadataOnly: true, signal })) total++;
  gauge.set({ schedule: occurrence.schedule, progress: 'total' }, total);
  gauge.set({ schedule: occurrence.schedule, progress: 'done' }, 0);
  log({ total, storage: storage.location, encrypted: !!kek }, 'backup started');

  const createdAt = new Date();
  const { tmp, manifest, manifestSha256 } = await writeArchive(ctx, p, client, targets, storage, name, kek, {
    clusterId,
    kubernetesVersion,
    createdAt,
    total,
    onProgress: (done) => gauge.set({ schedule: occurrence.schedule, progress: 'done' }, done),
  });

  let published: 'published' | 'exists';
  try {
    if (signal.aborted) throw aborted(signal, `backup ${name}`);
    // Its own archive, just written: no limits (a restore applies them; see the warning in writeArchive).
    const check = await openBackup({ storage, name: tmp, encrypted: kek !== undefined, keys, limits: NO_LIMITS, signal });
    if (check.manifestSha256 !== manifestSha256 || check.manifest.objects.length !== manifest.objects.length) {
      throw new BackupError('VERIFY', `backup ${name}: the stored manifest differs from the one written`);
    }
    let n = 0;
    for await (const _ of check.objects({ signal })) n++;
    if (n !== manifest.objects.length) throw new BackupError('VERIFY', `backup ${name}: read back ${n} of ${manifest.objects.length} objects`);
    if (signal.aborted) throw aborted(signal, `backup ${name}`);
    published = await storage.publish(tmp, name, signal);
  } catch (e) {
    await storage.remove(tmp).catch(() => undefined);
    if (signal.aborted && !(e instanceof BackupError && e.code === 'ABORTED')) throw aborted(signal, `backup ${name}`);
    throw e;
  }
  const stored = await storage.stat(name, signal);
  log({ objects: manifest.objects.length, bytes: stored?.sizeBytes ?? 0, published }, published === 'published' ? 'backup verified and published' : 'backup already published by another claimant; ours discarded');
  const retention = await applyRetention(ctx, p, storage, signal);
  return report(name, storage, published === 'exists', manifest, stored?.sizeBytes ?? 0, t0, retention);
}

function report(name: string, storage: BackupStorage, alreadyExisted: boolean, m: BackupManifest, bytes: number, t0: number, retention: BackupReport['retention']): BackupReport {
  const kinds = Object.entries(m.counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const r: BackupReport = {
    name,
    location: storage.location,
    alreadyExisted,
    objects: m.objects.length,
    bytes,
    encrypted: m.encryption !== null,
    keyId: m.encryption?.keyId ?? null,
    clusterId: m.clusterId,
    counts: Object.fromEntries(kinds.slice(0, REPORT_KINDS)),
    kindsOmitted: Math.max(0, kinds.length - REPORT_KINDS),
    durationMs: Math.round(performance.now() - t0),
    retention,
  };
  // Long kind names (CRD groups) could still overflow the record: drop kinds until it fits.
  while (JSON.stringify(r).length > RESULT_LIMIT && Object.keys(r.counts).length > 0) {
    const keys = Object.keys(r.counts);
    delete r.counts[keys[keys.length - 1]!];
    r.kindsOmitted++;
  }
  return r;
}

/**
 * After a success only: deletes this schedule's backups beyond the retention limits, and its temporaries that a
 * crashed writer left more than a day ago. Ages are measured from this attempt's start on the Redis clock (the
 * flock's one clock), not the host's.
 */
async function applyRetention(ctx: JobContext, p: CompiledBackup, storage: BackupStorage, signal: AbortSignal): Promise<BackupReport['retention']> {
  const files = await storage.list(signal);
  const now = ctx.occurrence.startMs;
  for (const n of staleTemporaries(files, ctx.occurrence.schedule, now)) {
    await storage.remove(n, signal);
    ctx.log.info({ backup: n }, 'stale temporary of a crashed backup deleted');
  }
  if (!p.retention) return null;
  const plan = planRetention(files, ctx.occurrence.schedule, { count: p.retention.count, maxAgeMs: p.retention.maxAge }, now);
  for (const n of plan.delete) {
    signal.throwIfAborted();
    await storage.remove(n, signal);
    ctx.log.info({ backup: n }, 'backup deleted by retention');
  }
  return { kept: plan.keep.length, deleted: plan.delete.length, deletedNames: plan.delete.slice(0, REPORT_DELETED) };
}

interface WriteMeta {
  clusterId: string;
  kubernetesVersion: string;
  createdAt: Date;
  total: number;
  onProgress: (done: number) => void;
}

/** Streams the selection into a temporary archive in storage; returns its name and the manifest written. */
async function writeArchive(
  ctx: JobContext,
  p: CompiledBackup,
  client: KubeClient,
  targets: readonly Target[],
  storage: BackupStorage,
  name: string,
  kek: Buffer | undefined,
  meta: WriteMeta,
): Promise<{ tmp: string; manifest: BackupManifest; manifestSha256: string }> {
  const { signal, occurrence } = ctx;
  const tar = new TarGzWriter();
  const body: Readable = kek ? (pipeline(tar.stream, createEncryptStream(kek), () => undefined) as unknown as Readable) : tar.stream;
  const writing = storage.writeTemp(name, body, signal);
  writing.catch(() => undefined); // awaited below; this only keeps an early failure from being unhandled
  // While the archive is being written, `writing` can only settle by failing.
  const stopped = writing.then(
    () => Promise.reject<never>(new BackupError('STORAGE', 'storage stopped reading the archive early')),
    (e: unknown) => Promise.reject<never>(e),
  );
  stopped.catch(() => undefined);
  const objects: ManifestEntry[] = [];
  const counts: Record<string, number> = {};
  let lastLog = performance.now();
  let totalBytes = 0;
  let largest = { path: '', bytes: 0 };
  try {
    for await (const { info, object } of selectObjects<KubeObject>(client, targets, { pageSize: p.pageSize, signal })) {
      if (signal.aborted) throw aborted(signal, `backup ${name}`);
      const { data, entry } = storedObject(info, object);
      await addFile(tar, stopped, entry.path, data, meta.createdAt);
      totalBytes += tarBytes(data.length);
      if (data.length > largest.bytes) largest = { path: entry.path, bytes: data.length };
      objects.push(entry);
      const k = countKey(entry);
      counts[k] = (counts[k] ?? 0) + 1;
      if (objects.length % 100 === 0) meta.onProgress(objects.length);
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        ctx.log.info({ backup: name, done: objects.length, total: meta.total }, 'backup progress');
      }
    }
    const manifest: BackupManifest = {
      formatVersion: FORMAT_VERSION,
      cronflockVersion: cronflockVersion(),
      kubernetesVersion: meta.kubernetesVersion,
      clusterId: meta.clusterId,
      createdAt: meta.createdAt.toISOString(),
      schedule: occurrence.schedule,
      occurrence: occurrence.key,
      dueTime: new Date(occurrence.dueMs).toISOString(),
      manual: occurrence.manual,
      name,
      selection: { resourceSets: expandResourceSets(p.resourceSets).map(({ optional: _o, preset: _p, ...s }) => s) },
      encryption: kek ? { algorithm: ALGORITHM, keyId: keyIdOf(kek) } : null,
      objects,
      counts,
    };
    const manifestBytes = Buffer.from(JSON.stringify(manifest), 'utf8');
    warnOverRestoreLimits(ctx, name, { objects: objects.length + 1, totalBytes: totalBytes + tarBytes(manifestBytes.length) + 1024, largest, manifestBytes: manifestBytes.length });
    await addFile(tar, stopped, MANIFEST_PATH, manifestBytes, meta.createdAt);
    await tar.end();
    const tmp = await writing;
    meta.onProgress(objects.length);
    ctx.log.info({ backup: name, done: objects.length, total: meta.total }, 'backup written; verifying');
    return { tmp, manifest, manifestSha256: createHash('sha256').update(manifestBytes).digest('hex') };
  } catch (e) {
    // Fail the upload (so it aborts, never completes a truncated file); the storage's pipeline may already have
    // stopped listening, hence the no-op listener.
    body.on('error', () => undefined);
    body.destroy(e instanceof Error ? e : new Error(String(e)));
    await writing.catch(() => undefined);
    if (signal.aborted && !(e instanceof BackupError && e.code === 'ABORTED')) throw aborted(signal, `backup ${name}`);
    throw e;
  }
}

/** Bytes a file takes in the (uncompressed) tar stream: its 512-byte header and its data padded to 512 bytes. */
const tarBytes = (n: number): number => 512 + Math.ceil(n / 512) * 512;

/**
 * Logs a warning when an archive is over the limits a restore reads archives with by default (limits.ts): the
 * backup is good, but restoring it needs those limits raised, which is better known now than during an outage.
 */
function warnOverRestoreLimits(ctx: JobContext, name: string, stats: ArchiveStats): void {
  const over = overLimits(stats, DEFAULT_LIMITS);
  if (over.length > 0) {
    ctx.log.warn({ backup: name, over }, `backup ${name} is over the default limits of a restore (${over.join('; ')}): restore it with those limits raised (restore job limits:, cronflock restore --limit)`);
  }
}
