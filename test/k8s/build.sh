#!/usr/bin/env bash
# Builds the real Kubernetes control-plane binaries the k8s tests run: kube-apiserver from the k8s.io/kubernetes
# module, and etcd from the go.etcd.io modules, both through the Go module proxy, the way projects that embed
# Kubernetes build it (a throwaway module whose go.mod requires k8s.io/kubernetes and replaces every staging
# module, which kubernetes' own go.mod pins to v0.0.0 => ./staging/..., with its matching v0.N.M release).
#
# Binaries are cached outside the repository, keyed by version:
#   ${CRONFLOCK_CACHE:-~/.cache/cronflock}/k8s-<K8S_VERSION>/{kube-apiserver,etcd,VERSIONS}
# The throwaway module lives in ${CRONFLOCK_CACHE}/build/. Nothing of Kubernetes' source enters the repository.
# Idempotent: exits at once when both binaries are cached. Prints the directory holding them on its last line.
#
# Builds run at the lowest priority (nice 19) and one package at a time (go build -p 1) so that the other
# test suites' timing checks on this 2-core machine are not starved; CRONFLOCK_BUILD_JOBS overrides -p (CI,
# where nothing else runs, uses both cores).
#
# Why etcd is built and not taken from Debian: Debian's etcd-server is 3.4.23. kube-apiserver 1.37 does start on
# it, but logs "RequestWatchProgress feature is not supported" and serves consistent lists differently (from
# etcd, not its watch cache) than on a supported etcd; kubeadm 1.37's MinExternalEtcdVersion is 3.5.24 and
# Kubernetes' own integration tests (hack/lib/etcd.sh) require etcd >= 3.7.0. So etcd is built at the release
# kubernetes' go.mod pins go.etcd.io/etcd/client/v3 to (3.7.0 for v1.37.2).
set -euo pipefail

K8S_VERSION="${CRONFLOCK_K8S_VERSION:-v1.37.2}"
CACHE="${CRONFLOCK_CACHE:-$HOME/.cache/cronflock}"
OUT="$CACHE/k8s-$K8S_VERSION"
JOBS="${CRONFLOCK_BUILD_JOBS:-$([ "${CI:-}" = true ] && nproc || echo 1)}"

if [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ]; then
  echo "k8s build: cached in $OUT"
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null 2>&1 || { echo "k8s build: the go command is needed (Go >= 1.26)" >&2; exit 1; }
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=0
started=$(date +%s)
mkdir -p "$OUT"

# ---- kube-apiserver -------------------------------------------------------------------------------------
K8S_MINOR="${K8S_VERSION#v1.}"          # 37.2
STAGING_VERSION="v0.$K8S_MINOR"          # v0.37.2
MOD="$CACHE/build/kube-apiserver-$K8S_VERSION"
if [ ! -x "$OUT/kube-apiserver" ]; then
  mkdir -p "$MOD"
  cd "$MOD"
  # Read the staging list from the release's own go.mod: every `k8s.io/x => ./staging/src/k8s.io/x`.
  kgomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$kgomod" ] || { echo "k8s build: could not download k8s.io/kubernetes@$K8S_VERSION's go.mod" >&2; exit 1; }
  staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$kgomod")
  [ -n "$staging" ] || { echo "k8s build: found no staging replaces in $kgomod" >&2; exit 1; }
  goline=$(sed -n 's/^go \(.*\)$/\1/p' "$kgomod")
  {
    echo "// Throwaway module made by cronflock's test/k8s/build.sh: builds kube-apiserver $K8S_VERSION."
    echo "module cronflock.local/kube-apiserver-build"
    echo
    echo "go $goline"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $STAGING_VERSION"; done
    echo ")"
  } > go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' > tools.go
  echo "k8s build: resolving kube-apiserver $K8S_VERSION's modules (staging at $STAGING_VERSION)"
  go mod tidy
  echo "k8s build: compiling kube-apiserver $K8S_VERSION (nice 19, -p $JOBS)"
  t0=$(date +%s)
  nice -n 19 go build -p "$JOBS" -trimpath -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 \
    -X k8s.io/component-base/version.gitMinor=${K8S_MINOR%%.*} \
    -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" \
    -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
  echo "k8s build: kube-apiserver compiled in $(( $(date +%s) - t0 )) s"
fi

# ---- etcd -----------------------------------------------------------------------------------------------
# The etcd release: the one kubernetes' go.mod pins go.etcd.io/etcd/client/v3 to (unless overridden).
ETCD_VERSION="${CRONFLOCK_ETCD_VERSION:-}"
if [ -z "$ETCD_VERSION" ]; then
  cd "$MOD" 2>/dev/null || { mkdir -p "$MOD"; cd "$MOD"; }
  kgomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  ETCD_VERSION=$(sed -n 's#^[[:space:]]*go\.etcd\.io/etcd/client/v3 \(v[0-9.]*\).*#\1#p' "$kgomod" | head -n1)
fi
EMOD="$CACHE/build/etcd-$ETCD_VERSION"
if [ ! -x "$OUT/etcd" ]; then
  mkdir -p "$EMOD"
  cd "$EMOD"
  {
    echo "// Throwaway module made by cronflock's test/k8s/build.sh: builds etcd $ETCD_VERSION."
    echo "module cronflock.local/etcd-build"
    echo
    echo "go 1.26.0"
    echo
    echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  } > go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n' > tools.go
  # etcd's binary is the tiny go.etcd.io/etcd/v3 main package: etcdmain.Main(os.Args). Build the same here.
  mkdir -p cmd/etcd
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' > cmd/etcd/main.go
  echo "k8s build: resolving etcd $ETCD_VERSION's modules"
  go mod tidy
  echo "k8s build: compiling etcd $ETCD_VERSION (nice 19, -p $JOBS)"
  t0=$(date +%s)
  nice -n 19 go build -p "$JOBS" -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" ./cmd/etcd
  mv "$OUT/etcd.tmp" "$OUT/etcd"
  echo "k8s build: etcd compiled in $(( $(date +%s) - t0 )) s"
fi

printf 'kube-apiserver %s\netcd %s\nbuilt %s in %s s\n' "$K8S_VERSION" "$ETCD_VERSION" "$(date -u +%FT%TZ)" \
  "$(( $(date +%s) - started ))" > "$OUT/VERSIONS"
echo "k8s build: done in $(( $(date +%s) - started )) s"
echo "$OUT"
