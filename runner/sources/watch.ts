/**
 * Watching schedule files for changes, so a replica reloads them (sources.ts).
 */
import { lstatSync, readdirSync, statSync, watch } from 'node:fs';
import { basename, dirname, join } from 'node:path';

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

/**
 * A signature of what {@link watchSchedules} watches for `path` (the directory of a schedule file, or the schedule
 * directory): each entry's name, inode, size and modification time (of the entry and, for a symlink such as a
 * ConfigMap's `..data`, of its target), and the directory's own. Equal signatures taken before and after a read
 * mean the read saw what is there now; a change of content that keeps size and time to the millisecond is not
 * seen (as with `make`). Synchronous: for start-up, not a hot path. Unreadable: a signature that equals nothing.
 */
export function watchedStamp(path: string): string {
  try {
    const dir = statSync(path).isDirectory() ? path : dirname(path);
    const one = (p: string): string => {
      const l = lstatSync(p);
      let s = `${l.ino}:${l.size}:${l.mtimeMs}`;
      if (l.isSymbolicLink()) {
        const t = statSync(p, { throwIfNoEntry: false });
        s += t ? `>${t.ino}:${t.size}:${t.mtimeMs}` : '>-';
      }
      return s;
    };
    const entries = readdirSync(dir).sort();
    return [`.:${one(dir)}`, ...entries.map((e) => `${e}:${one(join(dir, e))}`)].join('\n');
  } catch {
    return `unreadable:${Math.random()}`;
  }
}
