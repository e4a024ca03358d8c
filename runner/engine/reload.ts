/**
 * Reloading a running replica's schedule files (on a file change, SIGHUP, or a caller's request), with the rules
 * that keep bad input from stopping what works:
 * - reloads run one at a time, each reading the files again;
 * - a file refused on reload keeps its previous (running) version, and its errors are logged with their
 *   positions (a schedule it defined that another file now defines is not kept twice);
 * - a reload that finds no valid schedule at all keeps the running ones;
 * - the replica then applies the new set (engine/replica.ts `reload`: unchanged schedules go on, changed ones
 *   apply from their next due time, removed ones have their planned occurrences recorded skipped).
 */
import { loadSchedules, type CompiledSchedule, type LoadResult } from '../config/load.js';
import type { Logger } from '../log.js';
import type { Replica } from './replica.js';
import { watchSchedules } from './watch.js';

/**
 * The schedules to run after reading the files again: those of the valid files, plus the running schedules of
 * the refused files (unless a valid file now defines the name).
 * @returns them, and the refused files.
 */
export function schedulesAfterReload(current: readonly CompiledSchedule[], next: LoadResult): { schedules: CompiledSchedule[]; refused: string[] } {
  const refused = next.files.filter((f) => !f.ok).map((f) => f.file);
  const refusedSet = new Set(refused);
  const names = new Set(next.schedules.map((s) => s.name));
  const kept = current.filter((s) => refusedSet.has(s.source.file) && !names.has(s.name));
  return { schedules: [...next.schedules, ...kept], refused };
}

/** Reloads the schedule files at one path into a running replica, one reload at a time. */
export class ScheduleReloader {
  private current: readonly CompiledSchedule[];
  private reloading: Promise<void> = Promise.resolve();

  /**
   * @param path the schedule file or directory the replica was started on
   * @param current the schedules it runs now
   */
  constructor(
    private readonly replica: Pick<Replica, 'reload'>,
    private readonly path: string,
    current: readonly CompiledSchedule[],
    private readonly log: Logger,
  ) {
    this.current = current;
  }

  /**
   * Reads the files again and applies them (after any reload in flight), by the rules above.
   * @param why what asked for it, for the logs (`file changed`, `SIGHUP`).
   * @returns when done; never rejects: a failed reload is logged and the running schedules go on.
   */
  reload(why: string): Promise<void> {
    const log = this.log;
    return (this.reloading = this.reloading
      .then(async () => {
        const next = await loadSchedules(this.path);
        for (const e of next.errors) log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, `reload refused: ${e.reason}`);
        const { schedules, refused } = schedulesAfterReload(this.current, next);
        if (schedules.length === 0) {
          log.error({ why }, 'reload found no valid schedules; keeping the running ones');
          return;
        }
        this.current = schedules;
        const diff = await this.replica.reload(schedules); // logs 'schedules reloaded' when something changed
        const changed = diff.added.length + diff.changed.length + diff.removed.length > 0;
        if (refused.length > 0) log.warn({ why, refused }, `reload: ${refused.length} file(s) refused; their running versions go on`);
        else if (!changed) log.info({ why }, 'schedule files re-read; nothing changed');
      })
      .catch((err: Error) => log.error({ why, err: err.message }, 'reload failed; keeping the running schedules')));
  }

  /** Reloads when the files change (engine/watch.ts). @returns a function that stops watching. */
  watch(): () => void {
    return watchSchedules(this.path, () => void this.reload('file changed'));
  }
}
