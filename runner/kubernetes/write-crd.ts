/**
 * Writes `k8s/crds/schedules.cronflock.io.yaml` from the zod schema (`npm run schema` after a build, or
 * `npx tsx runner/kubernetes/write-crd.ts`). A test fails when the committed file is stale.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_PATH, scheduleCrdYaml } from './crd.js';

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

const target = join(projectRoot(), CRD_PATH);
await mkdir(dirname(target), { recursive: true });
await writeFile(target, scheduleCrdYaml());
console.log(`wrote ${target}`);
