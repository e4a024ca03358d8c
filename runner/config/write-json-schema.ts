/**
 * Writes `schema/schedules.schema.json` from the zod schema (`npm run schema` after a build, or
 * `npx tsx runner/config/write-json-schema.ts`). A test fails when the committed file is stale.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { JSON_SCHEMA_PATH, scheduleFileJsonSchemaText } from './json-schema.js';
import { projectRoot } from '../project-root.js';

const target = join(projectRoot(), JSON_SCHEMA_PATH);
await writeFile(target, scheduleFileJsonSchemaText());
console.log(`wrote ${target}`);
