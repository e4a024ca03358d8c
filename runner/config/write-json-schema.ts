/**
 * Writes `schema/schedules.schema.json` from the zod schema (`npm run schema` after a build, or
 * `npx tsx runner/config/write-json-schema.ts`). A test fails when the committed file is stale.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JSON_SCHEMA_PATH, scheduleFileJsonSchemaText } from './json-schema.js';

/** The nearest directory above this file (in runner/ or dist/runner/) that holds package.json. */
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
}

const target = join(projectRoot(), JSON_SCHEMA_PATH);
await writeFile(target, scheduleFileJsonSchemaText());
console.log(`wrote ${target}`);
