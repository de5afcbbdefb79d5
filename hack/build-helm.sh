#!/usr/bin/env bash
# Build helm (pinned below) from its Go module through the Go module proxy, for the
# integration tests that render deploy/helm/kubesched (`helm template`).
#
# Output: ${KUBESCHED_CACHE:-~/.cache/kubesched}/helm/<version>/bin/helm; nothing is
# built when it exists. The bin dir is printed on the last line of stdout; everything
# else goes to stderr. A cold build takes 2-5 minutes on 2 cores.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
HELM_BIN_DIR="${KUBESCHED_CACHE}/helm/${HELM_VERSION}/bin"

if [[ -x "${HELM_BIN_DIR}/helm" ]]; then
  echo "${HELM_BIN_DIR}"
  exit 0
fi

ensure_go
ensure_cmd flock util-linux
mkdir -p "${HELM_BIN_DIR}"
exec 9>"${HELM_BIN_DIR}/.build.lock"
flock 9
if [[ -x "${HELM_BIN_DIR}/helm" ]]; then
  echo "${HELM_BIN_DIR}"
  exit 0
fi

log "building helm ${HELM_VERSION} (go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION})"
start=${SECONDS}
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kubesched-helm-build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
# `helm version` reports the version helm's own Makefile stamps in.
GOBIN="${WORK}" go install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
  "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
[[ -x "${WORK}/helm" ]] || die "build did not produce helm"
mv -f "${WORK}/helm" "${HELM_BIN_DIR}/helm"
log "built helm in $((SECONDS - start))s: $("${HELM_BIN_DIR}/helm" version --short)"
echo "${HELM_BIN_DIR}"
