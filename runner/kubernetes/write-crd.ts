/**
 * Writes `k8s/crds/schedules.cronflock.io.yaml` from the zod schema (`npm run schema` after a build, or
 * `npx tsx runner/kubernetes/write-crd.ts`). A test fails when the committed file is stale.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CRD_PATH, scheduleCrdYaml } from './crd.js';
import { projectRoot } from '../project-root.js';

const target = join(projectRoot(), CRD_PATH);
await mkdir(dirname(target), { recursive: true });
await writeFile(target, scheduleCrdYaml());
console.log(`wrote ${target}`);
