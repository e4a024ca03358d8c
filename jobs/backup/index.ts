/**
 * `kind: backup`: backs up Kubernetes objects chosen by resource sets or presets (any built-in or CRD kind,
 * through discovery) into one `tar.gz` per occurrence, in backup-restore-operator's layout plus a manifest with a
 * sha256 per object, optionally encrypted whole (AES-256-GCM, chunked; the data key wrapped by a key from a
 * Secret, a file or an environment variable), in a local directory or S3-compatible storage. The archive is
 * streamed from paged lists, read back and checked before it is published under its name
 * (`<schedule>-<due>Z.tar.gz[.enc]`), so a re-claimed occurrence finds it and writes no second one; then
 * retention deletes the schedule's older backups. The run's report is its result in the run record.
 *
 * The reader (`openBackup`) and the format (format.ts) are what `kind: restore` reads.
 */
import path from 'node:path';
import type { JobKind } from '../types.js';
import { runBackup, type BackupReport, type CompiledBackup } from './run.js';
import { backupJobSchema, type BackupParams } from './schema.js';

export { BackupError, damagedArchive, isBackupError, type BackupErrorCode } from './errors.js';
export { archiveLimits, DEFAULT_LIMITS, NO_LIMITS, parseByteSize, type ArchiveLimits } from './limits.js';
export { validateManifest } from './manifest-schema.js';
export * from './format.js';
export { MAX_OBJECT_DEPTH, openBackup, readArchiveFiles, type VerifiedBackup } from './reader.js';
export { localStorage, s3Storage, storageFor, type StorageParams } from './storage.js';
export { createDecryptStream, createEncryptStream, keyIdOf, loadKey, type KeySource } from './encryption.js';
export { planRetention, type RetentionPolicy, type RetentionPlan } from './retention.js';
export { objectMatchesSet, resolveTargets, selectObjects } from './selection.js';
export { expandResourceSets } from './presets.js';
export { runBackup, clientForBackup, cronflockVersion, type BackupReport, type CompiledBackup } from './run.js';
export { backupJobSchema, BACKUP_PRESETS, type BackupParams } from './schema.js';

/** Makes the schedule file's relative paths (kubeconfig, local directory, key file) absolute. */
function compileBackup(p: BackupParams, baseDir: string): CompiledBackup {
  const abs = (f: string): string => path.resolve(baseDir, f);
  return {
    ...p,
    ...(p.kubeconfig ? { kubeconfig: abs(p.kubeconfig) } : {}),
    storage: p.storage.type === 'local' ? { ...p.storage, directory: abs(p.storage.directory) } : p.storage,
    ...(p.encryption && 'file' in p.encryption.key ? { encryption: { key: { file: abs(p.encryption.key.file) } } } : {}),
  };
}

/** The `backup` job kind. */
export const backupJob: JobKind<BackupParams, CompiledBackup> = {
  kind: 'backup',
  schema: backupJobSchema,
  compile: async (params, ctx) => compileBackup(params, ctx.baseDir),
  run: async (ctx, params): Promise<BackupReport> => runBackup(ctx, params),
};
