"""`kubesched plan --remove-nodes` on in-memory clusters, against answers computed by hand.

Every node has 4 cpu and 16Gi unless said; the pods ask for cpu and 1Gi, so cpu
decides both the fit and the utilisation order (cpu requested / 4)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from kubesched.api.objects import Node, Pod, PodDisruptionBudget
from kubesched.framework.profile import ProfileConfig
from kubesched.plan import NodePool, RemovalResult, plan_remove_nodes
from kubesched.simulation.simulator import World
from kubesched.testing import make_node


def pod(
    name: str,
    node: str,
    cpu: str,
    *,
    owner: str | None = "ReplicaSet",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    priority: int | None = None,
    memory: str = "1Gi",
) -> Pod:
    owners = (
        []
        if owner is None
        else [{"apiVersion": "apps/v1", "kind": owner, "name": "x", "uid": "u", "controller": True}]
    )
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [
            {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
        "volumes": volumes or [],
    }
    if priority is not None:
        spec["priority"] = priority
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"uid-{name}",
                "labels": labels or {},
                "annotations": annotations or {},
                "ownerReferences": owners,
            },
            "spec": spec,
        },
        Pod,
    )


def pdb(name: str, allowed: int, **labels: str) -> PodDisruptionBudget:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": labels}, "minAvailable": 1},
            "status": {"disruptionsAllowed": allowed},
        },
        PodDisruptionBudget,
    )


def nodes(*names: str, **labels: dict[str, str]) -> list[Node]:
    return [make_node(n, cpu="4", memory="16Gi", labels=labels.get(n)) for n in names]


def run(
    node_list: list[Node],
    pods: list[Pod],
    pdbs: list[PodDisruptionBudget] | None = None,
    pools: list[NodePool] | None = None,
) -> RemovalResult:
    world = World(node_list, pods, [ProfileConfig.default()], pdbs or [])
    return plan_remove_nodes(world, pools)


def removed(result: RemovalResult) -> list[str]:
    return [r.node for r in result.removed]


def blocked(result: RemovalResult) -> dict[str, tuple[str, str, str]]:
    return {b.node: (b.reason, b.rule, b.pod) for b in result.blocked}


def test_a_pdb_that_allows_no_disruption_blocks() -> None:
    """n3 is empty: it goes. web-1 and web-2 would fit on the other node, but
    their budget allows no disruption."""
    web = {"app": "web"}
    result = run(
        nodes("n1", "n2", "n3"),
        [pod("web-1", "n1", "1", labels=web), pod("web-2", "n2", "1", labels=web)],
        [pdb("web", 0, app="web")],
    )
    assert removed(result) == ["n3"]
    assert blocked(result) == {
        "n1": ("BlockedByPod", "NotEnoughPdb", "default/web-1"),
        "n2": ("BlockedByPod", "NotEnoughPdb", "default/web-2"),
    }
    assert result.verification.scheduled
    assert result.verification.verified == 1


def test_a_pdb_that_allows_one_of_two_lets_one_node_go() -> None:
    """Utilisation: n1 0.125 (web-1, 0.5 cpu), n2 0.25 (web-2), n3 0.75 (other, 3 cpu).
    n1 goes first: web-1 goes to n2, the least allocated (1.5 of 4 against 3.5). The
    budget is then spent: n2 is blocked by web-2. n3's 3 cpu fit nowhere (n2 has 2.5
    left)."""
    web = {"app": "web"}
    result = run(
        nodes("n1", "n2", "n3"),
        [
            pod("web-1", "n1", "500m", labels=web),
            pod("web-2", "n2", "1", labels=web),
            pod("other", "n3", "3"),
        ],
        [pdb("web", 1, app="web")],
    )
    assert removed(result) == ["n1"]
    assert result.removed[0].moved == {"default/web-1": "n2"}
    assert blocked(result) == {
        "n2": ("BlockedByPod", "NotEnoughPdb", "default/web-2"),
        "n3": ("NoPlaceToMovePods", "", "default/other"),
    }
    n3 = next(b for b in result.blocked if b.node == "n3")
    assert n3.message == (
        "no place for pod default/other: 0/1 nodes are available: 1 Insufficient cpu."
    )
    assert result.verification.scheduled


def test_local_storage_blocks_unless_safe_to_evict() -> None:
    """n1 (cache, 1 cpu, an emptyDir) is tried first (0.25 against 0.625). Blocked, n2's
    big pod (2.5) goes to n1 instead. Annotated safe to evict, n1 goes (cache to n2,
    3.5 of 4) and big then fits nowhere."""
    volumes = [{"name": "scratch", "emptyDir": {}}]
    big = pod("big", "n2", "2500m")
    result = run(nodes("n1", "n2"), [pod("cache", "n1", "1", volumes=volumes), big])
    assert removed(result) == ["n2"]
    assert blocked(result) == {"n1": ("BlockedByPod", "LocalStorageRequested", "default/cache")}
    assert result.blocked[0].message == "pod with local storage present: cache"

    safe = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
    cache = pod("cache", "n1", "1", volumes=volumes, annotations=safe)
    result = run(nodes("n1", "n2"), [cache, big])
    assert removed(result) == ["n1"]
    assert result.removed[0].moved == {"default/cache": "n2"}
    assert blocked(result) == {"n2": ("NoPlaceToMovePods", "", "default/big")}


def test_a_pod_without_controller_blocks() -> None:
    result = run(nodes("n1", "n2"), [pod("lonely", "n1", "1", owner=None)])
    assert removed(result) == ["n2"]
    assert blocked(result) == {"n1": ("BlockedByPod", "NotReplicated", "default/lonely")}
    assert result.blocked[0].message == "default/lonely is not replicated"


def test_a_daemonset_pod_goes_with_its_node() -> None:
    """n1: a DaemonSet pod (1 cpu) and web (1 cpu), 0.5; n2: big (2.5), 0.625. n1 goes
    first: web fits on n2 (3.5 of 4), where the DaemonSet pod would not also fit; it is
    neither placed nor counted. n2 is then left alone: big fits nowhere."""
    result = run(
        nodes("n1", "n2"),
        [
            pod("ds-n1", "n1", "1", owner="DaemonSet"),
            pod("web", "n1", "1"),
            pod("big", "n2", "2500m"),
        ],
    )
    assert removed(result) == ["n1"]
    assert result.removed[0].moved == {"default/web": "n2"}
    assert result.removed[0].leaving == ["default/ds-n1"]
    assert blocked(result) == {"n2": ("NoPlaceToMovePods", "", "default/big")}
    check = result.verification
    assert check.scheduled and check.verified == 1 and check.rounds == 1


def _priorities(first: int, second: int) -> RemovalResult:
    """n1: big (2 cpu, priority `first`) and small (1 cpu, priority `second`). n2 and
    n3 hold unreplicated pods (blocked) and have 2.5 and 1.5 cpu free. big fits only
    on n2; small goes where it is least allocated, n2, unless big took it first."""
    return run(
        nodes("n1", "n2", "n3"),
        [
            pod("big", "n1", "2", priority=first),
            pod("small", "n1", "1", priority=second),
            pod("pinned-2", "n2", "1500m", owner=None),
            pod("pinned-3", "n3", "2500m", owner=None),
        ],
    )


def test_the_highest_priority_pods_are_placed_first() -> None:
    result = _priorities(100, 0)
    assert removed(result) == ["n1"]
    assert result.removed[0].moved == {"default/big": "n2", "default/small": "n3"}
    assert result.verification.scheduled
    # The other way round, small takes n2 and big has no place: n1 stays.
    result = _priorities(0, 100)
    assert removed(result) == []
    assert blocked(result)["n1"] == ("NoPlaceToMovePods", "", "default/big")
    assert result.blocked[-1].message == (
        "no place for pod default/big: 0/2 nodes are available: 2 Insufficient cpu."
    )


def test_the_expensive_node_goes_first() -> None:
    """cheap (1.5 cpu, 0.375) and dear (2 cpu, 0.5) can take each other's pod, not
    both go; fixed (1 cpu, scale-down disabled) takes neither. Without prices the
    less utilised cheap goes; with them, dear (5 against 1)."""
    fixed = make_node("fixed", cpu="1", memory="16Gi")
    fixed.metadata.annotations = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
    cluster = [
        *nodes("cheap", "dear", cheap={"tier": "cheap"}, dear={"tier": "dear"}),
        fixed,
    ]
    pods = [pod("a", "cheap", "1500m"), pod("b", "dear", "2")]
    result = run(cluster, pods)
    assert removed(result) == ["cheap"]
    assert result.savings is None
    assert blocked(result)["fixed"] == ("ScaleDownDisabledAnnotation", "", "")

    def pool(name: str, price: str) -> NodePool:
        template = msgspec.convert({"metadata": {"labels": {"tier": name}}}, Node)
        return NodePool(name, template, Decimal(price), None)

    result = run(cluster, pods, pools=[pool("cheap", "1"), pool("dear", "5")])
    assert removed(result) == ["dear"]
    assert result.removed[0].pool == "dear" and result.removed[0].price == "5"
    assert blocked(result)["cheap"] == ("NoPlaceToMovePods", "", "default/a")
    assert result.savings == "5"


def test_the_verification_gives_back_the_last_node() -> None:
    """n1 (a: 2 cpu, priority 0; 0.5) goes first: a fits only on n3 (2 free; n2 has 2
    cpu, 1 free). n2 (b: 1 cpu and 10Gi, priority 10; 0.625) next: b goes to n4 (1.5
    free). The scheduler then takes b first (priority), puts it on n3, the least
    allocated, and a fits nowhere: n2 is given back, and a goes to n3 again."""
    small = make_node("n2", cpu="2", memory="16Gi")
    result = run(
        [*nodes("n1"), small, *nodes("n3", "n4")],
        [
            pod("a", "n1", "2", priority=0),
            pod("b", "n2", "1", memory="10Gi", priority=10),
            pod("pinned-3", "n3", "2", owner=None),
            pod("pinned-4", "n4", "2500m", owner=None),
        ],
    )
    assert removed(result) == ["n1", "n2"]
    assert result.removed[0].moved == {"default/a": "n3"}
    assert result.removed[1].moved == {"default/b": "n4"}
    check = result.verification
    assert check.planned == 2 and check.verified == 1
    assert check.given_back == ["n2"]
    assert check.removed == ["n1"]
    assert check.scheduled and check.rounds == 2
