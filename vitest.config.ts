import { defineConfig } from 'vitest/config';

// Integration tests start real redis-server and replica processes: give them room on a shared 2-core machine
// and do not run files in parallel with each other (they compete for CPU and skew each other's timing).
export default defineConfig({
  test: {
    include: ['runner/**/*.test.ts', 'jobs/**/*.test.ts', 'k8s/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    globalSetup: ['test/support/global-setup.ts'],
  },
});
