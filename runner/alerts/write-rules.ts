/**
 * Writes the alert rules in their three shipped forms from runner/alerts/rules.ts (`npm run alert-rules` after a
 * build). test/deploy/alert-rules.test.ts fails when a committed file differs from what this writes.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../cli/package-info.js';
import { RULE_FILES } from './files.js';

const root = packageRoot();
for (const f of RULE_FILES) {
  await writeFile(join(root, f.path), f.content());
  console.log(`wrote ${f.path}`);
}
