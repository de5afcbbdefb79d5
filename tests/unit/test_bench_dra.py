"""The benchmark's DRA workload (bench/dra_workload.py): the objects it creates are
scheduler_perf's, its tiny size schedules in process with every claim allocated,
and its claim check catches what it should."""

from __future__ import annotations

import pytest

from bench.dra_workload import DRIVER, check_claims, claim_state
from bench.inprocess import run_inprocess
from bench.workloads import ROLE_MEASURE, WORKLOADS, ClaimState, PodState

NAME = "SchedulingWithResourceClaimTemplate"


def test_the_plan_creates_scheduler_perfs_objects() -> None:
    workload = WORKLOADS[NAME]
    plan = workload.plan(workload.size("tiny"), "sched", "r1", ["ns-init", "ns-test"])
    assert [n["metadata"]["name"] for n in plan.nodes] == ["r1-node-0", "r1-scheduler-perf-dra-0"]
    assert [o["kind"] for o in plan.objects] == [
        "DeviceClass",
        "ResourceSlice",
        "ResourceClaimTemplate",
        "ResourceClaimTemplate",
    ]
    device_class, slice_, init_template, test_template = plan.objects
    assert device_class["metadata"]["name"] == "r1-test-class"
    assert slice_["spec"]["nodeName"] == slice_["spec"]["pool"]["name"] == "r1-scheduler-perf-dra-0"
    devices = slice_["spec"]["devices"]
    assert [d["name"] for d in devices] == [f"instance-{i}" for i in range(10)]
    assert devices[3]["attributes"]["dra.example.com/numa"] == {"int": 3}
    assert devices[0]["capacity"] == {"memory": {"value": "1Gi"}}
    assert (init_template["metadata"]["namespace"], test_template["metadata"]["namespace"]) == (
        "ns-init",
        "ns-test",
    )
    request = test_template["spec"]["spec"]["devices"]["requests"]
    assert request == [{"name": "req-0", "exactly": {"deviceClassName": "r1-test-class"}}]
    assert plan.init_pods == [] and plan.measured == 10
    pod = plan.measure_pods[0]
    assert pod["metadata"]["namespace"] == "ns-test"
    assert pod["spec"]["resourceClaims"] == [
        {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
    ]
    assert workload.size("small").as_dict() == {
        "nodes": 100,
        "init_pods": 1000,
        "measure_pods": 1000,
        "unschedulable_pods": 0,
        "devices_per_node": 20,
    }


def test_tiny_schedules_in_process_with_every_claim_allocated() -> None:
    result = run_inprocess(WORKLOADS[NAME], "tiny")
    assert result["status"] == "ok", result
    assert result["bound"] == result["measured_pods"] == 10
    assert result["violations"] == []
    # The CPU this process spent on the measured phase, and the rate it gives.
    assert result["cpu_seconds"] > 0
    # (the rate is worked out before cpu_seconds is rounded to the millisecond)
    assert result["pods_per_cpu_second"] == pytest.approx(10 / result["cpu_seconds"], rel=0.1)


def _claim(owner: str, device: str, node: str = "n1", reserved: bool = True) -> ClaimState:
    return ClaimState(
        "ns",
        f"{owner}-resource-abcde",
        owner,
        [(DRIVER, node, device)],
        [owner] if reserved else [],
    )


def test_the_claim_check_finds_missing_claims_and_devices_taken_twice() -> None:
    pods = [
        PodState("ns", f"p{i}", {"bench.kubesched.io/role": ROLE_MEASURE}, "n1") for i in range(3)
    ]
    plan = WORKLOADS[NAME].plan(WORKLOADS[NAME].size("tiny"), "s", "r", ["a", "b"])
    good = [_claim("p0", "instance-0"), _claim("p1", "instance-1"), _claim("p2", "instance-2")]
    assert check_claims(plan, pods, good) == []
    problems = check_claims(
        plan, pods, [_claim("p0", "instance-0"), _claim("p1", "instance-0", reserved=False)]
    )
    assert problems == [
        "2 bound pods without a claim allocated on their node and reserved for them (e.g. ns/p1)",
        "1 devices allocated more than once (e.g. ('test-driver.cdi.k8s.io', 'n1', 'instance-0'))",
    ]
    # A claim on another node's pool is wrong too; and verify insists on the claims.
    assert check_claims(plan, pods[:1], [_claim("p0", "instance-0", node="n2")]) != []
    assert plan.verify([], None) == [
        "0/10 measured pods bound",
        "the ResourceClaims were not read back",
    ]


def test_claim_state_reads_a_listed_claim() -> None:
    listed = {
        "metadata": {
            "namespace": "ns",
            "name": "p-resource-x2b4c",
            "ownerReferences": [{"kind": "Pod", "name": "p", "controller": True, "uid": "u"}],
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"driver": DRIVER, "pool": "n1", "device": "instance-4", "request": "req-0"}
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}],
        },
    }
    assert claim_state(listed) == ClaimState(
        "ns", "p-resource-x2b4c", "p", [(DRIVER, "n1", "instance-4")], ["p"]
    )
    assert claim_state({"metadata": {"name": "c"}}).devices == []
