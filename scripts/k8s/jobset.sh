#!/usr/bin/env bash
# Install JobSet (sigs.k8s.io/jobset, the version scripts/k8s/jobset/go.mod pins) on the
# running test cluster of scripts/k8s/up.sh: its CRD (the module's own
# config/components/crd/bases), and its controller (upstream's main, built by
# scripts/k8s/build.sh jobset) run out of cluster with the cluster's admin kubeconfig,
# as the control plane runs. Its webhooks (the JobSet's defaulting and validation, and
# the pods' admission, for JobSet pods only) are served by the controller on
# 127.0.0.1:16444 with a certificate of the cluster's CA, and registered by URL: the
# API server runs on this machine, so no Service stands between them. No leader
# election, no metrics endpoint; its health on 127.0.0.1:16445. Pid file and log beside
# the others' (run/jobset.pid, log/jobset.log): scripts/k8s/down.sh stops it.
#
# Idempotent: a controller that answers is left alone. wick uses JobSet on its own when
# the CRD is there; `make k8s-jobset-off` (this script with "off") removes the CRD, its
# webhooks and the controller, so that the cluster is again one without JobSet.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
ROOT="${WICK_K8S_ROOT:-/tmp/wick-k8s}"
KUBECONFIG_FILE="$ROOT/admin.kubeconfig"
WEBHOOK_PORT=16444
HEALTH_PORT=16445
export PATH="/usr/local/go/bin:$PATH:/usr/sbin:/sbin"

die() { echo "k8s-jobset: $*" >&2; exit 1; }

[ -f "$ROOT/up" ] || die "no test cluster is up ($ROOT/up is missing): make k8s-up"
k8s="$ROOT/bin/k8s"
kubectl() { "$k8s" kubectl --kubeconfig "$KUBECONFIG_FILE" --request-timeout=20s "$@"; }

stop_controller() {
  local f="$ROOT/run/jobset.pid" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

if [ "${1:-}" = off ]; then
  # Webhooks first: with the controller gone they would refuse every JobSet pod.
  kubectl delete mutatingwebhookconfiguration wick-jobset --ignore-not-found >/dev/null
  kubectl delete validatingwebhookconfiguration wick-jobset --ignore-not-found >/dev/null
  kubectl delete crd jobsets.jobset.x-k8s.io --ignore-not-found --wait=true >/dev/null
  stop_controller
  echo "k8s-jobset: off (no JobSet CRD, controller stopped)"
  exit 0
fi

healthy() { curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1; }
if [ -f "$ROOT/run/jobset.pid" ] && kill -0 "$(cat "$ROOT/run/jobset.pid")" 2>/dev/null && healthy &&
  kubectl get crd jobsets.jobset.x-k8s.io >/dev/null 2>&1; then
  echo "k8s-jobset: already running"
  exit 0
fi
stop_controller

bin="$(bash "$here/build.sh" jobset)"
moddir="$(cd "$here/jobset" && go mod download -json sigs.k8s.io/jobset | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
crd="$moddir/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
[ -f "$crd" ] || die "the JobSet CRD is not in the module ($crd)"

dir="$ROOT/jobset"
install -d -m 0700 "$dir" "$dir/certs"
pki="$ROOT/pki"
(
  cd "$dir/certs"
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >webhook.ext
  openssl req -newkey rsa:2048 -nodes -keyout tls.key -out webhook.csr -subj "/CN=wick-jobset-webhook" 2>/dev/null
  openssl x509 -req -in webhook.csr -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
    -extfile webhook.ext -out tls.crt 2>/dev/null
  chmod 600 tls.key
)
cat >"$dir/config.yaml" <<YAML
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {port: $WEBHOOK_PORT, host: 127.0.0.1, certDir: $dir/certs}
health: {healthProbeBindAddress: "127.0.0.1:$HEALTH_PORT"}
metrics: {bindAddress: "0"}
clientConnection: {qps: 100, burst: 200}
YAML

# The CRD (server-side: it is too large for the last-applied annotation).
kubectl apply --server-side --force-conflicts -f "$crd" >/dev/null
established() {
  kubectl get crd jobsets.jobset.x-k8s.io -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>/dev/null | grep -qx True
}
for _ in $(seq 1 300); do established && break; sleep 0.2; done
established || die "the JobSet CRD was not established in 60 s"

KUBECONFIG="$KUBECONFIG_FILE" setsid nohup "$bin" --config "$dir/config.yaml" --metrics-bind-address=0 \
  --zap-log-level=info >>"$ROOT/log/jobset.log" 2>&1 </dev/null &
echo $! >"$ROOT/run/jobset.pid"
for _ in $(seq 1 300); do healthy && break; sleep 0.2; done
healthy || { tail -n 20 "$ROOT/log/jobset.log" >&2; stop_controller; die "the JobSet controller did not get ready in 60 s; log in $ROOT/log/jobset.log"; }

# The webhooks of upstream's config/components/webhook (with its patches: the pod ones
# only for JobSet pods), by URL to the controller on this machine.
ca="$(base64 -w0 <"$pki/ca.crt")"
url="https://127.0.0.1:$WEBHOOK_PORT"
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: wick-jobset}
webhooks:
- name: mjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  rules: [{apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE], resources: [jobsets]}]
- name: mpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  objectSelector: {matchExpressions: [{key: jobset.sigs.k8s.io/jobset-name, operator: Exists}]}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: wick-jobset}
webhooks:
- name: vjobset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  rules: [{apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE, UPDATE], resources: [jobsets]}]
- name: vpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  objectSelector: {matchExpressions: [{key: jobset.sigs.k8s.io/jobset-name, operator: Exists}]}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
YAML
echo "k8s-jobset: up (JobSet $(basename "$(dirname "$bin")"), webhooks on 127.0.0.1:$WEBHOOK_PORT, log $ROOT/log/jobset.log)"
