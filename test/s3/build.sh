#!/usr/bin/env bash
# Installs the real S3-compatible server the backup tests run: moto's standalone server (`moto_server`, the
# `moto[server]` package from PyPI), in a Python virtual environment outside the repository, keyed by version:
#   ${CRONFLOCK_CACHE:-~/.cache/cronflock}/s3-moto-<MOTO_VERSION>/bin/moto_server
# Why moto and not MinIO: MinIO is AGPL and not on the Go module proxy these machines may use; moto's server
# speaks the S3 REST API (multipart uploads, CopyObject, ListObjectsV2, path-style addressing) over real HTTP.
# Idempotent: exits at once when the server is installed. Prints the directory holding it on its last line.
# Needs python3 (>= 3.9) with the venv module (Debian: python3-venv).
set -euo pipefail

MOTO_VERSION="${CRONFLOCK_MOTO_VERSION:-5.2.5}"
CACHE="${CRONFLOCK_CACHE:-$HOME/.cache/cronflock}"
OUT="$CACHE/s3-moto-$MOTO_VERSION"

if [ -x "$OUT/bin/moto_server" ] && [ -f "$OUT/VERSION" ]; then
  echo "s3 build: cached in $OUT"
  echo "$OUT"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "s3 build: python3 is needed (Debian: apt-get install python3 python3-venv)" >&2; exit 1; }
started=$(date +%s)
# Build into a temporary directory and move it into place, so an interrupted install is never taken as cached.
TMP="$OUT.tmp.$$"
rm -rf "$TMP"
mkdir -p "$CACHE"
trap 'rm -rf "$TMP"' EXIT
python3 -m venv "$TMP" || { echo "s3 build: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
echo "s3 build: installing moto[server]==$MOTO_VERSION from PyPI into $OUT"
nice -n 19 "$TMP/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "moto[server]==$MOTO_VERSION"
"$TMP/bin/python" -c 'import moto, flask; print(moto.__version__)' > "$TMP/VERSION"
# A venv records its own path in its scripts: recreate the entry points at the final location by moving first
# and then rewriting the shebangs that point into the temporary directory.
rm -rf "$OUT"
mv "$TMP" "$OUT"
trap - EXIT
grep -rlI --null "$TMP" "$OUT/bin" | xargs -0 -r sed -i "s#$TMP#$OUT#g"
"$OUT/bin/moto_server" --help >/dev/null
echo "s3 build: moto $(cat "$OUT/VERSION") installed in $(( $(date +%s) - started )) s"
echo "$OUT"
