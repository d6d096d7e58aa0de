#!/usr/bin/env bash
# Bring up a throwaway one-node Kubernetes cluster on this machine for wick's tests:
# etcd (Debian's etcd-server), kube-apiserver, kube-controller-manager, kube-scheduler
# and the kubelet (one binary built from source by scripts/k8s/build.sh), and a
# containerd of its own (own config, root, state and socket: never the system's) with
# runc and the CNI bridge + host-local plugins on a bridge of its own. No registry: the
# sandbox image is a static pause built with gcc, test images come from the Docker
# Engine (scripts/k8s/load.sh) and pods never pull.
#
# Everything lives under $WICK_K8S_ROOT (default /tmp/wick-k8s): config, certificates,
# state, logs, pid files and kubeconfig. It listens on 127.0.0.1 (etcd 23790/23800,
# apiserver 16443, controller-manager 16457, scheduler 16459, containerd's stream server
# 16010, CoreDNS's readiness 16181) and on the cluster's bridge $WICK_K8S_BRIDGE (default
# wick-k8s0, 10.244.77.1/24: the kubelet, 16250; CoreDNS, 53, the pods' nameserver). Docker's FORWARD DROP gets one ACCEPT rule for
# that bridge, removed by scripts/k8s/down.sh. Needs root. Idempotent: a running cluster
# is left alone. On failure it stops what it started.
#
# Two traps of this machine, from issue #31: root lacks CAP_SYS_RESOURCE, so runc fails
# every sandbox ("can't get final child's PID from pipe: EOF") unless containerd has
# restrict_oom_score_adj and the kubelet oomScoreAdj 0.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
ROOT="${WICK_K8S_ROOT:-/tmp/wick-k8s}"
BRIDGE="${WICK_K8S_BRIDGE:-wick-k8s0}"
SUBNET_PREFIX=10.244.77
NODE_IP=$SUBNET_PREFIX.1
NODE=wick-k8s-node
PAUSE_IMAGE=wick.local/pause:3.10
export PATH="/usr/local/go/bin:$PATH:/usr/sbin:/sbin"

die() { echo "k8s-up: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (it starts containerd and the kubelet, makes a bridge and an iptables rule)"
for cmd in etcd containerd containerd-shim-runc-v2 runc ctr iptables ip openssl gcc docker; do
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd not found: apt-get install -y etcd-server containerd runc containernetworking-plugins iptables openssl gcc libc6-dev"
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] ||
  die "the CNI plugins are missing from /usr/lib/cni: apt-get install -y containernetworking-plugins"

KUBECONFIG_FILE="$ROOT/admin.kubeconfig"
MARK="$ROOT/up"

# Up: the mark is there and the node answers Ready.
if [ -f "$MARK" ] && [ -x "$ROOT/bin/k8s" ] &&
  "$ROOT/bin/k8s" kubectl --kubeconfig "$KUBECONFIG_FILE" --request-timeout=5s get node "$NODE" \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; then
  echo "k8s-up: already up (KUBECONFIG=$KUBECONFIG_FILE)"
  exit 0
fi
if [ -e "$ROOT" ]; then
  echo "k8s-up: $ROOT holds a cluster that is not up: stopping what is left of it first" >&2
  bash "$here/down.sh" >&2 || true
fi

bin="$(bash "$here/build.sh")"
coredns="$(bash "$here/build.sh" coredns)"
kubectl_bin="$(bash "$here/build.sh" kubectl)"
install -d -m 0755 "$ROOT" "$ROOT/bin" "$ROOT/log" "$ROOT/run" "$ROOT/pki" "$ROOT/etcd" \
  "$ROOT/containerd" "$ROOT/cni/net.d" "$ROOT/cni/ipam" "$ROOT/kubelet" "$ROOT/pod-logs"
ln -sf "$bin" "$ROOT/bin/k8s"
ln -sf "$kubectl_bin" "$ROOT/bin/kubectl"
k8s="$ROOT/bin/k8s"

failed=1
cleanup() {
  if [ "$failed" = 1 ]; then
    echo "k8s-up: failed; last lines of the logs in $ROOT/log:" >&2
    for f in "$ROOT"/log/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 8 "$f" >&2; }; done
    bash "$here/down.sh" >&2 || true
  fi
}
trap cleanup EXIT

# Certificates: one CA; the apiserver's serving certificate; one client certificate in
# system:masters that every component and the tests use (a test cluster: no need for a
# certificate per component); the service accounts' signing key.
pki="$ROOT/pki"
(
  cd "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=wick-k8s-ca" 2>/dev/null
  cat >apiserver.ext <<EXT
subjectAltName=IP:127.0.0.1,IP:10.97.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth
EXT
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
  echo "extendedKeyUsage=clientAuth" >client.ext
  openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=wick-admin" 2>/dev/null
  openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile client.ext -out admin.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  chmod 600 ./*.key
)
cat >"$KUBECONFIG_FILE" <<KC
apiVersion: v1
kind: Config
clusters:
- name: wick-k8s
  cluster:
    server: https://127.0.0.1:16443
    certificate-authority: $pki/ca.crt
users:
- name: wick-admin
  user:
    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key
contexts:
- name: wick-k8s
  context: {cluster: wick-k8s, user: wick-admin, namespace: default}
current-context: wick-k8s
KC
chmod 600 "$KUBECONFIG_FILE"

start() { # start NAME CMD...: detached, in its own session, output to the log dir, pid file
  local name=$1; shift
  setsid nohup "$@" >>"$ROOT/log/$name.log" 2>&1 </dev/null &
  echo $! >"$ROOT/run/$name.pid"
}
wait_for() { # wait_for WHAT SECONDS CMD...: until CMD succeeds
  local what=$1 secs=$2; shift 2
  for _ in $(seq 1 $((secs * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "$what did not come up within $secs s; logs in $ROOT/log"
}
kubectl() { "$k8s" kubectl --kubeconfig "$KUBECONFIG_FILE" --request-timeout=10s "$@"; }

# The bridge, made here (the CNI bridge plugin takes it as it is) so that the kubelet
# has an address of its own that is not loopback, and pods reach each other through
# Docker's FORWARD DROP by one rule.
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
fi
ip link set "$BRIDGE" up
iptables -C FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT -m comment --comment wick-k8s 2>/dev/null ||
  iptables -I FORWARD 1 -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT -m comment --comment wick-k8s

start etcd etcd --name wick-k8s --data-dir "$ROOT/etcd" \
  --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
  --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
  --initial-cluster wick-k8s=http://127.0.0.1:23800 --quota-backend-bytes 1073741824

# containerd, its own.
cat >"$ROOT/containerd/config.toml" <<TOML
version = 2
root = "$ROOT/containerd/root"
state = "$ROOT/containerd/state"
oom_score = 0
[grpc]
  address = "$ROOT/containerd/containerd.sock"
[ttrpc]
  address = "$ROOT/containerd/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$ROOT/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "16010"
  disable_apparmor = true
  # The pods' network namespaces under the state dir, which down.sh unmounts.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$ROOT/cni/net.d"
TOML
cat >"$ROOT/cni/net.d/10-wick-k8s.conflist" <<CNI
{
  "cniVersion": "0.4.0",
  "name": "wick-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$SUBNET_PREFIX.0/24", "rangeStart": "$SUBNET_PREFIX.10", "gateway": "$NODE_IP"}]],
        "dataDir": "$ROOT/cni/ipam"
      }
    }
  ]
}
CNI
start containerd containerd --config "$ROOT/containerd/config.toml"
ctr() { command ctr --address "$ROOT/containerd/containerd.sock" "$@"; }

wait_for etcd 30 curl -fsS http://127.0.0.1:23790/health
wait_for containerd 30 ctr version

# The sandbox image: the static pause, as a one-file image from a docker import.
if ! ctr -n k8s.io images ls -q | grep -qx "$PAUSE_IMAGE"; then
  work="$(mktemp -d)"
  gcc -static -Os -o "$work/pause" "$here/pause.c"
  strip "$work/pause" 2>/dev/null || true
  tar -C "$work" -cf - pause | docker import -c 'ENTRYPOINT ["/pause"]' - "$PAUSE_IMAGE" >/dev/null
  docker save "$PAUSE_IMAGE" | ctr -n k8s.io images import - >/dev/null
  docker rmi "$PAUSE_IMAGE" >/dev/null 2>&1 || true
  rm -rf "$work"
fi

start kube-apiserver "$k8s" kube-apiserver \
  --etcd-servers=http://127.0.0.1:23790 \
  --bind-address=127.0.0.1 --secure-port=16443 --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none \
  --service-cluster-ip-range=10.97.0.0/24 \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" \
  --kubelet-client-certificate="$pki/admin.crt" --kubelet-client-key="$pki/admin.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --authorization-mode=Node,RBAC --anonymous-auth=false --allow-privileged=true \
  --profiling=false --event-ttl=30m
wait_for kube-apiserver 90 kubectl get --raw /readyz

common=(--kubeconfig="$KUBECONFIG_FILE" --authentication-kubeconfig="$KUBECONFIG_FILE"
  --authorization-kubeconfig="$KUBECONFIG_FILE" --bind-address=127.0.0.1 --leader-elect=false --profiling=false)
start kube-controller-manager "$k8s" kube-controller-manager "${common[@]}" --secure-port=16457 \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
  --use-service-account-credentials=false --controllers='*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-persistentvolume-expander'
start kube-scheduler "$k8s" kube-scheduler "${common[@]}" --secure-port=16459

# The cluster's DNS, as real clusters have it (CoreDNS's kubernetes plugin): the pods'
# nameserver (the kubelet's clusterDNS), on the node's bridge address; it answers the
# Services' names and a headless Service's pods' (<hostname>.<service>.<namespace>.svc),
# by which a dist.ddp app's replicas reach rank 0. Nothing is forwarded: the test pods
# need no other name.
cat >"$ROOT/Corefile" <<COREFILE
.:53 {
    bind $NODE_IP
    ready 127.0.0.1:16181
    errors
    kubernetes cluster.local {
        kubeconfig $KUBECONFIG_FILE wick-k8s
    }
}
COREFILE
start coredns "$coredns" -conf "$ROOT/Corefile"

cat >"$ROOT/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 16250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 16248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$ROOT/containerd/containerd.sock
cgroupDriver: cgroupfs
failSwapOn: false
oomScoreAdj: 0
podLogsDir: $ROOT/pod-logs
resolvConf: /etc/resolv.conf
clusterDNS: [$NODE_IP]
clusterDomain: cluster.local
# A loaded test machine: never evict for pressure, never collect the imported images.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
containerLogMaxSize: 100Mi
serializeImagePulls: false
maxPods: 110
YAML
start kubelet "$k8s" kubelet --kubeconfig="$KUBECONFIG_FILE" --config="$ROOT/kubelet/config.yaml" \
  --root-dir="$ROOT/kubelet" --cert-dir="$ROOT/kubelet/pki" \
  --hostname-override="$NODE" --node-ip="$NODE_IP"

node_ready() {
  kubectl get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' | grep -qx True
}
wait_for "the node $NODE (Ready)" 120 node_ready
wait_for "the default service account" 60 kubectl get serviceaccount default -n default
wait_for "CoreDNS (ready)" 60 curl -fsS http://127.0.0.1:16181/ready

# The node holds no taint a test pod would not tolerate; the mark says the cluster is
# up and which kubeconfig the tests take.
echo "$KUBECONFIG_FILE" >"$MARK"
failed=0
kubectl get nodes -o wide
echo "k8s-up: up; export KUBECONFIG=$KUBECONFIG_FILE"
