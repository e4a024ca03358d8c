/**
 * Checkpoints of a restore: the scope that names the work (the same scope resumes) and the plan saved with what it
 * saw of each live object, so that a later holder reuses them instead of planning again.
 */
import { createHash } from 'node:crypto';
import type { BackupManifest } from '../backup/format.js';
import type { JobCheckpoints } from '../types.js';
import type { Seen } from './context.js';
import type { RestorePlan } from './types.js';

/** Checkpoint scope: the caller's scope plus what makes two restores different work. */
export function checkpointScope(scope: string, m: BackupManifest, prune: boolean): string {
  const h = createHash('sha256').update(JSON.stringify([m.name, m.createdAt, m.objects.length, prune])).digest('hex').slice(0, 16);
  return `${scope.replace(/\s+/g, '_')}:${h}`;
}

/**
 * Saves the plan and what it saw of each live object (`l:<path>` → `<uid> <hash>` or `-` for absent; 500 fields a
 * write), the plan last, so that a saved plan always comes with its observations.
 */
export async function savePlan(checkpoints: JobCheckpoints, seenByPath: Map<string, Seen | null>, plan: RestorePlan): Promise<void> {
  const seen = [...seenByPath.entries()];
  for (let i = 0; i < seen.length; i += 500) {
    await checkpoints.set(Object.fromEntries(seen.slice(i, i + 500).map(([path, v]) => [`l:${path}`, v ? `${v.uid} ${v.hash}` : '-'])));
  }
  await checkpoints.set({ plan: JSON.stringify(plan) });
}
