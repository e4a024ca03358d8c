/**
 * Where the cronflock package is, found from this module's own location: the CLI runs as compiled code in
 * `dist/runner/cli/` (bin/cronflock.js) and as TypeScript in `runner/cli/` (tsx, tests), at different depths.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's root directory (with a trailing slash): the nearest directory above this module whose
 * package.json is cronflock's.
 * @throws Error when there is none (a broken installation).
 */
export function packageRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'cronflock') return `${dir}/`;
    if (dirname(dir) === dir) throw new Error(`cannot find cronflock's package.json above ${fileURLToPath(import.meta.url)}`);
  }
}

/** The package's version (package.json). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
