#!/usr/bin/env bash
# Stop the throwaway cluster started by scripts/k8s/up.sh, by pid: the JobSet controller
# (scripts/k8s/jobset.sh), the kubelet, CoreDNS,
# the control plane and etcd; the pods' containers through its own containerd (killed and
# deleted), then that containerd and any shim of it left. Unmount what the kubelet
# and containerd mounted under the cluster's directory, remove the bridge, its iptables rule and the kubelet's empty cgroups, then the
# directory itself except its logs. Safe to run twice and after a failed start.
set -uo pipefail

ROOT="${WICK_K8S_ROOT:-/tmp/wick-k8s}"
BRIDGE="${WICK_K8S_BRIDGE:-wick-k8s0}"
export PATH="$PATH:/usr/sbin:/sbin"
SOCK="$ROOT/containerd/containerd.sock"

stop() { # stop NAME: SIGTERM, wait up to 10 s, then SIGKILL; remove its pid file
  local f="$ROOT/run/$1.pid" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

[ -d "$ROOT" ] || { echo "k8s-down: nothing to stop ($ROOT is absent)"; exit 0; }
rm -f "$ROOT/up"

stop jobset &
stop kubelet &
stop kube-scheduler &
stop kube-controller-manager &
stop coredns &
wait

# The pods: kill and delete every task of our containerd (their shims then exit).
# Their network namespaces are mounted under our state dir
# (netns_mounts_under_state_dir), unmounted below with the rest.
if [ -S "$SOCK" ] && [ -f "$ROOT/run/containerd.pid" ] && kill -0 "$(cat "$ROOT/run/containerd.pid")" 2>/dev/null; then
  ctr() { timeout 20 command ctr --address "$SOCK" -n k8s.io "$@"; }
  for id in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$id" >/dev/null 2>&1; done
  sleep 0.5
  for id in $(ctr tasks ls -q 2>/dev/null); do ctr tasks delete -f "$id" >/dev/null 2>&1; done
fi
stop containerd
# What of the pods is left (containerd was killed hard, or a task would not die): each
# task's bundle under our state dir names its container's init pid and its shim's pid.
for f in "$ROOT"/containerd/state/io.containerd.runtime.v2.task/*/*/init.pid \
  "$ROOT"/containerd/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
  [ -f "$f" ] || continue
  pid="$(cat "$f" 2>/dev/null)"
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
done
stop kube-apiserver
stop etcd

# Mounts under the cluster's directory (pod volumes, sandbox shm, snapshots), deepest first.
for _ in 1 2 3; do
  mapfile -t mounts < <(findmnt -rn -o TARGET | grep -F "$ROOT/" | sort -r)
  [ "${#mounts[@]}" = 0 ] && break
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done

if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
while iptables -C FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT -m comment --comment wick-k8s 2>/dev/null; do
  iptables -D FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT -m comment --comment wick-k8s
done
for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
done

if findmnt -rn -o TARGET | grep -qF "$ROOT/"; then
  echo "k8s-down: mounts remain under $ROOT; left it in place:" >&2
  findmnt -rn -o TARGET | grep -F "$ROOT/" >&2
  exit 1
fi
find "$ROOT" -mindepth 1 -maxdepth 1 ! -name log -exec rm -rf {} +
echo "k8s-down: stopped (logs in $ROOT/log)"
