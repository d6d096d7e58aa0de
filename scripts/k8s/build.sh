#!/usr/bin/env bash
# Build the pinned Kubernetes components (scripts/k8s/tools) once per version and print
# the binary's path. The binary is kept under ~/.cache/wick/k8s/<version>-<hash of the
# tools module>/, so a warm machine (or CI with that cache) reuses it; the Go build cache
# makes a rebuild after a change to the module a link rather than a compile.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="/usr/local/go/bin:$PATH"
tools="$here/tools"
version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ {print $2; exit}' "$tools/go.mod")"
[ -n "$version" ] || { echo "k8s build: no k8s.io/kubernetes version in $tools/go.mod" >&2; exit 1; }
sum="$(cat "$tools/go.mod" "$tools/go.sum" "$tools/main.go" | sha256sum | cut -c1-12)"
dir="${WICK_K8S_CACHE:-$HOME/.cache/wick/k8s}/$version-$sum"
bin="$dir/k8s"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir"
echo "k8s build: building Kubernetes $version into $bin (cold: ~830 CPU-s; warm: a link)" >&2
start=$(date +%s)
# -trimpath and no DWARF keep the binary small; CGO off as upstream builds its release.
( cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" . )
mv "$bin.tmp" "$bin"
echo "k8s build: done in $(( $(date +%s) - start ))s" >&2
echo "$bin"
