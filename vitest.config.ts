import { configDefaults, defineConfig } from 'vitest/config';

// Integration tests start real redis-server and replica processes: give them room on a shared 2-core machine
// and do not run files in parallel with each other (they compete for CPU and skew each other's timing).
//
// Two projects, so that each pays only for its own global setup: vitest runs a project's globalSetup only when
// files of that project are selected. `core` builds dist/ once; `k8s` (test/k8s/**: tests against a real API
// server) starts one real etcd + kube-apiserver (test/k8s/global-setup.ts). Pure unit tests beside k8s/ code
// need no server and stay in `core`. `npm test` runs both; `npx vitest run test/integration` never starts
// Kubernetes.
// Different `sequence.groupOrder`s keep the two projects' files from running at the same time.
export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    projects: [
      {
        extends: true,
        test: {
          name: 'core',
          include: ['runner/**/*.test.ts', 'receiver/**/*.test.ts', 'jobs/**/*.test.ts', 'k8s/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/k8s/**'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'k8s',
          include: ['test/k8s/**/*.test.ts'],
          globalSetup: ['test/k8s/global-setup.ts'],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
