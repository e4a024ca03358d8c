/**
 * Watching schedule files for changes, so a replica reloads them (sources.ts).
 */
import { statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Calls `onChange` (debounced 300 ms) when the schedule file, or a schedule or `.ics` file of the schedule
 * directory, changes.
 * Watches the directory, so editors that replace files and Kubernetes ConfigMap updates (a symlink swap) are
 * seen. The watch does not keep the process alive.
 * @returns a function that stops watching (a path that cannot be watched is not watched: SIGHUP still reloads).
 */
export function watchSchedules(path: string, onChange: () => void): () => void {
  let dir = path;
  let only: string | undefined;
  try {
    if (!statSync(path).isDirectory()) {
      dir = dirname(path);
      only = basename(path);
    }
    let timer: NodeJS.Timeout | undefined;
    const watcher = watch(dir, (_event, file) => {
      // Only schedule files (and a ConfigMap mount's `..data` swap) matter: an editor's swap file or a note
      // beside them must not make every replica re-read and re-publish thousands of schedules.
      const name = file === null ? undefined : String(file);
      // Calendars' .ics files beside the schedule files count too (they are read at load).
      if (name !== undefined && !name.startsWith('..') && !/^[^.].*\.ics$/.test(name) && (only ? name !== only : !/^[^.].*\.ya?ml$/.test(name))) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(onChange, 300);
    }).unref();
    return () => {
      if (timer) clearTimeout(timer);
      watcher.close();
    };
  } catch {
    /* a path that cannot be watched still reloads on SIGHUP */
    return () => undefined;
  }
}
