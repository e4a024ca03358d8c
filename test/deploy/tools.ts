/**
 * The Go tools of the deploy tests (kustomize, compose-go's loader, helm, promtool), built from the Go module proxy by
 * test/deploy/build-tools.sh and cached outside the repository by version. Building is a no-op when cached; CI
 * builds them in .ci/run before the tests.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const KUSTOMIZE_VERSION = process.env.CRONFLOCK_KUSTOMIZE_VERSION ?? 'v5.8.1';
export const COMPOSE_GO_VERSION = process.env.CRONFLOCK_COMPOSE_GO_VERSION ?? 'v2.16.2';
export const HELM_VERSION = process.env.CRONFLOCK_HELM_VERSION ?? 'v3.22.0';
/** github.com/prometheus/prometheus module version: v0.3xx.y is Prometheus 3.xx.y. */
export const PROMETHEUS_VERSION = process.env.CRONFLOCK_PROMETHEUS_VERSION ?? 'v0.316.0';
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'build-tools.sh');

/** Paths of the tools, building them first if they are not cached. */
export function deployTools(): { kustomize: string; composeConfig: string; helm: string; promtool: string } {
  const cache = process.env.CRONFLOCK_CACHE ?? path.join(process.env.HOME ?? '/root', '.cache/cronflock');
  const dir = path.join(cache, 'deploy-tools');
  const tools = {
    kustomize: path.join(dir, `kustomize-${KUSTOMIZE_VERSION}`),
    composeConfig: path.join(dir, `compose-config-${COMPOSE_GO_VERSION}`),
    helm: path.join(dir, `helm-${HELM_VERSION}`),
    promtool: path.join(dir, `promtool-${PROMETHEUS_VERSION}`),
  };
  if (!Object.values(tools).every((t) => existsSync(t))) {
    execFileSync('bash', [SCRIPT], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 1_200_000 });
  }
  return tools;
}
