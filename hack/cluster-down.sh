#!/usr/bin/env bash
# Stop the control plane started by hack/cluster-up.sh and delete its DIR.
#
# Usage: hack/cluster-down.sh [DIR]      (DIR defaults to <repo>/.cluster)
#
# Every DIR/*.pid process (kube-apiserver, etcd, and e.g. a kube-scheduler a
# test started and recorded there) gets SIGTERM, then SIGKILL after 10 s.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR="${1:-${REPO_ROOT}/.cluster}"
if [[ ! -d "${DIR}" ]]; then
  log "nothing to do: ${DIR} does not exist"
  exit 0
fi
DIR="$(cd "${DIR}" && pwd)"
# Refuse obviously wrong targets: DIR must look like a cluster-up dir.
if [[ "${DIR}" == "/" || "${DIR}" == "${REPO_ROOT}" || "${DIR}" == "${HOME}" ]]; then
  die "refusing to remove ${DIR}"
fi
if [[ -n "$(ls -A "${DIR}")" && ! -e "${DIR}/env" && ! -d "${DIR}/certs" \
      && -z "$(compgen -G "${DIR}/*.pid" || true)" ]]; then
  die "${DIR} does not look like a cluster dir (no env, certs/ or *.pid); not removing it"
fi

# Stop in reverse dependency order: clients first, etcd last.
pidfiles=()
for f in "${DIR}"/*.pid; do
  [[ -e "${f}" ]] || continue
  case "$(basename "${f}")" in
    etcd.pid | kube-apiserver.pid) ;;
    *) pidfiles+=("${f}") ;;
  esac
done
for f in "${DIR}/kube-apiserver.pid" "${DIR}/etcd.pid"; do
  [[ -e "${f}" ]] && pidfiles+=("${f}")
done

for f in ${pidfiles[@]+"${pidfiles[@]}"}; do
  name="$(basename "${f}" .pid)"
  if ! pid_alive "${f}"; then
    continue
  fi
  pid="$(tr -cd 0-9 < "${f}")"
  log "stopping ${name} (pid ${pid})"
  kill -TERM "${pid}" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "${pid}" 2>/dev/null; then
    log "${name} did not exit after SIGTERM; sending SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
    sleep 0.2
  fi
done

rm -rf "${DIR}"
log "removed ${DIR}"
