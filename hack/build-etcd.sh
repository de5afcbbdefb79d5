#!/usr/bin/env bash
# Provide an etcd binary for the pinned Kubernetes version, in the same cache
# dir as build-k8s.sh: ${KUBESCHED_CACHE:-~/.cache/kubesched}/k8s/<version>/bin/etcd
# The binary dir is printed on the last line of stdout; the rest goes to stderr.
#
# Choice of etcd (KUBESCHED_ETCD=source|debian, default: source):
#   source  Build etcd from the go.etcd.io/etcd/server/v3 Go module, at the
#           version k8s.io/kubernetes's go.mod requires (v3.6.8 for v1.36.3,
#           the same version upstream's own integration tests use). Takes
#           ~2-3 minutes once, then is cached. This is the default because it is
#           the etcd this kube-apiserver is developed and tested against.
#   debian  Use Debian 12's `etcd-server` package (etcd 3.4.23), symlinked into
#           the cache dir. It was tested: kube-apiserver v1.36.3 starts on it and
#           the self-check (create Node/Pod, kube-scheduler binds the Pod)
#           passes, but etcd 3.4 is below what Kubernetes supports (kubeadm
#           requires >= 3.5.24) and lacks features the apiserver probes for
#           (e.g. RequestWatchProgress, so consistent reads from the watch cache
#           are disabled). Handy when no Go toolchain is at hand.
# If etcd already exists in the cache dir, nothing is done.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODE="${KUBESCHED_ETCD:-source}"
ETCD="${K8S_BIN_DIR}/etcd"

if [[ -x "${ETCD}" ]]; then
  echo "${K8S_BIN_DIR}"
  exit 0
fi
mkdir -p "${K8S_BIN_DIR}"

case "${MODE}" in
  debian)
    ensure_cmd etcd etcd-server
    # The package enables an etcd systemd service on the default ports; we do
    # not need it (our etcd runs on free ports), but leave the system alone.
    ln -sf "$(command -v etcd)" "${ETCD}"
    log "using Debian etcd: $("${ETCD}" --version | head -n1)"
    echo "${K8S_BIN_DIR}"
    exit 0
    ;;
  source) ;;
  *) die "KUBESCHED_ETCD must be 'source' or 'debian', not '${MODE}'" ;;
esac

ensure_go
ensure_cmd flock util-linux
exec 9>"${K8S_BIN_DIR}/.build-etcd.lock"
flock 9
if [[ -x "${ETCD}" ]]; then
  echo "${K8S_BIN_DIR}"
  exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kubesched-etcd-build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT

# The etcd version k8s.io/kubernetes requires (override with ETCD_VERSION=v3.x.y).
if [[ -z "${ETCD_VERSION:-}" ]]; then
  K8S_GOMOD="$(cd "${WORK}" && go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "${K8S_GOMOD}" ]] || die "could not locate go.mod of k8s.io/kubernetes@${K8S_VERSION}"
  ETCD_VERSION="$(awk '($1 == "go.etcd.io/etcd/server/v3") { print $2; exit }' "${K8S_GOMOD}")"
  [[ -n "${ETCD_VERSION}" ]] \
    || ETCD_VERSION="$(awk '($1 == "go.etcd.io/etcd/client/v3") { print $2; exit }' "${K8S_GOMOD}")"
  [[ -n "${ETCD_VERSION}" ]] || die "k8s.io/kubernetes@${K8S_VERSION} go.mod names no etcd version"
fi

# Wrapper module: etcd's own go.mod pins its dependencies; its replace
# directives (../api etc.) are ignored for a dependency and not needed.
cat > "${WORK}/go.mod" <<EOF
module kubesched.local/etcdbuild

go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')

require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
EOF

log "building etcd ${ETCD_VERSION} from go.etcd.io/etcd/server/v3 (a few minutes the first time)"
start=${SECONDS}
(
  cd "${WORK}"
  go build -mod=mod -trimpath -ldflags "-s -w" -o "${WORK}/etcd" go.etcd.io/etcd/server/v3
)
mv -f "${WORK}/etcd" "${ETCD}"
log "built in $((SECONDS - start))s: $("${ETCD}" --version | head -n1)"
echo "${K8S_BIN_DIR}"
