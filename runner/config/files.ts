/**
 * Schedule files and directories: which files a path names, the size limit, and the errors of reading them
 * (`CONFIG_IO`, `FILE_TOO_LARGE`, line 0). The loader's only contact with the file system besides
 * {@link readBounded} and the calendars' ICS files.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from './errors.js';

export const SCHEDULE_FILE = /^[^.].*\.ya?ml$/;

/**
 * Largest schedule file read (16 MiB, ~150,000 schedules). Parsing takes several times a file's size in memory
 * (a 200 MB file took 1 GB; 600 MB failed inside V8), so a larger file is refused before it is read: split it into
 * several files of a directory, which are parsed one at a time.
 */
export const MAX_SCHEDULE_FILE_BYTES = 16 * 1024 * 1024;

/** The schedule files of `dir`: `*.yaml` / `*.yml`, not starting with `.`, regular files (symlinks followed), sorted by code unit. */
export async function scheduleFilesIn(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => SCHEDULE_FILE.test(n)).sort(compareCodeUnits);
  const files: string[] = [];
  for (const n of names) {
    const file = join(dir, n);
    if ((await stat(file).catch(() => null))?.isFile()) files.push(file);
  }
  return files;
}

/** `FILE_TOO_LARGE` for a file of `sizeBytes` bytes (larger than {@link MAX_SCHEDULE_FILE_BYTES}). */
export function tooLarge(file: string, sizeBytes: number): ConfigError {
  const mib = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MiB`;
  return new ConfigError({
    code: 'FILE_TOO_LARGE',
    file,
    line: 0,
    col: 0,
    field: '',
    reason: `is ${mib(sizeBytes)}; a schedule file may be at most ${mib(MAX_SCHEDULE_FILE_BYTES)}`,
    hint: 'split the schedules into several *.yaml files in one directory and pass the directory',
  });
}

/** Sort order by UTF-16 code units (locale-independent, so every replica sorts alike). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A `CONFIG_IO` error at line 0 of `file`. */
export function ioError(file: string, reason: string, hint: string | undefined, cause: unknown): ConfigError {
  return new ConfigError({
    code: 'CONFIG_IO',
    file,
    line: 0,
    col: 0,
    field: '',
    reason,
    ...(hint ? { hint } : {}),
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Error order: by file, then line, then column. */
export function byPosition(a: ConfigError, b: ConfigError): number {
  return compareCodeUnits(a.file, b.file) || a.line - b.line || a.col - b.col;
}
