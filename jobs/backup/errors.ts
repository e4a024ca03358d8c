/**
 * The one error type of backups and of reading them back. `code` says what kind of failure it is; `message`
 * names the field or the file and, where there is one, a fix.
 */

/** What went wrong. */
export type BackupErrorCode =
  /** Parameters that only fail at run time (e.g. a kind that discovery does not know). */
  | 'INVALID'
  /** The selection contains Secrets and the archive would not be encrypted (nothing was written). */
  | 'PLAINTEXT_SECRETS'
  /** A key could not be loaded, or no given key matches the archive's key id. */
  | 'KEY'
  /** Storage could not be read or written (message names the location). */
  | 'STORAGE'
  /** The archive does not exist. */
  | 'NOT_FOUND'
  /** The archive is damaged, tampered with, truncated, or does not match its manifest. */
  | 'VERIFY'
  /** The archive is over one of the reader's limits (limits.ts): refused before the memory or time is spent. */
  | 'LIMIT'
  /** The run's signal fired; nothing was published. */
  | 'ABORTED';

/** An error of `kind: backup` or of the archive reader. `cause` keeps the underlying error. */
export class BackupError extends Error {
  /** For `VERIFY` and `LIMIT` errors of the reader: what is wrong, without the archive's name. */
  readonly what?: string;
  /** For `VERIFY` and `LIMIT` errors of the reader: the archive's name. */
  readonly archive?: string;

  constructor(
    readonly code: BackupErrorCode,
    message: string,
    options?: { cause?: unknown; what?: string; archive?: string },
  ) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'BackupError';
    if (options?.what !== undefined) this.what = options.what;
    if (options?.archive !== undefined) this.archive = options.archive;
  }
}

/**
 * The reader's error for an archive it refuses: message `damaged archive <archive>: <what>`, code `VERIFY`
 * (damage, tampering, a file that disagrees with its manifest entry) or `LIMIT` (over a limit of limits.ts).
 */
export function damagedArchive(archive: string, what: string, code: 'VERIFY' | 'LIMIT' = 'VERIFY', cause?: unknown): BackupError {
  return new BackupError(code, `damaged archive ${archive}: ${what}`, { what, archive, ...(cause !== undefined ? { cause } : {}) });
}

/** True when `e` is a {@link BackupError}, optionally with one of `codes`. */
export function isBackupError(e: unknown, ...codes: BackupErrorCode[]): e is BackupError {
  return e instanceof BackupError && (codes.length === 0 || codes.includes(e.code));
}
