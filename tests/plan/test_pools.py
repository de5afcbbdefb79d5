"""The NodePools file: decoded into typed pools, or refused whole with one line
naming the file and the field."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from kubesched.plan import PoolsError, load_pools

GOOD = """\
apiVersion: kubesched.io/v1alpha1
kind: NodePools
pools:
  - name: cpu
    price: 0.4
    max: 10
    node:
      metadata: {labels: {node.kubernetes.io/instance-type: c8}}
      status: {capacity: {cpu: "8", memory: 32Gi}}
  - name: gpu
    price: 3
    node:
      spec: {taints: [{key: gpu, effect: NoSchedule}]}
      status: {allocatable: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4", pods: "58"}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pools.yaml"
    path.write_text(text)
    return path


def test_pools_decode_with_node_defaults(tmp_path: Path) -> None:
    cpu, gpu = load_pools(write(tmp_path, GOOD))
    assert (cpu.name, cpu.price, cpu.max) == ("cpu", Decimal("0.4"), 10)
    # allocatable from capacity (SetDefaults_NodeStatus), pods from kubelet's default.
    assert cpu.node.status.allocatable == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert (gpu.price, gpu.max) == (Decimal("3"), None)
    assert gpu.node.status.allocatable["pods"] == "58"
    node = gpu.node_named(2)
    assert node.metadata.name == "gpu-2"
    assert node.metadata.labels["kubernetes.io/hostname"] == "gpu-2"
    assert [t.key for t in node.spec.taints] == ["gpu"]


def _pools(*entries: str) -> str:
    head = "apiVersion: kubesched.io/v1alpha1\nkind: NodePools\npools:\n"
    return head + "".join(entries)


CPU = "  - {name: cpu, price: 1, node: {status: {allocatable: {cpu: '8', memory: 8Gi}}}}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace("kind: NodePools", "kind: NodePools\nextra: 1"),
            "pools.yaml: extra: unknown field",
        ),
        (
            _pools(CPU, "  - {name: gpu, price: 2, cost: 3, node: {}}\n"),
            "pools.yaml: pools[1].cost: unknown field",
        ),
        (
            _pools(CPU, "  - {name: gpu, price: -2, node: {status: {allocatable: {cpu: '1'}}}}\n"),
            "pools.yaml: pools[1].price: must be >= 0",
        ),
        (
            _pools(CPU.replace("price: 1", "price: 1, max: -1")),
            "pools.yaml: pools[0].max: must be >= 0",
        ),
        (
            _pools(CPU.replace("price: 1", "price: 1, max: many")),
            "pools.yaml: pools[0].max: expected int | null, got str",
        ),
        (_pools(CPU, CPU), "pools.yaml: pools[1].name: duplicate pool name 'cpu'"),
        (
            _pools(CPU.replace("'8'", "eight")),
            "pools.yaml: pools[0].node.status.allocatable[cpu]: quantities must match",
        ),
        (
            _pools(CPU.replace("allocatable", "alocatable")),
            'pools.yaml: pools[0].node.status.alocatable: unknown field "status.alocatable"; '
            'did you mean "allocatable"?',
        ),
        (
            _pools(CPU.replace("'8'", "'-8'")),
            'pools.yaml: pools[0].node.status.allocatable[cpu]: Invalid value: "-8": '
            "must be greater than or equal to 0",
        ),
        (
            _pools(CPU, "  - {name: gpu, node: {status: {allocatable: {cpu: '1'}}}}\n"),
            "pools.yaml: pools[1].price: give every pool a price, or none",
        ),
        (_pools(CPU.replace("name: cpu", "name: CPU")), "pools.yaml: pools[0].name: 'CPU': "),
        (GOOD.replace("kubesched.io/v1alpha1", "v1"), "pools.yaml: apiVersion: must be"),
        ("pools: [", "pools.yaml: not YAML: "),
        ("apiVersion: kubesched.io/v1alpha1\nkind: NodePools\npools: []\n", "pools.yaml: pools: "),
    ],
)
def test_bad_pools_are_one_line_naming_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    write(tmp_path, text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PoolsError) as caught:
        load_pools(Path("pools.yaml"))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(expected), message
