#!/usr/bin/env bash
# The Kubernetes protobuf descriptors kubesched reads and writes with
# (src/kubesched/kube/protobuf/k8s.binpb, `make proto`): the generated.proto files of
# k8s.io/api and k8s.io/apimachinery at the release in hack/k8s-version, compiled into
# one FileDescriptorSet by protoc (grpcio-tools, run by uv from PyPI, not installed in
# the venv). Only regenerating needs Go and the network; the set is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib.sh 2>/dev/null || true

K8S_VERSION=$(cat hack/k8s-version)          # v1.36.3
STAGING_VERSION="v0.${K8S_VERSION#v1.}"       # v0.36.3: the staging modules' tag
GRPCIO_TOOLS=1.81.1                           # bundles libprotoc 33.5
OUT=src/kubesched/kube/protobuf/k8s.binpb

PROTOS=(
  k8s.io/apimachinery/pkg/api/resource/generated.proto
  k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto
  k8s.io/apimachinery/pkg/runtime/generated.proto
  k8s.io/apimachinery/pkg/runtime/schema/generated.proto
  k8s.io/apimachinery/pkg/util/intstr/generated.proto
  k8s.io/api/core/v1/generated.proto
  k8s.io/api/events/v1/generated.proto
  k8s.io/api/policy/v1/generated.proto
  k8s.io/api/resource/v1/generated.proto
  k8s.io/api/scheduling/v1/generated.proto
  k8s.io/api/storage/v1/generated.proto
)

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/k8s.io"
for module in api apimachinery; do
  dir=$(cd "$root" && GOFLAGS=-mod=mod go mod download -json "k8s.io/$module@$STAGING_VERSION" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
  ln -s "$dir" "$root/k8s.io/$module"
done

UV=${UV:-.venv/bin/uv}
"$UV" tool run --quiet --from "grpcio-tools==$GRPCIO_TOOLS" python -m grpc_tools.protoc \
  -I"$root" --include_imports --descriptor_set_out="$OUT" "${PROTOS[@]/#/$root/}"
echo "wrote $OUT from k8s.io/api and k8s.io/apimachinery $STAGING_VERSION" >&2
