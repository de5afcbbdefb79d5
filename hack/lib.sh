# shellcheck shell=bash disable=SC2034  # variables are used by the sourcing scripts
# Shared helpers for the hack/ scripts. Source it, do not execute it.
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${HACK_DIR}/.." && pwd)"

# Pinned Kubernetes version (override with K8S_VERSION=vX.Y.Z).
K8S_VERSION="${K8S_VERSION:-$(tr -d '[:space:]' < "${HACK_DIR}/k8s-version")}"
KUBESCHED_CACHE="${KUBESCHED_CACHE:-${HOME}/.cache/kubesched}"
K8S_BIN_DIR="${KUBESCHED_CACHE}/k8s/${K8S_VERSION}/bin"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ensure_cmd CMD [DEBIAN_PACKAGE]: install the Debian package if CMD is missing.
_APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not available; please install: $*"
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  if [[ ${_APT_UPDATED} -eq 0 ]]; then
    log "apt-get update"
    ${sudo} apt-get update -qq >&2
    _APT_UPDATED=1
  fi
  log "apt-get install -y $*"
  DEBIAN_FRONTEND=noninteractive ${sudo} apt-get install -y -qq --no-install-recommends "$@" >&2
}

ensure_cmd() {
  local cmd="$1" pkg="${2:-$1}"
  command -v "${cmd}" >/dev/null 2>&1 || apt_install "${pkg}"
  command -v "${cmd}" >/dev/null 2>&1 || die "'${cmd}' still missing after installing '${pkg}'"
}

# Locate the Go toolchain (the machine image ships it in /usr/local/go).
ensure_go() {
  if ! command -v go >/dev/null 2>&1; then
    if [[ -x /usr/local/go/bin/go ]]; then
      export PATH="${PATH}:/usr/local/go/bin"
    else
      die "go toolchain not found (need Go >= the version k8s.io/kubernetes ${K8S_VERSION} requires)"
    fi
  fi
  # Static, reproducible-ish server binaries like the upstream release build.
  export CGO_ENABLED=0
}

# free_port: print a free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# pid_alive PIDFILE: true if the pid in PIDFILE is a running process whose
# command line mentions the directory of PIDFILE (guards against a stale pid
# file whose pid now belongs to an unrelated process). Processes recorded in a
# cluster dir must therefore have that dir in their arguments (data dir,
# kubeconfig, ...), which is the case for everything cluster-up.sh starts.
pid_alive() {
  local f="$1" pid dir stat state ppid
  [[ -s "${f}" ]] || return 1
  pid="$(tr -cd '0-9' < "${f}")"
  [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null || return 1
  # A child this shell just started (`nohup CMD &`) is a fork of this script until
  # it execs, so its command line does not name the dir yet: on a loaded machine
  # the check below saw that window and took a starting kube-apiserver for dead.
  # Our own child cannot be a stale pid; it is alive unless it is a zombie.
  if stat="$(cat "/proc/${pid}/stat" 2>/dev/null)"; then
    stat="${stat##*) }"   # after "pid (comm) ": "STATE PPID ..."
    state="${stat%% *}"
    stat="${stat#* }"
    ppid="${stat%% *}"
    [[ "${state}" == Z ]] && return 1
    [[ "${ppid}" == "$$" ]] && return 0
  fi
  if [[ -r "/proc/${pid}/cmdline" ]]; then
    dir="$(cd "$(dirname "${f}")" && pwd)"
    tr '\0' ' ' < "/proc/${pid}/cmdline" | grep -qF -- "${dir}/" || return 1
  fi
}
