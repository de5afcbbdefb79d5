#!/usr/bin/env bash
# End-to-end check of the hack/ tooling with only curl and the real binaries:
#   cluster-up -> create a Node (with allocatable) and a Pod -> list them ->
#   run the real kube-scheduler -> wait until the Pod is bound -> cluster-down.
#
# Usage: hack/self-check.sh [DIR]   (DIR defaults to a fresh temp dir; it is
#        removed at the end unless KEEP_CLUSTER=1)
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR="${1:-$(mktemp -d "${TMPDIR:-/tmp}/kubesched-selfcheck.XXXXXX")}"
cleanup() {
  if [[ "${KEEP_CLUSTER:-0}" != 1 ]]; then "${HACK_DIR}/cluster-down.sh" "${DIR}"; fi
}
trap cleanup EXIT

start=${SECONDS}
ENV_FILE="$("${HACK_DIR}/cluster-up.sh" "${DIR}" | tail -n1)"
# shellcheck disable=SC1090
source "${ENV_FILE}"
log "cluster-up took $((SECONDS - start))s"

api() {
  local method="$1" path="$2"; shift 2
  curl --silent --show-error --fail-with-body --max-time 10 \
    --cacert "${CA_CERT}" --cert "${ADMIN_CERT}" --key "${ADMIN_KEY}" \
    -X "${method}" -H "Content-Type: ${CT:-application/json}" "$@" "${APISERVER_URL}${path}"
}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

log "server version: $(api GET /version | json 'd["gitVersion"]')"

api POST /api/v1/nodes -d '{
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "node-a", "labels": {"kubernetes.io/hostname": "node-a"}},
  "status": {
    "capacity":    {"cpu": "4", "memory": "8Gi", "pods": "110"},
    "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
    "conditions": [{"type": "Ready", "status": "True", "reason": "SelfCheck"}]
  }
}' >/dev/null  # status is kept on create: no need for the /status subresource

api POST /api/v1/namespaces/default/pods -d '{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "pod-1"},
  "spec": {"containers": [{"name": "c", "image": "pause",
           "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}
}' >/dev/null

log "nodes: $(api GET /api/v1/nodes | json '[(n["metadata"]["name"], n["status"].get("allocatable"), n["spec"].get("taints")) for n in d["items"]]')"
log "pods:  $(api GET /api/v1/namespaces/default/pods | json '[(p["metadata"]["name"], p["spec"].get("nodeName")) for p in d["items"]]')"

SCHED_PORT="$(free_port)"
log "starting kube-scheduler (secure port ${SCHED_PORT})"
"${K8S_BIN_DIR}/kube-scheduler" \
  --kubeconfig="${SCHEDULER_KUBECONFIG}" \
  --authentication-kubeconfig="${SCHEDULER_KUBECONFIG}" \
  --authorization-kubeconfig="${SCHEDULER_KUBECONFIG}" \
  --leader-elect=false \
  --bind-address=127.0.0.1 \
  --secure-port="${SCHED_PORT}" \
  --cert-dir="${DIR}/scheduler-certs" \
  </dev/null >"${DIR}/kube-scheduler.log" 2>&1 &
echo $! > "${DIR}/kube-scheduler.pid"

node=""
for _ in $(seq 1 60); do
  node="$(api GET /api/v1/namespaces/default/pods/pod-1 | json 'd["spec"].get("nodeName") or ""')"
  [[ -n "${node}" ]] && break
  pid_alive "${DIR}/kube-scheduler.pid" || break
  sleep 0.5
done
if [[ "${node}" != "node-a" ]]; then
  log "---- kube-scheduler.log ----"; tail -n 40 "${DIR}/kube-scheduler.log" >&2
  die "pod-1 was not bound to node-a (nodeName='${node}')"
fi
log "pod-1 bound to ${node} after $((SECONDS - start))s total"
log "events: $(api GET /api/v1/namespaces/default/events | json '[(e["reason"], e["message"]) for e in d["items"]]')"

# Bound pods need gracePeriodSeconds=0 to disappear (no kubelet confirms).
api DELETE /api/v1/namespaces/default/pods/pod-1 -d '{"gracePeriodSeconds": 0}' >/dev/null
log "SELF-CHECK OK"
