#!/usr/bin/env bash
# Start a throwaway Kubernetes control plane (etcd, kube-apiserver and a
# kube-controller-manager running only the controllers scheduling relies on) on
# 127.0.0.1 for integration tests. No kubelet, no scheduler: tests create
# Nodes/Pods directly and run a scheduler themselves.
#
# Usage: hack/cluster-up.sh [DIR]        (DIR defaults to <repo>/.cluster)
#
# Everything lives in DIR:
#   certs/          CA, apiserver serving cert, admin client cert, SA key pair
#   etcd-data/      etcd data dir
#   *.log, *.pid    process logs and pids
#   kube-apiserver.args   kube-apiserver's command line, one argument per
#                         line; hack/restart-apiserver.sh reuses it
#   kubeconfig            admin kubeconfig (CN=admin, O=system:masters)
#   scheduler-kubeconfig  kubeconfig for a kube-scheduler (same admin cert)
#   controller-manager-kubeconfig  kube-controller-manager's (same admin cert)
#   kcm-certs/      kube-controller-manager's self-signed serving cert
#   env             shell lines: KUBECONFIG, APISERVER_URL, ETCD_URL, K8S_BIN_DIR, ...
#
# Idempotent: if the cluster in DIR is already up, it only reports it.
# The last line of stdout is the path of DIR/env.
#
# Choices (see hack/README.md):
#   --disable-admission-plugins=ServiceAccount,TaintNodesByCondition
#     * ServiceAccount: no serviceaccount-controller runs, so nobody creates the
#       'default' ServiceAccount in new namespaces, and the plugin would then
#       reject every Pod. Pods simply get no service account / token.
#     * TaintNodesByCondition: it adds node.kubernetes.io/not-ready:NoSchedule
#       to every Node on create and, without a node controller, nobody removes
#       it, so nothing would ever be schedulable. Tests set taints themselves.
#   --endpoint-reconciler-type=none: the 'kubernetes' Service endpoints may
#     not point at a loopback address, so the reconciler would only log errors.
#   --authorization-mode=Node,RBAC, --enable-priority-and-fairness=false
#
# KUBESCHED_WORKLOAD_API=1 serves the alpha Workload API: kube-apiserver gets
# --runtime-config=scheduling.k8s.io/v1alpha2=true and
# --feature-gates=GenericWorkload=true,GangScheduling=true (what a scheduler with
# those gates needs: PodGroups, Workloads, and pods' spec.schedulingGroup, which
# the apiserver drops with GenericWorkload off). Off by default: every other
# cluster is the shipped v1.36.3 API. DIR/env says WORKLOAD_API=1 when it is on.
#
# kube-controller-manager runs the controllers in KUBESCHED_CONTROLLERS (a
# --controllers list; default: DEFAULT_CONTROLLERS below; "none" or empty: no
# kube-controller-manager at all), with the admin identity
# (--use-service-account-credentials=false: no token controller needed) and
# --leader-elect=false.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR="${1:-${REPO_ROOT}/.cluster}"
mkdir -p "${DIR}"
DIR="$(cd "${DIR}" && pwd)"
CERTS="${DIR}/certs"
READY_TIMEOUT="${KUBESCHED_READY_TIMEOUT:-60}"
# What scheduling relies on and no kubelet provides: generated ResourceClaims
# (a pod's resourceClaimTemplate), PV/PVC binding (and the bind-completed
# annotation VolumeBinding checks), PDB status (preemption reads
# disruptionsAllowed). The names are kube-controller-manager's (v1.36).
DEFAULT_CONTROLLERS=resourceclaim-controller,persistentvolume-binder-controller,disruption-controller
CONTROLLERS="${KUBESCHED_CONTROLLERS-${DEFAULT_CONTROLLERS}}"
[[ "${CONTROLLERS}" == none ]] && CONTROLLERS=""

ensure_cmd openssl
ensure_cmd curl
ensure_cmd python3

# curl against the apiserver with the admin client certificate.
api_curl() {
  curl --silent --show-error --max-time 5 \
    --cacert "${CERTS}/ca.crt" --cert "${CERTS}/admin.crt" --key "${CERTS}/admin.key" "$@"
}

apiserver_ready() {
  [[ -s "${DIR}/env" ]] || return 1
  local url
  url="$(sed -n 's/^APISERVER_URL=//p' "${DIR}/env")"
  [[ -n "${url}" ]] && [[ "$(api_curl "${url}/readyz" 2>/dev/null)" == "ok" ]]
}

# The controller-manager is part of a running cluster iff its env says so.
kcm_ok() {
  [[ -z "$(sed -n 's/^KUBE_CONTROLLERS=//p' "${DIR}/env")" ]] \
    || pid_alive "${DIR}/kube-controller-manager.pid"
}

# The running cluster serves the Workload API iff it was asked for now.
workload_api_ok() {
  local want="${KUBESCHED_WORKLOAD_API:-}"
  [[ "${want}" == 0 ]] && want=""
  [[ -n "${want}" ]] && want=1
  [[ "$(sed -n 's/^WORKLOAD_API=//p' "${DIR}/env")" == "${want}" ]]
}

# Already running?
if pid_alive "${DIR}/etcd.pid" && pid_alive "${DIR}/kube-apiserver.pid" && apiserver_ready \
    && kcm_ok && workload_api_ok; then
  log "cluster already running in ${DIR}"
  sed 's/^/    /' "${DIR}/env" >&2
  echo "${DIR}/env"
  exit 0
fi

# Stale or half-started cluster: stop what is left and start from scratch.
for name in kube-controller-manager kube-apiserver etcd; do
  if pid_alive "${DIR}/${name}.pid"; then
    log "stopping stale ${name} (pid $(cat "${DIR}/${name}.pid"))"
    kill "$(tr -cd 0-9 < "${DIR}/${name}.pid")" 2>/dev/null || true
    sleep 1
    if pid_alive "${DIR}/${name}.pid"; then
      kill -9 "$(tr -cd 0-9 < "${DIR}/${name}.pid")" 2>/dev/null || true
    fi
  fi
done
rm -rf "${CERTS}" "${DIR}/etcd-data" "${DIR}"/*.pid "${DIR}"/*.log "${DIR}"/*.args \
  "${DIR}/kubeconfig" "${DIR}/scheduler-kubeconfig" "${DIR}/controller-manager-kubeconfig" \
  "${DIR}/kcm-certs" "${DIR}/env"

# ---------------------------------------------------------------- binaries
K8S_BIN_DIR="$("${HACK_DIR}/build-k8s.sh" | tail -n1)"
ETCD_BIN_DIR="$("${HACK_DIR}/build-etcd.sh" | tail -n1)"
[[ -x "${K8S_BIN_DIR}/kube-apiserver" ]] || die "kube-apiserver not found in ${K8S_BIN_DIR}"
if [[ -n "${CONTROLLERS}" && ! -x "${K8S_BIN_DIR}/kube-controller-manager" ]]; then
  die "kube-controller-manager not found in ${K8S_BIN_DIR}"
fi
[[ -x "${ETCD_BIN_DIR}/etcd" ]] || die "etcd not found in ${ETCD_BIN_DIR}"

# ---------------------------------------------------------------- certificates
mkdir -p "${CERTS}"
chmod 700 "${CERTS}"
(
  cd "${CERTS}"
  exec 2>"${CERTS}/openssl.log"
  # CA: signs the apiserver serving cert and the client certs.
  openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 3650 \
    -keyout ca.key -out ca.crt -subj "/CN=kubesched-test-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"

  # issue NAME SUBJECT EXTENSIONS: key + cert signed by the CA.
  issue() {
    openssl req -new -nodes -newkey rsa:2048 -keyout "$1.key" -out "$1.csr" -subj "$2"
    printf '%s\n' "$3" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
      -sha256 -days 3650 -extfile "$1.ext" -out "$1.crt"
    rm -f "$1.csr" "$1.ext"
  }
  issue apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue admin "/O=system:masters/CN=admin" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"

  # Service-account token signing key pair.
  openssl genrsa -out sa.key 2048
  openssl rsa -in sa.key -pubout -out sa.pub
  chmod 600 ./*.key
) || die "certificate generation failed: $(tail -n 20 "${CERTS}/openssl.log")"

# ---------------------------------------------------------------- helpers
# show_log NAME: error lines and last lines of DIR/NAME.log on stderr.
show_log() {
  local f="${DIR}/$1.log"
  if [[ "$1" == kube-apiserver ]]; then
    log "---- error lines of ${f} ----"
    grep -E '^[EF][0-9]{4} ' "${f}" | grep -v 'createTransport' | tail -n 15 >&2 || true
    log "---- /readyz?verbose ----"
    api_curl "${APISERVER_URL}/readyz?verbose" 2>&1 | grep -v '^\[+\]' >&2 || true
  fi
  log "---- last lines of ${f} ----"
  tail -n 25 "${f}" >&2 || true
}

# On failure, stop whatever this run started (logs stay in DIR).
STARTED_OK=0
stop_on_failure() {
  [[ ${STARTED_OK} -eq 1 ]] && return
  local name
  for name in kube-controller-manager kube-apiserver etcd; do
    if pid_alive "${DIR}/${name}.pid"; then
      kill -9 "$(tr -cd 0-9 < "${DIR}/${name}.pid")" 2>/dev/null || true
    fi
  done
  log "start failed; processes stopped, logs kept in ${DIR}"
}
trap stop_on_failure EXIT

# wait_for NAME TIMEOUT CHECK...: poll CHECK until it succeeds, NAME's
# process dies, or TIMEOUT seconds pass.
wait_for() {
  local name="$1" timeout="$2"; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ! pid_alive "${DIR}/${name}.pid"; then
      show_log "${name}"; die "${name} exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      show_log "${name}"; die "${name} not ready after ${timeout}s"
    fi
    sleep 0.5
  done
}

# ---------------------------------------------------------------- etcd
ETCD_PORT="$(free_port)"
ETCD_PEER_PORT="$(free_port)"
ETCD_URL="http://127.0.0.1:${ETCD_PORT}"
ETCD_EXTRA_FLAGS=()
# Throwaway data: skip fsync when this etcd supports it (v3.5+).
if "${ETCD_BIN_DIR}/etcd" --help 2>&1 | grep -q -- '--unsafe-no-fsync'; then
  ETCD_EXTRA_FLAGS+=(--unsafe-no-fsync=true)
fi
log "starting etcd on ${ETCD_URL}"
nohup "${ETCD_BIN_DIR}/etcd" \
  --name=kubesched \
  --data-dir="${DIR}/etcd-data" \
  --listen-client-urls="${ETCD_URL}" \
  --advertise-client-urls="${ETCD_URL}" \
  --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster="kubesched=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --log-level=warn \
  "${ETCD_EXTRA_FLAGS[@]}" \
  </dev/null >"${DIR}/etcd.log" 2>&1 &
echo $! > "${DIR}/etcd.pid"
etcd_healthy() { [[ "$(curl -s --max-time 2 "${ETCD_URL}/health")" == *'"health":"true"'* ]]; }
wait_for etcd 30 etcd_healthy

# ---------------------------------------------------------------- kube-apiserver
API_PORT="$(free_port)"
APISERVER_URL="https://127.0.0.1:${API_PORT}"
# shellcheck disable=SC2054  # the commas are inside flag values
APISERVER_CMD=(
  "${K8S_BIN_DIR}/kube-apiserver"
  --etcd-servers="${ETCD_URL}"
  --bind-address=127.0.0.1
  --advertise-address=127.0.0.1
  --secure-port="${API_PORT}"
  --cert-dir="${CERTS}"
  --tls-cert-file="${CERTS}/apiserver.crt"
  --tls-private-key-file="${CERTS}/apiserver.key"
  --client-ca-file="${CERTS}/ca.crt"
  --authorization-mode=Node,RBAC
  --service-account-key-file="${CERTS}/sa.pub"
  --service-account-signing-key-file="${CERTS}/sa.key"
  --service-account-issuer=https://kubernetes.default.svc.cluster.local
  --service-cluster-ip-range=10.0.0.0/24
  --disable-admission-plugins=ServiceAccount,TaintNodesByCondition
  --enable-priority-and-fairness=false
  --endpoint-reconciler-type=none
  --allow-privileged=true
  --profiling=false
  --v=1
)
WORKLOAD_API="${KUBESCHED_WORKLOAD_API:-}"
[[ "${WORKLOAD_API}" == 0 ]] && WORKLOAD_API=""
if [[ -n "${WORKLOAD_API}" ]]; then
  WORKLOAD_API=1
  APISERVER_CMD+=(
    --runtime-config=scheduling.k8s.io/v1alpha2=true
    --feature-gates=GenericWorkload=true,GangScheduling=true
  )
fi
# The exact command line, one argument per line (binary first), so that
# hack/restart-apiserver.sh can start the same apiserver again.
printf '%s\n' "${APISERVER_CMD[@]}" > "${DIR}/kube-apiserver.args"
log "starting kube-apiserver on ${APISERVER_URL}"
nohup "${APISERVER_CMD[@]}" </dev/null >"${DIR}/kube-apiserver.log" 2>&1 &
echo $! > "${DIR}/kube-apiserver.pid"
api_ready() { [[ "$(api_curl "${APISERVER_URL}/readyz")" == "ok" ]]; }
wait_for kube-apiserver "${READY_TIMEOUT}" api_ready

# ---------------------------------------------------------------- kubeconfigs
# write_kubeconfig FILE USER
write_kubeconfig() {
  local b64="base64 -w0"
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kubesched
  cluster:
    server: ${APISERVER_URL}
    certificate-authority-data: $(${b64} < "${CERTS}/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(${b64} < "${CERTS}/admin.crt")
    client-key-data: $(${b64} < "${CERTS}/admin.key")
contexts:
- name: kubesched
  context:
    cluster: kubesched
    user: $2
    namespace: default
current-context: kubesched
EOF
  chmod 600 "$1"
}
write_kubeconfig "${DIR}/kubeconfig" admin
# The real kube-scheduler can use the same admin (system:masters) identity.
write_kubeconfig "${DIR}/scheduler-kubeconfig" admin

# ---------------------------------------------------------------- kube-controller-manager
KCM_URL=""
if [[ -n "${CONTROLLERS}" ]]; then
  # Same admin identity; a file of its own so that its command line names DIR
  # (pid_alive) and a test may replace the scheduler's without touching it.
  write_kubeconfig "${DIR}/controller-manager-kubeconfig" admin
  KCM_PORT="$(free_port)"
  KCM_URL="https://127.0.0.1:${KCM_PORT}"
  # Authentication: client certificates of our CA (the admin one, e.g. for
  # /metrics) and tokens through the apiserver. --authentication-skip-lookup: the
  # apiserver has no --requestheader-client-ca-file, so the lookup of
  # kube-system/extension-apiserver-authentication would log an error every few
  # seconds. /healthz needs none of it (always allowed).
  # --cert-dir: its self-signed serving cert goes there, not in the cwd.
  # --kube-api-qps/burst: at the defaults (20/30) the resourceclaim controller makes
  # about 10 claims a second, which would pace a DRA benchmark instead of the scheduler
  # (scheduler_perf runs its resourceclaim controller with the test's client limits).
  log "starting kube-controller-manager on ${KCM_URL} (${CONTROLLERS})"
  nohup "${K8S_BIN_DIR}/kube-controller-manager" \
    --kubeconfig="${DIR}/controller-manager-kubeconfig" \
    --authentication-kubeconfig="${DIR}/controller-manager-kubeconfig" \
    --authorization-kubeconfig="${DIR}/controller-manager-kubeconfig" \
    --authentication-skip-lookup=true \
    --client-ca-file="${CERTS}/ca.crt" \
    --bind-address=127.0.0.1 \
    --secure-port="${KCM_PORT}" \
    --cert-dir="${DIR}/kcm-certs" \
    --controllers="${CONTROLLERS}" \
    --kube-api-qps=5000 \
    --kube-api-burst=5000 \
    --use-service-account-credentials=false \
    --leader-elect=false \
    --profiling=false \
    --v=2 \
    </dev/null >"${DIR}/kube-controller-manager.log" 2>&1 &
  echo $! > "${DIR}/kube-controller-manager.pid"
  # Its own self-signed cert: -k is fine on loopback. /healthz turns ok once the
  # controllers have started (each has a check there).
  kcm_healthy() { [[ "$(curl -sk --max-time 2 "${KCM_URL}/healthz")" == ok ]]; }
  wait_for kube-controller-manager "${READY_TIMEOUT}" kcm_healthy
fi

cat > "${DIR}/env" <<EOF
KUBECONFIG=${DIR}/kubeconfig
SCHEDULER_KUBECONFIG=${DIR}/scheduler-kubeconfig
APISERVER_URL=${APISERVER_URL}
ETCD_URL=${ETCD_URL}
K8S_BIN_DIR=${K8S_BIN_DIR}
ETCD_BIN_DIR=${ETCD_BIN_DIR}
KUBE_CONTROLLERS=${CONTROLLERS}
CONTROLLER_MANAGER_URL=${KCM_URL}
WORKLOAD_API=${WORKLOAD_API}
CA_CERT=${CERTS}/ca.crt
ADMIN_CERT=${CERTS}/admin.crt
ADMIN_KEY=${CERTS}/admin.key
EOF

STARTED_OK=1
log "cluster up in ${DIR} (etcd pid $(cat "${DIR}/etcd.pid"), kube-apiserver pid $(cat "${DIR}/kube-apiserver.pid")${CONTROLLERS:+, kube-controller-manager pid $(cat "${DIR}/kube-controller-manager.pid")})"
sed 's/^/    /' "${DIR}/env" >&2
echo "${DIR}/env"
