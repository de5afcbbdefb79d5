"""DRA end to end through `simulate`: claims made from templates, allocated by the
real allocator, reserved in PreBind through the in-memory API server, released by
the resourceclaim controller emulation after preemption; and the example cluster."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.cluster.manifests import load_documents, pending_pods, running_pods
from kubesched.framework.profile import ProfileConfig
from kubesched.simulation.simulator import SimulationResult, simulate

ROOT = Path(__file__).resolve().parents[2]


def node(name: str, cpu: str = "4") -> str:
    return f"""
    apiVersion: v1
    kind: Node
    metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
    status:
      allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}
    """


def gpus(node_name: str, *devices: str, model: str = "h100") -> str:
    listed = "".join(
        f"""
      - name: {d}
        attributes:
          model: {{string: {model}}}"""
        for d in devices
    )
    return f"""
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata: {{name: {node_name}-gpu}}
    spec:
      driver: gpu.example.com
      nodeName: {node_name}
      pool: {{name: {node_name}, generation: 1, resourceSliceCount: 1}}
      devices:{listed}
    """


GPU_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"""


def template(name: str = "one-gpu", class_name: str = "gpu", model: str = "h100") -> str:
    return f"""
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {{name: {name}, namespace: default}}
    spec:
      spec:
        devices:
          requests:
          - name: gpu
            exactly:
              deviceClassName: {class_name}
              selectors:
              - cel: {{expression: 'device.attributes["gpu.example.com"].model == "{model}"'}}
    """


def pod(
    name: str,
    *,
    template_name: str | None = "one-gpu",
    claim: str | None = None,
    cpu: str = "1",
    priority: str = "",
    node_name: str = "",
) -> str:
    claims = ""
    if template_name is not None:
        claims = f"resourceClaims: [{{name: gpu, resourceClaimTemplateName: {template_name}}}]"
    if claim is not None:
        claims = f"resourceClaims: [{{name: gpu, resourceClaimName: {claim}}}]"
    uses = "claims: [{name: gpu}]" if claims else ""
    return f"""
    apiVersion: v1
    kind: Pod
    metadata: {{name: {name}, namespace: default}}
    spec:
      {f"priorityClassName: {priority}" if priority else ""}
      {f"nodeName: {node_name}" if node_name else ""}
      {claims}
      containers:
      - name: c
        image: x
        resources:
          requests: {{cpu: "{cpu}"}}
          {uses}
    """


HIGH = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def run(*documents: str) -> SimulationResult:
    docs: list[tuple[str, int, object]] = []
    for text in documents:
        for obj in yaml.safe_load_all(textwrap.dedent(text)):
            docs.append(("test.yaml", len(docs) + 1, obj))
    state = load_documents(docs)
    assert not state.problems, state.problems
    pods = [*running_pods(state), *pending_pods(state)]
    return simulate(
        state.nodes,
        pods,
        [ProfileConfig.default()],
        seed=1,
        namespaces=state.namespaces,
        dra=state.dra,
    )


def only_claim_of(result: SimulationResult, pod_name: str) -> Any:
    owned = [
        c
        for c in result.claims.values()
        if any(ref.name == pod_name for ref in c.metadata.owner_references)
    ]
    assert len(owned) == 1, owned
    return owned[0]


def test_template_claim_is_allocated_and_reserved_on_the_node_with_the_device() -> None:
    result = run(node("n1"), node("n2"), gpus("n2", "gpu-0"), GPU_CLASS, template(), pod("p"))
    assert result.placements == {"default/p": "n2"}
    claim = only_claim_of(result, "p")
    allocation = claim.status.allocation
    assert allocation is not None
    assert [(r.driver, r.pool, r.device, r.request) for r in allocation.devices.results] == [
        ("gpu.example.com", "n2", "gpu-0", "gpu")
    ]
    assert [(r.resource, r.name) for r in claim.status.reserved_for] == [("pods", "p")]
    assert "resource.kubernetes.io/delete-protection" in claim.metadata.finalizers


def test_shared_claim_puts_both_pods_on_the_allocations_node() -> None:
    shared = """
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {name: shared, namespace: default}
    spec:
      devices:
        requests:
        - name: gpu
          exactly: {deviceClassName: gpu}
    """
    result = run(
        node("n1"),
        node("n2"),
        node("n3"),
        gpus("n2", "gpu-0"),
        gpus("n3", "gpu-0"),
        GPU_CLASS,
        shared,
        pod("a", template_name=None, claim="shared"),
        pod("b", template_name=None, claim="shared"),
    )
    claim = result.claims["default/shared"]
    assert claim.status.allocation is not None
    pool = claim.status.allocation.devices.results[0].pool
    assert result.placements == {"default/a": pool, "default/b": pool}
    assert sorted(r.name for r in claim.status.reserved_for) == ["a", "b"]


def test_unsatisfiable_claim_gives_upstreams_text() -> None:
    result = run(
        node("n1"),
        node("n2"),
        gpus("n1", "gpu-0", model="a100"),
        GPU_CLASS,
        template(),
        pod("p"),
    )
    assert result.placements == {"default/p": None}
    assert result.reasons["default/p"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    claim = only_claim_of(result, "p")
    assert claim.status.allocation is None and claim.status.reserved_for == []


def test_missing_device_class() -> None:
    result = run(node("n1"), gpus("n1", "gpu-0"), template(class_name="nope"), pod("p"))
    assert result.placements == {"default/p": None}
    assert result.reasons["default/p"] == (
        "0/1 nodes are available: request gpu: device class nope does not exist. "
        "no new claims to deallocate, preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    )


HELD = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: held
  namespace: default
  finalizers: [resource.kubernetes.io/delete-protection]
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: n1, device: gpu-0}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields:
        - {key: metadata.name, operator: In, values: [n1]}
"""


def test_preemption_of_a_claim_holder_frees_its_device() -> None:
    """The victim (bound, holding the only GPU) is preempted for CPU by a pod that
    needs no GPU; the controller emulation then deallocates its claim, and the pod
    waiting for a GPU (whose own Filter failure was unresolvable) gets the device."""
    result = run(
        node("n1", cpu="4"),
        gpus("n1", "gpu-0"),
        GPU_CLASS,
        template(),
        HIGH,
        HELD,
        pod("victim", template_name=None, claim="held", cpu="3", node_name="n1"),
        pod("preemptor", template_name=None, cpu="2", priority="high"),
        pod("waiter", cpu="1"),
    )
    assert result.evicted == ["default/victim"]
    assert result.placements == {"default/preemptor": "n1", "default/waiter": "n1"}
    held = result.claims["default/held"]
    assert held.status.allocation is None and held.status.reserved_for == []
    mine = only_claim_of(result, "waiter")
    assert mine.status.allocation is not None
    assert mine.status.allocation.devices.results[0].device == "gpu-0"


def test_a_pod_cannot_preempt_for_a_device() -> None:
    """As upstream: "cannot allocate all claims" is UnschedulableAndUnresolvable, so
    preemption does not consider the node even though a lower-priority pod holds
    the device."""
    result = run(
        node("n1", cpu="4"),
        gpus("n1", "gpu-0"),
        GPU_CLASS,
        template(),
        HIGH,
        HELD,
        pod("victim", template_name=None, claim="held", cpu="1", node_name="n1"),
        pod("preemptor", priority="high"),
    )
    assert result.evicted == []
    assert result.placements["default/preemptor"] is None
    assert result.reasons["default/preemptor"] == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_example_cluster_finetune_job() -> None:
    """examples/cluster: four finetune pods fill the two H100 nodes (two GPUs of one
    NUMA node per claim), the fifth waits for a device."""
    out = CliRunner().invoke(
        main, ["simulate", "-f", str(ROOT / "examples" / "cluster"), "-o", "json", "--seed", "1"]
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    finetune = {k: v for k, v in doc["placements"].items() if k.startswith("ml/finetune-")}
    assert len(finetune) == 5
    placed = {k: v for k, v in finetune.items() if v is not None}
    assert sorted(placed.values()) == ["dra-gpu-a-00"] * 2 + ["dra-gpu-b-00"] * 2
    numa = {"gpu-0": 0, "gpu-1": 0, "gpu-2": 1, "gpu-3": 1}
    for key, node_name in placed.items():
        devices = doc["devices"][key]
        assert len(devices) == 2
        pools = {d["device"].split("/")[1] for d in devices}
        assert pools == {node_name}
        assert len({numa[d["device"].split("/")[2]] for d in devices}) == 1
    (waiting,) = [k for k, v in finetune.items() if v is None]
    assert "cannot allocate all claims" in doc["reasons"][waiting]
