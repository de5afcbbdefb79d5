"""DRA-backed extended resources through `simulate` (DRAExtendedResource, on in
v1.36.3): a pod asks for example.com/gpu, which no node advertises but a DeviceClass
names in spec.extendedResourceName. NodeResourcesFit leaves the resource to
DynamicResources (shouldDelegateResourceToDRA), which allocates a device on a node
with one, creates the claim `<pod>-extended-resources-<5 chars>` in PreBind and
writes the pod's status.extendedResourceClaimStatus."""

from __future__ import annotations

import re
from pathlib import Path

from kubesched.api.resource import DELETE_PROTECTION_FINALIZER
from kubesched.cluster.manifests import pending_pods
from kubesched.framework.profile import ProfileConfig
from kubesched.simulation.simulator import simulate
from tests.unit.manifests_helpers import SUFFIX, load

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: cpu-only}
status: {allocatable: {cpu: "64", memory: 256Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-node}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: plugin-node}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", example.com/gpu: "0"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  extendedResourceName: example.com/gpu
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node-slice}
spec:
  driver: gpu.example.com
  nodeName: gpu-node
  pool: {name: gpu-node, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  containers:
  - name: main
    image: trainer
    resources:
      requests: {cpu: "1", example.com/gpu: "1"}
      limits: {example.com/gpu: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: second, namespace: default}
spec:
  containers:
  - name: main
    image: trainer
    resources:
      requests: {example.com/gpu: "1"}
      limits: {example.com/gpu: "1"}
"""


def test_pod_gets_a_device_and_its_claim(tmp_path: Path) -> None:
    state = load(tmp_path, CLUSTER)
    assert not state.problems, [str(p) for p in state.problems]
    result = simulate(
        state.nodes,
        pending_pods(state),
        [ProfileConfig.default("default-scheduler")],
        seed=1,
        dra=state.dra,
    )
    assert result.placements["default/trainer"] == "gpu-node"
    # The only device is taken: the second pod fits nowhere. cpu-only has neither a
    # device plugin nor devices; plugin-node advertises 0 (so DRA would serve it) but
    # has no slice.
    assert result.placements["default/second"] is None
    assert result.reasons["default/second"] == (
        "0/3 nodes are available: 3 cannot allocate all claims. "
        "still not schedulable, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )
    [claim] = result.claims.values()
    assert re.fullmatch(f"trainer-extended-resources-{SUFFIX}", claim.metadata.name)
    assert claim.metadata.generate_name == "trainer-extended-resources-"
    assert claim.metadata.annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
    [owner] = claim.metadata.owner_references
    pod = result.pods["default/trainer"]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Pod",
        "trainer",
        pod.metadata.uid,
        True,
    )
    assert claim.metadata.finalizers == [DELETE_PROTECTION_FINALIZER]
    [request] = claim.spec.devices.requests
    assert request.name == "container-0-request-1"  # cpu, then example.com/gpu
    assert request.exactly is not None
    assert (request.exactly.device_class_name, request.exactly.count) == ("gpu.example.com", 1)
    assert claim.status.allocation is not None
    [result_device] = claim.status.allocation.devices.results
    assert (result_device.request, result_device.device) == ("container-0-request-1", "gpu-0")
    assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]
    status = pod.status.extended_resource_claim_status
    assert status is not None
    assert status.resource_claim_name == claim.metadata.name
    assert [
        (m.container_name, m.resource_name, m.request_name) for m in status.request_mappings
    ] == [("main", "example.com/gpu", "container-0-request-1")]
