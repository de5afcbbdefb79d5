"""The Workload API gang (GenericWorkload + GangScheduling, v1.36.3) in simulate:
manifests, feature gates, the default profile, GangScheduling's PreEnqueue and
Permit, and the pod group scheduling cycle with its PodGroupScheduled condition."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api.scheduling import POD_GROUP_SCHEDULED, find_condition
from kubesched.cluster.manifests import ClusterState, pending_pods, running_pods
from kubesched.framework.features import (
    DEFAULT_GATES,
    FeatureGateError,
    parse_feature_gates,
)
from kubesched.framework.profile import ProfileConfig
from kubesched.simulation.simulator import SimulationResult, simulate
from tests.unit.manifests_helpers import load, only_problem

GATES_ON = parse_feature_gates("GenericWorkload=true,GangScheduling=true")


def node(name: str, cpu: str = "4") -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 8Gi, pods: 110}}}}
"""


def pod_group(name: str, min_count: int, namespace: str = "default") -> str:
    return f"""
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{schedulingPolicy: {{gang: {{minCount: {min_count}}}}}}}
"""


def member(name: str, group: str | None, cpu: str = "3", priority: int | None = None) -> str:
    group_line = f"schedulingGroup: {{podGroupName: {group}}}" if group else ""
    priority_line = f"priority: {priority}" if priority is not None else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  {group_line}
  {priority_line}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def run(state: ClusterState, gates: object = GATES_ON) -> SimulationResult:
    assert not state.problems, [str(p) for p in state.problems]
    return simulate(
        state.nodes,
        [*running_pods(state), *pending_pods(state)],
        [ProfileConfig.default("default-scheduler", gates)],  # type: ignore[arg-type]
        seed=1,
        workload_pod_groups=state.workload_pod_groups,
        gates=gates,  # type: ignore[arg-type]
    )


def gang(nodes: int, pods: int, min_count: int) -> str:
    text = "".join(node(f"n{i}") for i in range(nodes)) + pod_group("train", min_count)
    return text + "".join(member(f"w{i}", "train") for i in range(pods))


# --- feature gates and the default profile --------------------------------------------


def test_gates_are_off_by_default_and_gang_scheduling_needs_generic_workload() -> None:
    assert not DEFAULT_GATES.generic_workload and not DEFAULT_GATES.gang_scheduling
    with pytest.raises(FeatureGateError, match=r"depends on features that are disabled"):
        parse_feature_gates("GangScheduling=true")
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: Nope"):
        parse_feature_gates("Nope=true")
    with pytest.raises(FeatureGateError, match=r"invalid value of GenericWorkload=yes"):
        parse_feature_gates("GenericWorkload=yes")
    with pytest.raises(FeatureGateError, match="not supported by kubesched"):
        parse_feature_gates("GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
    assert parse_feature_gates("GenericWorkload=true").generic_workload


def test_gang_scheduling_plugin_is_appended_to_the_default_profile_only_with_its_gate() -> None:
    off = [p.name for p in ProfileConfig.default().plugins["multiPoint"].enabled]
    on = [p.name for p in ProfileConfig.default(gates=GATES_ON).plugins["multiPoint"].enabled]
    assert "GangScheduling" not in off
    assert on == [*off, "GangScheduling"]


# --- manifests ---------------------------------------------------------------------------


def test_pod_group_and_the_pods_reference_are_read(tmp_path: Path) -> None:
    state = load(tmp_path, pod_group("train", 3, "ml") + member("w0", "train"))
    assert list(state.workload_pod_groups) == ["ml/train"]
    gang_policy = state.workload_pod_groups["ml/train"].spec.scheduling_policy.gang
    assert gang_policy is not None and gang_policy.min_count == 3
    group = state.pods[0].spec.scheduling_group
    assert group is not None and group.pod_group_name == "train"


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ("{schedulingPolicy: {gang: {minCount: 0}}}", "spec.schedulingPolicy.gang.minCount",
         "Invalid value: 0: must be greater than or equal to 1"),
        ("{schedulingPolicy: {}}", "spec.schedulingPolicy",
         'Invalid value: "": must specify one of: `basic`, `gang`'),
        ("{schedulingPolicy: {basic: {}, gang: {minCount: 2}}}", "spec.schedulingPolicy",
         'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`'),
        ("{schedulingPolicy: {basic: {}}, schedulingConstraints: {topology: [{key: zone}]}}",
         "spec.schedulingConstraints", "Forbidden"),
    ],
)  # fmt: skip
def test_bad_pod_group_is_a_problem_naming_object_and_field(
    tmp_path: Path, spec: str, field: str, message: str
) -> None:
    text = f"""
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: train}}
spec: {spec}
"""
    state = load(tmp_path, text)
    problem = only_problem(state)
    assert "PodGroup default/train" in str(problem)
    assert problem.field == field and problem.message == message
    assert state.workload_pod_groups == {}


def test_pod_group_at_another_version_is_refused(tmp_path: Path) -> None:
    text = """
apiVersion: scheduling.k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
"""
    problem = only_problem(load(tmp_path, text))
    assert problem.field == "apiVersion"
    assert "scheduling.k8s.io/v1alpha2" in problem.message


def test_workload_is_read_and_validated(tmp_path: Path) -> None:
    good = """
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: job}
spec:
  podGroupTemplates:
  - {name: workers, schedulingPolicy: {gang: {minCount: 4}}}
"""
    assert list(load(tmp_path, good).workloads) == ["default/job"]
    bad = good.replace("name: workers", "name: Workers_")
    problem = only_problem(load(tmp_path, bad, "bad.yaml"))
    assert problem.field == "spec.podGroupTemplates[0].name"


# --- the gang in simulate ------------------------------------------------------------------


def test_gang_of_8_is_bound_whole_and_the_pod_group_is_scheduled(tmp_path: Path) -> None:
    result = run(load(tmp_path, gang(nodes=8, pods=8, min_count=8)))
    assert result.scheduled == 8
    assert len({n for n in result.placements.values()}) == 8  # 3 of 4 cpus: one a node
    condition = find_condition(result.workload_pod_groups["default/train"].status.conditions,
                               POD_GROUP_SCHEDULED)  # fmt: skip
    assert condition is not None
    assert (condition.status, condition.reason, condition.message) == ("True", "Scheduled", "")


def test_gang_of_8_where_7_fit_binds_none_and_says_why(tmp_path: Path) -> None:
    result = run(load(tmp_path, gang(nodes=7, pods=8, min_count=8)))
    assert result.scheduled == 0
    # The seven that fitted are rejected with the group's reason, the eighth with its own.
    messages = sorted(result.reasons.values())
    gang_message = (
        "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
        "one or more plugins asked to wait and no plugin rejected pod"
    )
    assert messages.count(gang_message) == 7
    assert sum(m.startswith("0/7 nodes are available: 7 Insufficient cpu.") for m in messages) == 1
    condition = find_condition(result.workload_pod_groups["default/train"].status.conditions,
                               POD_GROUP_SCHEDULED)  # fmt: skip
    assert condition is not None
    assert (condition.status, condition.reason) == ("False", "Unschedulable")
    assert condition.message == "pod group is unschedulable"
    # Nothing stays reserved: every node is empty.
    assert all(usage.requested.get("cpu", 0) == 0 for usage in result.nodes)


def test_min_count_below_the_group_size_binds_those_that_fit(tmp_path: Path) -> None:
    result = run(load(tmp_path, gang(nodes=7, pods=8, min_count=6)))
    assert result.scheduled == 7
    condition = find_condition(result.workload_pod_groups["default/train"].status.conditions,
                               POD_GROUP_SCHEDULED)  # fmt: skip
    assert condition is not None and condition.status == "True"


def test_pods_wait_at_pre_enqueue_until_the_group_exists(tmp_path: Path) -> None:
    text = node("n0") + member("w0", "missing")
    result = run(load(tmp_path, text))
    assert result.placements == {"default/w0": None}
    # Held at PreEnqueue: never attempted, so no FailedScheduling reason.
    assert "default/w0" not in result.reasons
    assert result.not_attempted["default/w0"].message == (
        'waiting for pods\'s pod group "missing" to appear in scheduling queue'
    )


def test_pods_wait_at_pre_enqueue_until_min_count_pods_exist(tmp_path: Path) -> None:
    text = node("n0") + node("n1") + pod_group("train", 3) + member("w0", "train")
    text += member("w1", "train")
    result = run(load(tmp_path, text))
    assert result.scheduled == 0
    assert not result.reasons
    assert {gate.message for gate in result.not_attempted.values()} == {
        "waiting for minCount pods from a gang to appear in scheduling queue"
    }
    # Nothing was tried: the gate holds the pods back before any cycle.
    assert all(o.attempts == 0 for o in result.outcomes.values())


def test_with_the_gates_off_the_group_reference_is_ignored(tmp_path: Path) -> None:
    result = run(load(tmp_path, gang(nodes=7, pods=8, min_count=8)), DEFAULT_GATES)
    assert result.scheduled == 7  # pod by pod, as kube-scheduler with the gates off


def test_competing_gangs_the_one_that_fits_completes_and_the_other_holds_nothing(
    tmp_path: Path,
) -> None:
    # 6 nodes of 4 cpus, each pod 3 cpus: room for 6 pods. Gang a (4 pods, first in
    # the queue) fits; gang b (4 pods) cannot fit whole next to it.
    text = "".join(node(f"n{i}") for i in range(6)) + pod_group("a", 4) + pod_group("b", 4)
    text += "".join(member(f"a{i}", "a") for i in range(4))
    text += "".join(member(f"b{i}", "b") for i in range(4))
    result = run(load(tmp_path, text))
    placed = {k for k, n in result.placements.items() if n}
    assert placed == {f"default/a{i}" for i in range(4)}
    b = find_condition(
        result.workload_pod_groups["default/b"].status.conditions, POD_GROUP_SCHEDULED
    )
    assert b is not None and b.status == "False"
    used = sum(usage.requested.get("cpu", 0) for usage in result.nodes)
    assert used == 4 * 3000  # gang b reserved nothing


def test_gang_and_single_pods_mixed(tmp_path: Path) -> None:
    text = gang(nodes=8, pods=8, min_count=8) + member("solo", None, cpu="1")
    result = run(load(tmp_path, text))
    assert result.scheduled == 9


def test_scheduled_condition_never_goes_back_to_false(tmp_path: Path) -> None:
    # min 2 of 3: two fit on two nodes, the third does not; a later cycle for the
    # third must not turn the group's condition back to False.
    text = node("n0") + node("n1") + pod_group("g", 2)
    text += "".join(member(f"p{i}", "g") for i in range(3))
    result = run(load(tmp_path, text))
    assert result.scheduled == 2
    condition = find_condition(result.workload_pod_groups["default/g"].status.conditions,
                               POD_GROUP_SCHEDULED)  # fmt: skip
    assert condition is not None and condition.status == "True"


def test_the_member_that_let_the_group_in_is_tried_first(tmp_path: Path) -> None:
    # Its InitialAttemptTimestamp is the earliest: it entered activeQ first, the
    # others followed on its UnscheduledPodAdd event (podGroupInfoForPod's sort).
    # With room for 7 of 8, it is among those that fit.
    result = run(load(tmp_path, gang(nodes=7, pods=8, min_count=8)))
    assert result.reasons["default/w7"].startswith("pod group is unschedulable")
    assert result.outcomes["default/w7"].attempts == 1
