"""The counting of `make chaos` and `make soak` (tests/chaos/checks.py) on made-up API
objects: each figure must see what it counts and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.checks import (
    BindingLedger,
    count_error_lines,
    count_tracebacks,
    lost_pods,
    overcommitted_nodes,
    pod_requests,
    scheduled_counts,
    scheduled_twice,
    slope,
    table,
)

SCHED = "kubesched"


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)}},
    }


def pod(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    node_name: str = "",
    created: str = "2026-01-01T00:00:00Z",
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": extra.pop("scheduler", SCHED),
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        **extra.pop("spec", {}),
    }
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": created}
    meta.update(extra.pop("meta", {}))
    return {"metadata": meta, "spec": spec, "status": extra.pop("status", {})}


# --------------------------------------------------------------------- requests
def test_requests_sum_containers_take_the_largest_init_container_and_add_overhead() -> None:
    p = pod("a", cpu="500m", memory="1Gi")
    p["spec"]["containers"].append({"name": "d", "resources": {"requests": {"cpu": "250m"}}})
    p["spec"]["initContainers"] = [
        {"name": "i", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}
    ]
    p["spec"]["overhead"] = {"cpu": "100m"}
    assert pod_requests(p) == {"cpu": 2100, "memory": 2**30, "pods": 1}


# --------------------------------------------------------------------- overcommit
def test_overcommit_per_node_and_resource() -> None:
    nodes = [node("n1", cpu="2"), node("n2", memory="2Gi"), node("n3", pods=2)]
    pods = [
        pod("a", cpu="1500m", node_name="n1"),
        pod("b", cpu="600m", node_name="n1"),  # n1: 2100m > 2
        pod("c", cpu="100m", memory="2Gi", node_name="n2"),  # exactly full: fine
        *(pod(f"d{i}", cpu="10m", memory="1Mi", node_name="n3") for i in range(3)),  # 3 > 2
    ]
    over = overcommitted_nodes(pods, nodes)
    assert [(o.node, o.resource, o.requested, o.allocatable) for o in over] == [
        ("n1", "cpu", 2100, 2000),
        ("n3", "pods", 3, 2),
    ]


def test_overcommit_ignores_finished_pods_and_counts_a_missing_node_as_empty() -> None:
    nodes = [node("n1", cpu="1")]
    pods = [
        pod("done", cpu="1", node_name="n1", status={"phase": "Succeeded"}),
        pod("running", cpu="1", node_name="n1"),
        pod("ghost", cpu="1", node_name="gone"),
    ]
    assert {(o.node, o.resource) for o in overcommitted_nodes(pods, nodes)} == {
        ("gone", "cpu"),
        ("gone", "memory"),
        ("gone", "pods"),
    }


# --------------------------------------------------------------------- lost
def test_a_pending_pod_that_fits_is_lost_one_that_does_not_is_not() -> None:
    nodes = [node("n1", cpu="2")]
    pods = [
        pod("bound", cpu="1", node_name="n1"),
        pod("fits", cpu="1"),
        pod("too-big", cpu="3"),
    ]
    assert lost_pods(pods, nodes, SCHED) == ["ns/fits"]


def test_lost_pods_take_the_room_they_would_use() -> None:
    # Room for one of the two: one is lost, the other has no room left.
    pods = [pod("x", cpu="1", created="2026-01-01T00:00:01Z"), pod("y", cpu="1")]
    assert lost_pods(pods, [node("n1", cpu="1")], SCHED) == ["ns/y"]


def test_lost_pods_respect_selectors_taints_cordons_gates_and_other_schedulers() -> None:
    nodes = [
        node("cordoned", unschedulable=True),
        node("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        node("plain", labels={"pool": "a"}),
    ]
    pods = [
        pod("wrong-pool", spec={"nodeSelector": {"pool": "b"}}),
        pod("gated", spec={"schedulingGates": [{"name": "g"}]}),
        pod("theirs", scheduler="someone-else"),
        pod("deleting", meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
    ]
    assert lost_pods(pods, nodes, SCHED) == []
    tolerant = pod(
        "tolerant",
        cpu="4",
        spec={"tolerations": [{"key": "k", "operator": "Equal", "value": "v"}]},
    )
    # 'plain' has room for 4 CPU too; fill it so only the tainted node is left.
    filler = pod("filler", cpu="4", node_name="plain")
    assert lost_pods([*pods, filler, tolerant], nodes, SCHED) == ["ns/tolerant"]


# --------------------------------------------------------------------- bound twice
def event(uid: str, reason: str = "Scheduled", count: int | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"reason": reason, "regarding": {"kind": "Pod", "uid": uid}}
    if count is not None:
        e["series"] = {"count": count, "lastObservedTime": "2026-01-01T00:00:00Z"}
    return e


def test_two_scheduled_events_or_a_series_of_two_for_one_uid_are_bound_twice() -> None:
    events = [
        event("a"),
        event("b"),
        event("b"),
        event("c", count=2),
        event("d", reason="FailedScheduling"),
        event("d", reason="FailedScheduling"),
        event("d"),
    ]
    assert scheduled_counts(events) == {"a": 1, "b": 2, "c": 2, "d": 1}
    assert scheduled_twice(events, BindingLedger()) == {"b", "c"}


def test_the_ledger_flags_a_binding_that_changed_only() -> None:
    ledger = BindingLedger()
    ledger.observe(pod("p"))  # not bound yet
    ledger.observe(pod("p", node_name="n1"))
    ledger.observe(pod("p", node_name="n1"))  # the same binding, seen again (a relist)
    ledger.observe(pod("q", node_name="n1"))
    assert ledger.changed == {}
    ledger.observe(pod("p", node_name="n2"))
    assert ledger.changed == {"uid-p": ["n1", "n2"]}
    assert scheduled_twice([event("uid-q")], ledger) == {"uid-p"}


# --------------------------------------------------------------------- logs, slope
def test_tracebacks_are_counted_across_logs() -> None:
    crash = "E boom\nTraceback (most recent call last):\n  File ...\nValueError: x\n"
    assert count_tracebacks([crash * 2, "I all fine\n", crash]) == 3
    assert count_tracebacks(["Traceback mentioned in a message\n"]) == 0


def test_error_lines_are_klogs_e_lines() -> None:
    log = (
        'I1126 10:00:00.000000   1 a.py:1] "fine"\n'
        'E1126 10:00:00.000000   1 a.py:2] "Error scheduling pod" err="boom"\n'
        'W1126 10:00:00.000000   1 a.py:3] "E1126 in a message"\n'
        'E1126 10:00:01.000000   1 a.py:4] "again"\n'
    )
    assert count_error_lines([log, log]) == 4


def test_slope_is_the_least_squares_growth() -> None:
    line = [(t, 100 + 0.5 * t) for t in range(0, 100, 10)]
    assert slope(line) == pytest.approx(0.5)
    noisy = [(0.0, 10.0), (10.0, 12.0), (20.0, 10.0), (30.0, 12.0)]
    assert slope(noisy) == pytest.approx(0.04)
    assert slope([(5.0, 1.0)]) == 0.0
    assert slope([(5.0, 1.0), (5.0, 9.0)]) == 0.0


def test_table_aligns_names_and_right_aligns_figures() -> None:
    assert table([("pods lost", 0), ("wall time (s)", "123")]).splitlines() == [
        "  pods lost        0",
        "  wall time (s)  123",
    ]
