#!/usr/bin/env bash
# Builds the two Go tools the deploy tests use, from the Go module proxy, cached outside the repository by version:
#   ${CRONFLOCK_CACHE:-~/.cache/cronflock}/deploy-tools/kustomize-<KUSTOMIZE_VERSION>
#     sigs.k8s.io/kustomize/kustomize/v5: builds k8s/deploy/ (test/k8s/deploy.test.ts)
#   ${CRONFLOCK_CACHE:-~/.cache/cronflock}/deploy-tools/compose-config-<COMPOSE_GO_VERSION>
#     a few lines over github.com/compose-spec/compose-go/v2's loader (what `docker compose config` runs): loads
#     docker-compose.yml with its JSON-schema validation, interpolation and profiles, prints the model as JSON
#     (test/deploy/compose.test.ts)
#   ${CRONFLOCK_CACHE:-~/.cache/cronflock}/deploy-tools/helm-<HELM_VERSION>
#     helm.sh/helm/<major>/cmd/helm: lints and renders k8s/helm/cronflock (test/k8s/helm.test.ts)
#   ${CRONFLOCK_CACHE:-~/.cache/cronflock}/deploy-tools/promtool-<PROMETHEUS_VERSION>
#     github.com/prometheus/prometheus/cmd/promtool: checks and unit-tests the shipped alert rules
#     (test/integration/alert-rules.test.ts); the module's v0.3xx.y versions are Prometheus 3.xx.y
# Idempotent: exits at once when all are cached. Prints the directory on its last line.
set -euo pipefail

KUSTOMIZE_VERSION="${CRONFLOCK_KUSTOMIZE_VERSION:-v5.8.1}"
COMPOSE_GO_VERSION="${CRONFLOCK_COMPOSE_GO_VERSION:-v2.16.2}"
HELM_VERSION="${CRONFLOCK_HELM_VERSION:-v3.22.0}"
PROMETHEUS_VERSION="${CRONFLOCK_PROMETHEUS_VERSION:-v0.316.0}"
CACHE="${CRONFLOCK_CACHE:-$HOME/.cache/cronflock}"
OUT="$CACHE/deploy-tools"
JOBS="${CRONFLOCK_BUILD_JOBS:-$([ "${CI:-}" = true ] && nproc || echo 1)}"
KUSTOMIZE="$OUT/kustomize-$KUSTOMIZE_VERSION"
COMPOSE="$OUT/compose-config-$COMPOSE_GO_VERSION"
HELM="$OUT/helm-$HELM_VERSION"
PROMTOOL="$OUT/promtool-$PROMETHEUS_VERSION"

if [ -x "$KUSTOMIZE" ] && [ -x "$COMPOSE" ] && [ -x "$HELM" ] && [ -x "$PROMTOOL" ]; then
  echo "deploy tools: cached in $OUT"
  echo "$OUT"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "deploy tools: the go command is needed" >&2; exit 1; }
export CGO_ENABLED=0
mkdir -p "$OUT"

# go_install PACKAGE@VERSION BINARY TARGET: `go install` into a temporary GOBIN, then moved to TARGET (so an
# interrupted build leaves no half-written tool behind).
go_install() {
  local tmp
  tmp=$(mktemp -d "$OUT/gobin.XXXXXX")
  GOBIN="$tmp" nice -n 19 go install -p "$JOBS" -trimpath -ldflags "-s -w" "$1"
  mv "$tmp/$2" "$3"
  rmdir "$tmp"
}

if [ ! -x "$KUSTOMIZE" ]; then
  echo "deploy tools: building kustomize $KUSTOMIZE_VERSION (nice 19, -p $JOBS)"
  go_install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" kustomize "$KUSTOMIZE"
fi

if [ ! -x "$COMPOSE" ]; then
  MOD="$CACHE/build/compose-config-$COMPOSE_GO_VERSION"
  mkdir -p "$MOD"
  cd "$MOD"
  cat > go.mod <<GOMOD
// Throwaway module made by cronflock's test/deploy/build-tools.sh.
module cronflock.local/compose-config

go 1.24

require github.com/compose-spec/compose-go/v2 $COMPOSE_GO_VERSION
GOMOD
  cat > main.go <<'GO'
// compose-config FILE [PROFILE...]: loads a compose file the way `docker compose config` does (schema validation,
// interpolation from the environment, profiles) and prints the resolved project as JSON; exit 1 with the error.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-config FILE [PROFILE...]")
		os.Exit(2)
	}
	file, _ := filepath.Abs(os.Args[1])
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithOsEnv,
		cli.WithWorkingDirectory(filepath.Dir(file)),
		cli.WithName("cronflock"),
		cli.WithProfiles(os.Args[2:]),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := json.MarshalIndent(project, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
GO
  echo "deploy tools: building compose-config on compose-go $COMPOSE_GO_VERSION (nice 19, -p $JOBS)"
  go mod tidy
  nice -n 19 go build -p "$JOBS" -trimpath -ldflags "-s -w" -o "$COMPOSE.tmp" .
  mv "$COMPOSE.tmp" "$COMPOSE"
fi
if [ ! -x "$HELM" ]; then
  # The module path carries the major version (helm.sh/helm/v3, helm.sh/helm/v4).
  major="${HELM_VERSION%%.*}"
  echo "deploy tools: building helm $HELM_VERSION (nice 19, -p $JOBS)"
  go_install "helm.sh/helm/$major/cmd/helm@$HELM_VERSION" helm "$HELM"
fi
if [ ! -x "$PROMTOOL" ]; then
  echo "deploy tools: building promtool $PROMETHEUS_VERSION (nice 19, -p $JOBS)"
  go_install "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" promtool "$PROMTOOL"
fi
echo "deploy tools: done"
echo "$OUT"
