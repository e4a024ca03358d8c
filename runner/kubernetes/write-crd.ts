/**
 * Writes `k8s/crds/schedules.cronflock.io.yaml` from the zod schema (`npm run schema` after a build, or
 * `npx tsx runner/kubernetes/write-crd.ts`), and the same file into the Helm chart's `crds/` (Helm installs
 * CRDs only from the chart's own folder). Tests fail when either committed copy is stale.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CRD_PATH, scheduleCrdYaml } from './crd.js';

/** The chart's copy of the CRD (test/k8s/helm.test.ts checks it equals {@link CRD_PATH}). */
const HELM_CRD_PATH = 'k8s/helm/cronflock/crds/schedules.cronflock.io.yaml';
import { projectRoot } from '../project-root.js';

const yaml = scheduleCrdYaml();
for (const path of [CRD_PATH, HELM_CRD_PATH]) {
  const target = join(projectRoot(), path);
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, yaml);
  console.log(`wrote ${target}`);
}
