/**
 * From what a user names (`<archive name>`, `latest:<schedule>`, or a local archive path) to an opened,
 * verified backup (the backup reader, jobs/backup/reader.ts), with errors that say which backup, where, and
 * what to do.
 */
import path from 'node:path';
import type { KubeClient } from '../../k8s/index.js';
import { loadKey, type KeySource } from '../backup/encryption.js';
import { isBackupError } from '../backup/errors.js';
import type { ArchiveLimits } from '../backup/limits.js';
import { parseBackupName, type BackupStorage } from '../backup/format.js';
import { openBackup } from '../backup/reader.js';
import { localStorage } from '../backup/storage.js';
import { RestoreError } from './run.js';
import { LATEST_PREFIX } from './schema.js';
import type { BackupSource } from './source.js';

/** An opened backup and its resolved name. */
export interface OpenedSource {
  name: string;
  /** Where it was read from, e.g. `/var/backups/` or `s3://bucket/prefix/`. */
  location: string;
  source: BackupSource;
}

/**
 * The archive name a `backup` parameter means: the name itself, or for `latest:<schedule>` the newest
 * (by due time) published backup of that schedule, manual ones included. Errors: {@link RestoreError} `BACKUP`
 * when the schedule has no backup there; the storage's errors.
 */
export async function resolveBackupName(storage: BackupStorage, backup: string, signal?: AbortSignal): Promise<string> {
  if (!backup.startsWith(LATEST_PREFIX)) return backup;
  const schedule = backup.slice(LATEST_PREFIX.length);
  const mine = (await storage.list(signal))
    .map((f) => ({ name: f.name, parsed: parseBackupName(f.name) }))
    .filter((f) => f.parsed?.schedule === schedule)
    .sort((a, b) => b.parsed!.dueMs - a.parsed!.dueMs);
  if (mine.length === 0) throw new RestoreError('BACKUP', `backup ${backup}: ${storage.location} has no backup of schedule ${schedule} (names look like ${schedule}-20261130T020000Z.tar.gz[.enc])`);
  return mine[0]!.name;
}

/**
 * Opens `backup` from `storage` with the keys (loaded now), verifying the whole archive within `limits` (default
 * limits.ts `DEFAULT_LIMITS`) before anything is applied. A `backup` with a `/` is a path to a local archive (its
 * directory becomes the storage). Errors: {@link RestoreError} `BACKUP` naming the backup and location, with the
 * reader's reason: not found (with the names there), wrong or missing key (with the key id the archive needs),
 * and for a damaged archive or one over a limit "damaged archive <name> in <location>: <what>; nothing was
 * applied".
 */
export async function openSource(o: {
  storage: BackupStorage | undefined;
  backup: string;
  keys: readonly KeySource[];
  limits?: ArchiveLimits;
  client?: KubeClient;
  signal?: AbortSignal;
}): Promise<OpenedSource> {
  let storage = o.storage;
  let backup = o.backup;
  if (backup.includes('/')) {
    storage = localStorage({ directory: path.dirname(path.resolve(backup)) });
    backup = path.basename(backup);
  }
  if (!storage) throw new RestoreError('BACKUP', `backup ${o.backup}: no storage given (name a local directory or S3 location, or give a path to the archive)`);
  const name = await resolveBackupName(storage, backup, o.signal);
  try {
    const keys = await Promise.all(o.keys.map((k) => loadKey(k, { ...(o.client ? { client: o.client } : {}), ...(o.signal ? { signal: o.signal } : {}) })));
    const source = await openBackup({ storage, name, keys, ...(o.limits ? { limits: o.limits } : {}), ...(o.signal ? { signal: o.signal } : {}) });
    return { name, location: storage.location, source };
  } catch (e) {
    if (!isBackupError(e)) throw e;
    if (e.code === 'VERIFY' || e.code === 'LIMIT') {
      const hint = e.code === 'VERIFY' ? ' (the archive is damaged or was changed after it was written; restore another backup)' : '';
      throw new RestoreError('BACKUP', `damaged archive ${name} in ${storage.location}: ${e.what ?? e.message}${hint}; nothing was applied`, { cause: e });
    }
    let hint = '';
    if (e.code === 'NOT_FOUND') {
      const names = (await storage.list(o.signal).catch(() => [])).map((f) => f.name).filter((n) => parseBackupName(n));
      hint = names.length > 0 ? ` (backups there: ${names.slice(-5).join(', ')}${names.length > 5 ? ', …' : ''})` : ' (there are no backups there)';
    } else if (e.code === 'KEY') hint = ' (give the key the backup was written with: encryption.key, or previousKeys after a rotation)';
    throw new RestoreError('BACKUP', `backup ${name} in ${storage.location}: ${e.message}${hint}; nothing was applied`, { cause: e });
  }
}
