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
  /** The run's signal fired; nothing was published. */
  | 'ABORTED';

/** An error of `kind: backup` or of the archive reader. `cause` keeps the underlying error. */
export class BackupError extends Error {
  constructor(
    readonly code: BackupErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BackupError';
  }
}

/** True when `e` is a {@link BackupError}, optionally with one of `codes`. */
export function isBackupError(e: unknown, ...codes: BackupErrorCode[]): e is BackupError {
  return e instanceof BackupError && (codes.length === 0 || codes.includes(e.code));
}
