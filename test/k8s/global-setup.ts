/**
 * Global setup of the `k8s` vitest project (vitest.config.ts): one control plane (etcd + kube-apiserver) for
 * the whole run, handed to test files with `provide('k8s', ...)` (read it with `inject('k8s')`, or through
 * test/k8s/harness.ts). Vitest runs a project's global setup only when files of that project are selected,
 * so `npx vitest run test/integration` never starts Kubernetes.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { binDirFor, BUILD_SCRIPT, startControlPlane, type ControlPlaneInfo } from './control-plane.js';

declare module 'vitest' {
  export interface ProvidedContext {
    k8s: ControlPlaneInfo;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const binDir = binDirFor();
  if (!fs.existsSync(path.join(binDir, 'kube-apiserver')) || !fs.existsSync(path.join(binDir, 'etcd'))) {
    throw new Error(
      `the k8s tests need kube-apiserver and etcd in ${binDir}; build them once with: bash ${path.relative(process.cwd(), BUILD_SCRIPT)}`,
    );
  }
  const t0 = Date.now();
  const cp = await startControlPlane({ binDir });
  console.log(`k8s: control plane ${cp.version} ready at ${cp.server} in ${Date.now() - t0} ms (dir ${cp.dir})`);
  const { stop, ...info } = cp;
  project.provide('k8s', info);
  return stop;
}
