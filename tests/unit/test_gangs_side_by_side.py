"""Coscheduling's gangs (scheduler-plugins' PodGroup, scheduling.x-k8s.io/v1alpha1, by
label) and the Workload API's (scheduling.k8s.io/v1alpha2, spec.schedulingGroup, the
GangScheduling plugin and the pod group cycle) in one simulation: the manifest loader
tells the two PodGroup kinds apart by API group, each gang is placed whole or not at
all, and each PodGroup gets its own status."""

from __future__ import annotations

from pathlib import Path

from kubesched.api.scheduling import POD_GROUP_SCHEDULED, find_condition
from kubesched.cluster.manifests import ClusterState, pending_pods, running_pods
from kubesched.framework.features import parse_feature_gates
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig, default_multi_point
from kubesched.simulation.simulator import SimulationResult, simulate
from tests.unit.manifests_helpers import load

GATES_ON = parse_feature_gates("GenericWorkload=true,GangScheduling=true")


def nodes(count: int) -> str:
    return "".join(
        f"""
---
apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: 110}}}}
"""
        for i in range(count)
    )


def pod(name: str, membership: str) -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}{membership}}}
spec:
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "3"}}}}}}]
"""


def coscheduling_gang(size: int) -> str:
    """A scheduler-plugins gang named train; its pods c-0.. carry the label."""
    text = f"""
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: train, namespace: default}}
spec: {{minMember: {size}}}
"""
    label = ", labels: {scheduling.x-k8s.io/pod-group: train}"
    return text + "".join(pod(f"c-{i}", label) for i in range(size))


def workload_gang(size: int) -> str:
    """A Workload API gang, also named train; its pods w-0.. name it in their spec."""
    text = f"""
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: train, namespace: default}}
spec: {{schedulingPolicy: {{gang: {{minCount: {size}}}}}}}
"""
    members = "".join(pod(f"w-{i}", "") for i in range(size))
    return text + members.replace(
        "spec:\n  containers", "spec:\n  schedulingGroup: {podGroupName: train}\n  containers"
    )


def both_profile() -> ProfileConfig:
    """The default profile with the gates on (GangScheduling appended) and Coscheduling
    as scheduler-plugins documents it (everywhere, the only queue sort)."""
    return ProfileConfig(
        plugins={
            "multiPoint": PluginSet([*default_multi_point(GATES_ON), PluginRef("Coscheduling")]),
            "queueSort": PluginSet([PluginRef("Coscheduling")], [PluginRef("*")]),
        },
        plugin_config={"Coscheduling": {"permitWaitingTimeSeconds": 10}},
    )


def run(state: ClusterState) -> SimulationResult:
    assert not state.problems, [str(p) for p in state.problems]
    return simulate(
        state.nodes,
        [*running_pods(state), *pending_pods(state)],
        [both_profile()],
        seed=1,
        pod_groups=state.pod_groups,
        workload_pod_groups=state.workload_pod_groups,
        gates=GATES_ON,
    )


def bound(result: SimulationResult, prefix: str) -> int:
    return sum(1 for key, node in result.placements.items() if node and f"/{prefix}-" in key)


def test_the_loader_reads_each_podgroup_kind_by_its_api_group(tmp_path: Path) -> None:
    state = load(tmp_path, nodes(1) + coscheduling_gang(3) + workload_gang(2))
    assert not state.problems, [str(p) for p in state.problems]
    assert [(g.key, g.spec.min_member) for g in state.pod_groups] == [("default/train", 3)]
    workload = state.workload_pod_groups["default/train"]
    gang = workload.spec.scheduling_policy.gang
    assert gang is not None and gang.min_count == 2


def test_both_gangs_are_placed_whole_and_each_podgroup_gets_its_status(tmp_path: Path) -> None:
    result = run(load(tmp_path, nodes(6) + coscheduling_gang(3) + workload_gang(3)))
    assert (bound(result, "c"), bound(result, "w")) == (3, 3)
    # scheduler-plugins' controller: minMember pods scheduled, none Running (no kubelet).
    assert result.pod_groups["default/train"].status.phase == "Scheduling"
    condition = find_condition(
        result.workload_pod_groups["default/train"].status.conditions, POD_GROUP_SCHEDULED
    )
    assert condition is not None
    assert (condition.status, condition.reason) == ("True", "Scheduled")


def test_when_only_one_gang_fits_neither_holds_part_of_the_cluster(tmp_path: Path) -> None:
    result = run(load(tmp_path, nodes(5) + coscheduling_gang(3) + workload_gang(3)))
    placed = (bound(result, "c"), bound(result, "w"))
    assert placed in {(3, 0), (0, 3)}
    # Nothing of the gang left out stays reserved: 3 pods of 3 cpus on the nodes.
    assert sum(u.requested.get("cpu", 0) for u in result.nodes) == 9000
    condition = find_condition(
        result.workload_pod_groups["default/train"].status.conditions, POD_GROUP_SCHEDULED
    )
    assert condition is not None
    assert condition.status == ("True" if placed == (0, 3) else "False")
