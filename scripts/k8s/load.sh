#!/usr/bin/env bash
# Move images from the Docker Engine onto the node of the cluster scripts/k8s/up.sh
# started (docker save | ctr import into its containerd's k8s.io namespace), so that pods
# with imagePullPolicy Never or IfNotPresent run them without a registry.
# Usage: load.sh IMAGE...
set -euo pipefail
ROOT="${WICK_K8S_ROOT:-/tmp/wick-k8s}"
SOCK="$ROOT/containerd/containerd.sock"
[ $# -gt 0 ] || { echo "k8s-load: name an image: make k8s-load IMAGE=NAME" >&2; exit 2; }
[ -f "$ROOT/up" ] && [ -S "$SOCK" ] || { echo "k8s-load: no cluster is up under $ROOT: make k8s-up first" >&2; exit 1; }
for image in "$@"; do
  docker image inspect "$image" >/dev/null 2>&1 || { echo "k8s-load: the Docker Engine has no image $image" >&2; exit 1; }
  docker save "$image" | timeout 300 ctr --address "$SOCK" -n k8s.io images import - >/dev/null
  echo "k8s-load: $image is on the node"
done
