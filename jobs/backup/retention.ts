/**
 * Retention: which of a schedule's backups to delete after a successful backup. Pure: the caller lists and
 * deletes.
 *
 * Only names that {@link parseBackupName} accepts exactly (anchored), of this schedule, and not manual, are
 * candidates; a published name is a succeeded backup (an archive is only published after its read-back
 * verification). Temporaries (`*.partial-*`), manual backups, other schedules' backups and foreign files are
 * never touched. The caller runs it only after a backup succeeded, never after a failed one.
 */
import { parseBackupName, type StoredBackup } from './format.js';

/** Retention limits: either or both. */
export interface RetentionPolicy {
  /** Keep this many newest backups (by due time). */
  count?: number | undefined;
  /** Delete backups whose due time is older than now minus this, in ms. */
  maxAgeMs?: number | undefined;
}

/** What to keep and delete, newest first. */
export interface RetentionPlan {
  keep: string[];
  delete: string[];
}

/**
 * Plans retention for `schedule` over `files` at `nowMs` (UTC ms). The newest backup is always kept, whatever
 * the limits, so a policy can never delete the backup that was just made.
 */
export function planRetention(files: readonly StoredBackup[], schedule: string, policy: RetentionPolicy, nowMs: number): RetentionPlan {
  const mine = files
    .map((f) => ({ name: f.name, p: parseBackupName(f.name) }))
    .filter((x): x is { name: string; p: NonNullable<ReturnType<typeof parseBackupName>> } => x.p !== undefined && x.p.schedule === schedule && !x.p.manual)
    .sort((a, b) => b.p.dueMs - a.p.dueMs || a.name.localeCompare(b.name));
  const keep: string[] = [];
  const del: string[] = [];
  mine.forEach((x, i) => {
    const tooMany = policy.count !== undefined && i >= policy.count;
    const tooOld = policy.maxAgeMs !== undefined && x.p.dueMs < nowMs - policy.maxAgeMs;
    if (i > 0 && (tooMany || tooOld)) del.push(x.name);
    else keep.push(x.name);
  });
  return { keep, delete: del };
}

/** How old a temporary must be before {@link staleTemporaries} names it: 24 h, in ms. */
export const STALE_TEMPORARY_MS = 24 * 3_600_000;

const TEMP_RE = /^\.?(.+)\.partial-[0-9a-f]{12}$/;

/**
 * This schedule's temporaries (`.<name>.partial-<12 hex>` locally, `<name>.partial-<12 hex>` on S3, where `<name>`
 * parses as one of its backups) last modified more than `olderThanMs` before `nowMs`: left by a writer that
 * crashed (an aborted or failed writer removes its own). A live writer's file is never that old: locally its
 * mtime moves while it writes, and on S3 a temporary only exists between the end of its upload and its publish.
 */
export function staleTemporaries(files: readonly StoredBackup[], schedule: string, nowMs: number, olderThanMs = STALE_TEMPORARY_MS): string[] {
  return files
    .filter((f) => {
      const m = TEMP_RE.exec(f.name);
      return m !== null && parseBackupName(m[1]!)?.schedule === schedule && f.modifiedMs < nowMs - olderThanMs;
    })
    .map((f) => f.name);
}
