#!/usr/bin/env bash
# Build a pinned component of the test cluster once per version and print the binary's
# path: `build.sh` (or `build.sh k8s`) the Kubernetes components (scripts/k8s/tools: one
# binary), `build.sh kubectl` kubectl alone (the same module: a link once k8s is built),
# `build.sh coredns` CoreDNS (scripts/k8s/coredns), `build.sh jobset` the JobSet
# controller (scripts/k8s/jobset: sigs.k8s.io/jobset's own main). Each binary is kept under
# ~/.cache/wick/k8s/<name>-<version>-<hash of its module>/ (the Kubernetes one under
# <version>-<hash>/, as before), so a warm machine (or CI with that cache) reuses it; the
# Go build cache makes a rebuild after a change to a module a link rather than a compile.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="/usr/local/go/bin:$PATH"
what="${1:-k8s}"
pkg=.
case "$what" in
  k8s) module="$here/tools" pin=k8s.io/kubernetes prefix= cold="~830 CPU-s" ;;
  # kubectl on its own, as users have it (the one in the k8s binary starts slower: it
  # links the control plane too): the baseline of the kubernetes benchmarks.
  kubectl) module="$here/tools" pin=k8s.io/kubernetes prefix=kubectl- pkg=k8s.io/kubernetes/cmd/kubectl cold="a link once k8s is built" ;;
  coredns) module="$here/coredns" pin=github.com/coredns/coredns prefix=coredns- cold="~40 CPU-s" ;;
  jobset) module="$here/jobset" pin=sigs.k8s.io/jobset prefix=jobset- pkg=sigs.k8s.io/jobset cold="~370 CPU-s" ;;
  *) echo "k8s build: unknown component $what (want k8s, kubectl, coredns or jobset)" >&2; exit 2 ;;
esac
version="$(awk -v m="$pin" '$1 == "require" {$1 = ""; $0 = $0} $1 == m && $2 ~ /^v[0-9]/ {print $2; exit}' "$module/go.mod")"
[ -n "$version" ] || { echo "k8s build: no $pin version in $module/go.mod" >&2; exit 1; }
files=("$module/go.mod" "$module/go.sum")
[ -f "$module/main.go" ] && files+=("$module/main.go") # the jobset module has none: its main is upstream's
sum="$(cat "${files[@]}" | sha256sum | cut -c1-12)"
dir="${WICK_K8S_CACHE:-$HOME/.cache/wick/k8s}/$prefix$version-$sum"
bin="$dir/$what"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir"
echo "k8s build: building $pin $version into $bin (cold: $cold; warm: a link)" >&2
start=$(date +%s)
# -trimpath and no DWARF keep the binary small; CGO off as upstream builds its release.
( cd "$module" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" "$pkg" )
mv "$bin.tmp" "$bin"
echo "k8s build: done in $(( $(date +%s) - start ))s" >&2
echo "$bin"
