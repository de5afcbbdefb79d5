#!/usr/bin/env bash
# Restart the kube-apiserver of a cluster started by hack/cluster-up.sh, with
# exactly the same command line (DIR/kube-apiserver.args), so the URL, certs
# and etcd stay the same and every object survives. For tests of how clients
# cope with an apiserver that goes away and comes back.
#
# Usage: hack/restart-apiserver.sh [--hard] [--compact] [DIR]   (DIR defaults to <repo>/.cluster)
#   --hard     SIGKILL instead of SIGTERM (a crash: no graceful shutdown, open
#              connections are reset rather than closed).
#   --compact  while the apiserver is down, compact etcd at its current revision, so
#              clients that resume a watch from an older resourceVersion get 410 Gone.
#
# Waits (KUBESCHED_READY_TIMEOUT, 60 s) for /readyz of the new process. The
# output goes on appending to DIR/kube-apiserver.log. The last line of stdout
# is the new pid.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIGNAL=TERM
COMPACT=0
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --hard) SIGNAL=KILL ;;
    --compact) COMPACT=1 ;;
    *) die "unknown option $1" ;;
  esac
  shift
done
DIR="${1:-${REPO_ROOT}/.cluster}"
[[ -d "${DIR}" ]] || die "${DIR} does not exist (start a cluster with hack/cluster-up.sh)"
DIR="$(cd "${DIR}" && pwd)"
ARGS_FILE="${DIR}/kube-apiserver.args"
PID_FILE="${DIR}/kube-apiserver.pid"
READY_TIMEOUT="${KUBESCHED_READY_TIMEOUT:-60}"
[[ -s "${ARGS_FILE}" ]] || die "${ARGS_FILE} missing: was ${DIR} started by an older hack/cluster-up.sh?"
[[ -s "${DIR}/env" ]] || die "${DIR}/env missing"
pid_alive "${DIR}/etcd.pid" || die "etcd of ${DIR} is not running"

mapfile -t APISERVER_CMD < "${ARGS_FILE}"
APISERVER_URL="$(sed -n 's/^APISERVER_URL=//p' "${DIR}/env")"
CERTS="${DIR}/certs"

api_ready() {
  [[ "$(curl --silent --max-time 2 --cacert "${CERTS}/ca.crt" \
    --cert "${CERTS}/admin.crt" --key "${CERTS}/admin.key" "${APISERVER_URL}/readyz")" == "ok" ]]
}

# ---------------------------------------------------------------- stop
if pid_alive "${PID_FILE}"; then
  pid="$(tr -cd 0-9 < "${PID_FILE}")"
  log "stopping kube-apiserver (pid ${pid}, SIG${SIGNAL})"
  kill "-${SIGNAL}" "${pid}" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "${pid}" 2>/dev/null; then
    log "kube-apiserver did not exit after 30 s; sending SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
    while kill -0 "${pid}" 2>/dev/null; do sleep 0.1; done
  fi
else
  log "kube-apiserver of ${DIR} was not running"
fi
rm -f "${PID_FILE}"

if ((COMPACT)); then
  ETCD_URL="$(sed -n 's/^ETCD_URL=//p' "${DIR}/env")"
  # etcd's JSON gateway: the current revision, then a compaction at it.
  revision="$(curl --silent --max-time 5 -X POST "${ETCD_URL}/v3/kv/range" -d '{"key":"AA=="}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')"
  curl --silent --max-time 10 -X POST "${ETCD_URL}/v3/kv/compaction" \
    -d "{\"revision\": \"${revision}\", \"physical\": true}" >/dev/null
  log "compacted etcd at revision ${revision}"
fi

# ---------------------------------------------------------------- start
log "starting kube-apiserver on ${APISERVER_URL}"
printf '\n==== restarted by %s at %s ====\n' "$(basename "$0")" "$(date -u +%FT%TZ)" \
  >> "${DIR}/kube-apiserver.log"
nohup "${APISERVER_CMD[@]}" </dev/null >>"${DIR}/kube-apiserver.log" 2>&1 &
echo $! > "${PID_FILE}"

deadline=$((SECONDS + READY_TIMEOUT))
until api_ready; do
  if ! pid_alive "${PID_FILE}"; then
    tail -n 25 "${DIR}/kube-apiserver.log" >&2 || true
    die "kube-apiserver exited during restart"
  fi
  if ((SECONDS >= deadline)); then
    tail -n 25 "${DIR}/kube-apiserver.log" >&2 || true
    die "kube-apiserver not ready ${READY_TIMEOUT}s after restart"
  fi
  sleep 0.25
done
log "kube-apiserver ready again (pid $(cat "${PID_FILE}"))"
cat "${PID_FILE}"
