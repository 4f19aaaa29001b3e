#!/usr/bin/env bash
# End-to-end on a real cluster (kind): build the controller image, deploy it
# with the CRD and RBAC from this repository, apply the samples (three echo
# pods and the 40/20/40 Balancer), wait until the Balancer is reconciled and
# its nginx is ready, then open many connections to the front Service from a
# pod inside the cluster and report how they were spread over the backends.
# Finally delete the Balancer and check the garbage collector removes its
# children (they carry controller ownerReferences).
#
# Needs docker (with a running daemon), kind and kubectl. CI machines have no
# Docker; there the same paths are covered by tests/ (embedded API server,
# real nginx in network namespaces).
#
# Environment:
#   CLUSTER        kind cluster name                 (default pycontroller-e2e)
#   IMAGE          controller image to build/load    (default pycontroller/balancer-controller:0.1.0)
#   NAMESPACE      namespace for the samples         (default balancer-e2e)
#   REQUESTS       connections to open               (default 200)
#   TOLERANCE      allowed deviation, in % of REQUESTS (default 5)
#   KEEP_CLUSTER   1 keeps a cluster this script created (default: delete it)
set -euo pipefail

CLUSTER=${CLUSTER:-pycontroller-e2e}
IMAGE=${IMAGE:-pycontroller/balancer-controller:0.1.0}
NAMESPACE=${NAMESPACE:-balancer-e2e}
REQUESTS=${REQUESTS:-200}
TOLERANCE=${TOLERANCE:-5}
KEEP_CLUSTER=${KEEP_CLUSTER:-0}
NGINX_IMAGE=nginx:1.27-alpine
ECHO_IMAGE=hashicorp/http-echo:1.0
CLIENT_IMAGE=curlimages/curl:8.10.1

cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is required (see https://kind.sigs.k8s.io)"
done
docker info >/dev/null 2>&1 || die "the Docker daemon is not reachable"

k() { kubectl --context "kind-${CLUSTER}" "$@"; }

# wait_until <timeout seconds> <description> <command...>: poll until the command succeeds.
wait_until() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      die "timed out after ${timeout}s waiting for ${what}"
    fi
    sleep 2
  done
  log "ok: ${what}"
}

created_cluster=0
cleanup() {
  local code=$?
  if ((code != 0)) && kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
    log "failure: controller logs"
    k -n balancer-system logs deployment/balancer-controller --tail=100 >&2 || true
    k -n "$NAMESPACE" get balancers,deployments,services,configmaps,pods -o wide >&2 || true
  fi
  if ((created_cluster == 1)) && [[ "$KEEP_CLUSTER" != 1 ]]; then
    log "deleting kind cluster ${CLUSTER}"
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
  exit "$code"
}
trap cleanup EXIT

if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "creating kind cluster ${CLUSTER}"
  kind create cluster --name "$CLUSTER" --wait 180s
  created_cluster=1
fi

log "building ${IMAGE}"
docker build -t "$IMAGE" .
log "loading images into the cluster"
for image in "$NGINX_IMAGE" "$ECHO_IMAGE" "$CLIENT_IMAGE"; do
  docker image inspect "$image" >/dev/null 2>&1 || docker pull -q "$image" >/dev/null
done
kind load docker-image --name "$CLUSTER" "$IMAGE" "$NGINX_IMAGE" "$ECHO_IMAGE" "$CLIENT_IMAGE"

log "installing the CRD and the controller"
k apply -f crds/balancer.yaml
k wait --for=condition=Established crd/balancers.exposer.hliangzhao.io --timeout=60s
k apply -k deploy/
k -n balancer-system set image deployment/balancer-controller controller="$IMAGE"
k -n balancer-system rollout status deployment/balancer-controller --timeout=180s

log "applying the samples in namespace ${NAMESPACE}"
k create namespace "$NAMESPACE" --dry-run=client -o yaml | k apply -f -
k -n "$NAMESPACE" apply -f crds/samples/http-echo.yaml
k -n "$NAMESPACE" apply -f crds/samples/balancer.yaml
k -n "$NAMESPACE" wait --for=condition=Ready pod -l app=test --timeout=180s

reconciled() {
  [[ "$(k -n "$NAMESPACE" get balancer balancer-sample \
    -o jsonpath='{.status.conditions[?(@.type=="Reconciled")].status}')" == True ]]
}
all_active() {
  [[ "$(k -n "$NAMESPACE" get balancer balancer-sample -o jsonpath='{.status.activeBackendsNum}')" == 3 ]]
}
wait_until 180 "Balancer reconciled" reconciled
wait_until 120 "3 active backends" all_active
k -n "$NAMESPACE" rollout status deployment/balancer-sample-proxy --timeout=180s
k -n "$NAMESPACE" get balancers
k -n "$NAMESPACE" get services,configmaps,deployments -l balancer.exposer.hliangzhao.io/balancer-name=balancer-sample

log "opening ${REQUESTS} connections to service balancer-sample:80 from inside the cluster"
k -n "$NAMESPACE" delete pod e2e-client --ignore-not-found --wait=true >/dev/null
k -n "$NAMESPACE" run e2e-client --image="$CLIENT_IMAGE" --image-pull-policy=IfNotPresent \
  --restart=Never --command -- sh -c \
  "i=0; while [ \$i -lt ${REQUESTS} ]; do curl -s --max-time 5 http://balancer-sample:80/ || echo FAILED; i=\$((i+1)); done"
client_done() {
  local phase
  phase=$(k -n "$NAMESPACE" get pod e2e-client -o jsonpath='{.status.phase}')
  [[ "$phase" == Succeeded || "$phase" == Failed ]]
}
wait_until 300 "client finished" client_done
replies=$(k -n "$NAMESPACE" logs e2e-client)
k -n "$NAMESPACE" delete pod e2e-client --wait=false >/dev/null

log "distribution (weights 40/20/40):"
status=0
for backend in v1 v2 v3; do
  case $backend in v1 | v3) weight=40 ;; v2) weight=20 ;; esac
  got=$(grep -c "hello world ${backend}\$" <<<"$replies" || true)
  expected=$((REQUESTS * weight / 100))
  pct=$((100 * got / REQUESTS))
  printf '  %s: %4d connections (%3d%%, expected %d)\n' "$backend" "$got" "$pct" "$expected"
  diff=$((got - expected))
  ((diff < 0)) && diff=$((-diff))
  if ((diff * 100 > TOLERANCE * REQUESTS)); then status=1; fi
done
failed=$(grep -c FAILED <<<"$replies" || true)
printf '  failed: %d\n' "$failed"
((failed == 0)) || status=1
((status == 0)) || die "distribution is off by more than ${TOLERANCE}% or connections failed"

log "deleting the Balancer: its children must be garbage-collected"
k -n "$NAMESPACE" delete balancer balancer-sample --wait=true
children_gone() {
  local objects
  objects=$(k -n "$NAMESPACE" get services,configmaps,deployments -o name)
  ! grep -qE '/balancer-sample(-proxy|-proxy-configmap|-v[123]-backend)?$' <<<"$objects"
}
wait_until 120 "children garbage-collected" children_gone

log "kind e2e passed"
