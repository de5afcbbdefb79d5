"""The benchmark's gang workload (bench/gang_workload.py): what it creates, how
many pods a correct scheduler binds at every size, its tiny size in process with
GenericWorkload and GangScheduling on (gangs whole or refused) and off (a gang
bound in part, which voids the run and makes `python -m bench` fail), and a
running cluster without the Workload API reported as n/a. End to end against
both schedulers: tests/integration/test_bench_smoke.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bench.gang_workload import GANG_LABEL, GPU, count_gangs, gpu_singles, no_gang_in_part
from bench.inprocess import run_inprocess
from bench.report import gang_lines
from bench.run import broken_runs, run_bench
from bench.schedulers import SCHEDULERS
from bench.workloads import ROLE_LABEL, ROLE_MEASURE, WORKLOADS, PodState

NAME = "GangScheduling"
WORKLOAD = WORKLOADS[NAME]


def _requests(pod: dict[str, object]) -> dict[str, str]:
    return pod["spec"]["containers"][0]["resources"]["requests"]  # type: ignore[index, no-any-return]


def test_the_plan_creates_a_workload_its_pod_groups_and_their_gpu_pods() -> None:
    plan = WORKLOAD.plan(WORKLOAD.size("tiny"), "sched", "r1", ["ns"])
    assert [n["metadata"]["name"] for n in plan.nodes] == [
        "r1-gpu-node-0",
        "r1-gpu-node-1",
        "r1-node-0",
    ]
    assert [n["status"]["allocatable"].get(GPU) for n in plan.nodes] == ["8", "8", None]
    workload, *groups = plan.objects
    assert workload["kind"] == "Workload" and workload["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert workload["spec"]["podGroupTemplates"] == [
        {"name": "worker", "schedulingPolicy": {"gang": {"minCount": 8}}}
    ]
    assert [(g["kind"], g["metadata"]["name"]) for g in groups] == [
        ("PodGroup", "gang-0"),
        ("PodGroup", "gang-1"),
    ]
    assert groups[0]["spec"] == {
        "podGroupTemplateRef": {
            "workload": {"workloadName": "training", "podGroupTemplateName": "worker"}
        },
        "schedulingPolicy": {"gang": {"minCount": 8}},
    }
    pods = plan.measure_pods
    # gang-0's 8 pods, 16 singles, gang-1's 8 pods, 16 singles
    assert [p["metadata"]["name"] for p in pods[:9]] == [f"gang-0-{i}" for i in range(8)] + [
        "single-0"
    ]
    assert [p["metadata"]["name"] for p in pods[24:33]] == [f"gang-1-{i}" for i in range(8)] + [
        "single-16"
    ]
    gang_pod = pods[0]
    assert gang_pod["spec"]["schedulingGroup"] == {"podGroupName": "gang-0"}
    assert gang_pod["metadata"]["labels"][GANG_LABEL] == "gang-0"
    # an extended resource must have limits = requests
    resources = gang_pod["spec"]["containers"][0]["resources"]
    assert resources["requests"][GPU] == resources["limits"][GPU] == "1"
    singles = [p for p in pods if "schedulingGroup" not in p["spec"]]
    assert len(singles) == 32
    assert [p["metadata"]["name"] for p in singles if GPU in _requests(p)] == [
        f"single-{j}" for j in range(0, 32, 4)
    ]
    assert plan.init_pods == []
    # 16 GPUs: one gang's 8 and 8 GPU singles, or two gangs; plus the 24 without GPU
    assert plan.measured == 40
    assert WORKLOAD.size("small").as_dict() == {
        "nodes": 90,
        "init_pods": 0,
        "measure_pods": 1600,
        "unschedulable_pods": 0,
        "plain_nodes": 10,
        "gangs": 100,
    }
    assert WORKLOAD.feature_gates == "GenericWorkload=true,GangScheduling=true"
    assert WORKLOAD.workload_api


@pytest.mark.parametrize("size", ["tiny", "small", "500", "5000"])
def test_every_size_asks_for_more_gpus_than_exist_in_multiples_of_8(size: str) -> None:
    s = WORKLOAD.size(size)
    plan = WORKLOAD.plan(s, "sched", "r", ["ns"])
    gpus = 8 * s.nodes
    asked = sum(int(_requests(p).get(GPU, "0")) for p in plan.measure_pods)
    singles = s.measure_pods - 8 * s.gangs
    assert len(plan.measure_pods) == s.measure_pods
    assert asked > gpus, "some gangs must be refused"
    assert gpu_singles(singles) % 8 == 0 and asked == 8 * s.gangs + gpu_singles(singles)
    # every GPU taken, and every single pod without one bound
    assert plan.measured == gpus + singles - gpu_singles(singles) < s.measure_pods


def _pods(bound: dict[str, int], node: str = "n0") -> list[PodState]:
    """PodStates of gangs: name -> how many of its 8 pods are bound (on NODE)."""
    out = []
    for gang, n in bound.items():
        for i in range(8):
            labels = {ROLE_LABEL: ROLE_MEASURE, GANG_LABEL: gang}
            out.append(PodState("ns", f"{gang}-{i}", labels, node if i < n else ""))
    return out


def test_a_gang_bound_in_part_breaks_the_invariant_and_is_tallied() -> None:
    plan = WORKLOAD.plan(WORKLOAD.size("tiny"), "sched", "r", ["ns"])
    whole = _pods({"gang-0": 8, "gang-1": 0})
    assert no_gang_in_part(plan, whole) == []
    assert count_gangs(plan, whole) == {
        "gangs": 2,
        "whole": 1,
        "in_part": 0,
        "refused": 1,
        "pods_bound": 8,
        "gang_pods_bound": 8,
        "gpu_single_pods_bound": 0,
        "single_pods_bound": 0,
    }
    part = _pods({"gang-0": 8, "gang-1": 3})
    assert no_gang_in_part(plan, part) == ["1 gangs bound in part (e.g. ns/gang-1: 3/8 pods bound)"]
    assert plan.broken(part) == no_gang_in_part(plan, part)
    assert count_gangs(plan, part)["in_part"] == 1
    # a pod of no PodGroup of the plan is no gang's
    stray = [PodState("ns", "x", {ROLE_LABEL: ROLE_MEASURE, GANG_LABEL: "gang-9"}, "n0")]
    assert no_gang_in_part(plan, stray) == []


def test_more_gpu_pods_than_a_node_has_gpus_is_an_overcommit() -> None:
    plan = WORKLOAD.plan(WORKLOAD.size("tiny"), "sched", "r", ["ns"])
    node = "r-gpu-node-0"
    single = PodState("ns", "single-0", {ROLE_LABEL: ROLE_MEASURE}, node)  # one GPU
    nine = [*_pods({"gang-0": 8}, node), single]
    assert any(v.startswith("1 nodes overcommitted (e.g. r-gpu-node-0)") for v in plan.verify(nine))
    # GPU pods on the node without GPUs
    plain = _pods({"gang-0": 1}, "r-node-0")
    assert "1 nodes overcommitted (e.g. r-node-0)" in plan.verify(plain)
    assert not any("overcommitted" in v for v in plan.verify(_pods({"gang-0": 8}, node)))


def test_tiny_in_process_binds_gangs_whole_or_not_at_all() -> None:
    result = run_inprocess(WORKLOAD, "tiny")
    assert result["status"] == "ok", result
    assert result["bound"] == result["measured_pods"] == 40
    assert result["violations"] == []
    gangs = result["gangs"]
    assert (gangs["whole"], gangs["in_part"], gangs["refused"]) == (1, 0, 1)
    # the GPUs the refused gang did not get went to the 8 GPU singles
    assert (gangs["gang_pods_bound"], gangs["gpu_single_pods_bound"]) == (8, 8)
    assert gangs["single_pods_bound"] == 24
    doc = {"workloads": {NAME: {"inprocess": result}}}
    assert broken_runs(doc) == []
    assert gang_lines(doc["workloads"][NAME]) == [
        "in-process kubesched: gangs whole 1/2, in part 0, refused 1; pods bound 40"
    ]


def test_without_the_gates_a_gang_is_bound_in_part_and_the_run_is_void() -> None:
    # GangScheduling off: the pods of gang-1 take the 4 GPUs left one by one.
    result = run_inprocess(dataclasses.replace(WORKLOAD, feature_gates=""), "tiny")
    assert result["status"] == "error"
    assert result["reason"] == "1 gangs bound in part (e.g. bench-0/gang-1: 4/8 pods bound)"
    assert result["gangs"]["in_part"] == 1
    doc = {"workloads": {NAME: {"inprocess": result}}}
    assert broken_runs(doc) == [f"{NAME} in-process kubesched: {result['reason']}"]


def test_a_running_cluster_without_the_workload_api_is_na(tmp_path: Path) -> None:
    """--cluster-env naming a cluster started without KUBESCHED_WORKLOAD_API=1:
    no scheduler is started, both results say why."""
    env = tmp_path / "env"
    env.write_text(
        "\n".join(
            f"{k}={tmp_path / k.lower()}"
            for k in (
                "KUBECONFIG",
                "SCHEDULER_KUBECONFIG",
                "CA_CERT",
                "ADMIN_CERT",
                "ADMIN_KEY",
                "K8S_BIN_DIR",
            )
        )
        + "\nAPISERVER_URL=https://127.0.0.1:1\nWORKLOAD_API=\n"
    )
    doc, path = run_bench(
        [NAME],
        "tiny",
        modes=("e2e",),
        cluster_env=env,
        out_dir=tmp_path / "out",
        make_plot=False,
        show_table=False,
        quiet_wait=0,
        log=None,
    )
    for kind in SCHEDULERS:
        result = doc["workloads"][NAME]["e2e"][kind]
        assert result["status"] == "n/a", result
        assert result["missing"] == "Workload API"
        assert "KUBESCHED_WORKLOAD_API=1" in result["reason"]
    assert json.loads(path.read_text())["workloads"][NAME]["e2e"]["kubesched"]["status"] == "n/a"
