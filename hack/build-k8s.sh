#!/usr/bin/env bash
# Build kube-apiserver, kube-scheduler, kube-controller-manager and kubectl for the
# pinned Kubernetes version (hack/k8s-version) from the k8s.io/kubernetes Go module.
# kubectl renders deploy/ (`kubectl kustomize`) and applies it with --dry-run=server
# in the integration tests.
#
# k8s.io/kubernetes cannot be `go install`ed directly: its go.mod requires the
# staging modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and replaces
# them with ./staging/src/... directories, which are not part of the module.
# So we create a throwaway wrapper module that requires k8s.io/kubernetes and
# replaces every staging module by its published release (v1.X.Y -> v0.X.Y),
# then `go build` the commands from there.
#
# Output: ${KUBESCHED_CACHE:-~/.cache/kubesched}/k8s/<version>/bin/
#   {kube-apiserver,kube-scheduler,kube-controller-manager,kubectl}. Only the
#   missing ones are built (a cache from before kubectl was added gets just that
#   one, a few minutes); if all exist, nothing is built.
# The binary dir is printed on the last line of stdout; everything else goes
# to stderr. The first build takes 10-25 minutes on 2 cores.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BINARIES=(kube-apiserver kube-scheduler kube-controller-manager kubectl)

# missing: the BINARIES not (yet) in the bin dir, one a line.
missing() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x "${K8S_BIN_DIR}/${b}" ]] || echo "${b}"; done
}
have_all() { [[ -z "$(missing)" ]]; }

if have_all; then
  echo "${K8S_BIN_DIR}"
  exit 0
fi

[[ "${K8S_VERSION}" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] \
  || die "unexpected Kubernetes version '${K8S_VERSION}' (want v1.MINOR.PATCH)"
K8S_MINOR="${BASH_REMATCH[1]}"
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

ensure_go
ensure_cmd flock util-linux
mkdir -p "${K8S_BIN_DIR}"

# Serialise concurrent builds of the same version; re-check once we hold it.
exec 9>"${K8S_BIN_DIR}/.build.lock"
flock 9
if have_all; then
  echo "${K8S_BIN_DIR}"
  exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kubesched-k8s-build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT

log "downloading k8s.io/kubernetes@${K8S_VERSION}"
K8S_GOMOD="$(cd "${WORK}" && go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" \
  | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "${K8S_GOMOD}" ]] || die "could not locate go.mod of k8s.io/kubernetes@${K8S_VERSION}"

GO_DIRECTIVE="$(awk '$1 == "go" { print $2; exit }' "${K8S_GOMOD}")"
GODEBUG_LINES="$(grep -E '^godebug ' "${K8S_GOMOD}" || true)"

# Staging modules: `replace X => ./staging/src/X`, restricted to those that
# k8s.io/kubernetes actually requires (at v0.0.0). E.g. sample-cli-plugin is
# replaced but not required, and is not always published.
mapfile -t STAGING < <(awk '
  $2 == "=>" && $3 ~ /^\.\/staging\// { staged[$1] = 1 }
  ($1 == "require" && $3 == "v0.0.0") { req[$2] = 1 }
  (NF >= 2 && $2 == "v0.0.0") { req[$1] = 1 }
  END { for (m in staged) if (m in req) print m }
' "${K8S_GOMOD}" | sort)
[[ ${#STAGING[@]} -gt 0 ]] || die "found no staging modules in ${K8S_GOMOD}"
log "replacing ${#STAGING[@]} staging modules with ${STAGING_VERSION}"

# Other (non-staging) replace directives of k8s.io/kubernetes, copied as is.
OTHER_REPLACES="$(awk '
  /^replace \($/ { inblock = 1; next }
  inblock && /^\)$/ { inblock = 0; next }
  inblock && $2 == "=>" && $3 !~ /^\./ { print "\t" $0 }
  /^replace / && $3 == "=>" && $4 !~ /^\./ { sub(/^replace /, ""); print "\t" $0 }
' "${K8S_GOMOD}")"

{
  echo "module kubesched.local/k8sbuild"
  echo
  echo "go ${GO_DIRECTIVE}"
  [[ -n "${GODEBUG_LINES}" ]] && printf '\n%s\n' "${GODEBUG_LINES}"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  echo "replace ("
  for m in "${STAGING[@]}"; do printf '\t%s => %s %s\n' "${m}" "${m}" "${STAGING_VERSION}"; done
  [[ -n "${OTHER_REPLACES}" ]] && echo "${OTHER_REPLACES}"
  echo ")"
} > "${WORK}/go.mod"
log "wrapper go.mod:"; sed 's/^/    /' "${WORK}/go.mod" >&2

# Same version variables as upstream hack/lib/version.sh, so that
# `kube-apiserver --version` prints "Kubernetes <version>".
BUILD_DATE="$(date -u +'%Y-%m-%dT%H:%M:%SZ')"
LDFLAGS="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  LDFLAGS+=" -X ${pkg}.gitVersion=${K8S_VERSION}"
  LDFLAGS+=" -X ${pkg}.gitMajor=1"
  LDFLAGS+=" -X ${pkg}.gitMinor=${K8S_MINOR}"
  LDFLAGS+=" -X ${pkg}.gitTreeState=clean"
  LDFLAGS+=" -X ${pkg}.buildDate=${BUILD_DATE}"
done

mapfile -t BUILD < <(missing)
log "building ${BUILD[*]} ${K8S_VERSION} (slow the first time: 10-25 min on 2 cores)"
start=${SECONDS}
mkdir -p "${WORK}/out"
(
  cd "${WORK}"
  # -mod=mod lets go resolve the full module graph and fill go.sum itself.
  go build -mod=mod -trimpath -ldflags "${LDFLAGS}" -o "${WORK}/out/" \
    "${BUILD[@]/#/k8s.io/kubernetes/cmd/}"
)
for b in "${BUILD[@]}"; do
  [[ -x "${WORK}/out/${b}" ]] || die "build did not produce ${b}"
  mv -f "${WORK}/out/${b}" "${K8S_BIN_DIR}/${b}"
done
# kubectl has no --version flag; the servers do.
if [[ "${BUILD[0]}" == kubectl ]]; then
  version="$("${K8S_BIN_DIR}/kubectl" version --client | head -1)"
else
  version="$("${K8S_BIN_DIR}/${BUILD[0]}" --version)"
fi
log "built ${BUILD[*]} in $((SECONDS - start))s: ${version}"
echo "${K8S_BIN_DIR}"
