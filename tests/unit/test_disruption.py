"""PodDisruptionBudgets: selectors as the scheduler reads them, the status the
disruption controller would compute, and loading them from manifests."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.disruption import compute_status, scaled_value, selector_matches
from kubesched.api.objects import LabelSelector, Pod, PodDisruptionBudget
from kubesched.cluster.manifests import load_documents


def budget(spec: dict[str, Any], namespace: str = "default") -> PodDisruptionBudget:
    return msgspec.convert(
        {"metadata": {"name": "b", "namespace": namespace}, "spec": spec}, PodDisruptionBudget
    )


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    node: str = "n",
    owner: str = "",
    ready: str | None = None,
    namespace: str = "default",
) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {"app": "a"}}
    if owner:
        meta["ownerReferences"] = [
            {"kind": "ReplicaSet", "name": owner, "uid": f"uid-{owner}", "controller": True}
        ]
    status: dict[str, Any] = {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return msgspec.convert({"metadata": meta, "spec": {"nodeName": node}, "status": status}, Pod)


def selector(raw: dict[str, Any]) -> LabelSelector:
    return msgspec.convert(raw, LabelSelector)


def test_selector_matching() -> None:
    labels = {"app": "a", "tier": "db"}
    assert selector_matches(selector({"matchLabels": {"app": "a"}}), labels)
    assert not selector_matches(selector({"matchLabels": {"app": "b"}}), labels)
    expr = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db", "x"]}]}
    assert selector_matches(selector(expr), labels)
    expr = {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}
    assert not selector_matches(selector(expr), labels)
    expr = {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}
    assert selector_matches(selector(expr), labels)
    # nil, empty and invalid selectors match nothing
    assert not selector_matches(None, labels)
    assert not selector_matches(selector({}), labels)
    expr = {"matchExpressions": [{"key": "tier", "operator": "In", "values": []}]}
    assert not selector_matches(selector(expr), labels)
    expr = {"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["db"]}]}
    assert not selector_matches(selector(expr), labels)
    expr = {"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]}
    assert not selector_matches(selector(expr), labels)


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [(3, 10, 3), ("50%", 5, 3), ("10%", 5, 1), ("0%", 5, 0), ("100%", 4, 4), ("5", 4, None)],
)
def test_scaled_value(value: int | str, total: int, expected: int | None) -> None:
    assert scaled_value(value, total, True) == expected


def test_min_available_integer() -> None:
    pods = [pod("a"), pod("b"), pod("c", ready="False"), pod("d", node="")]
    pods.append(pod("e", labels={"app": "other"}))
    pods.append(pod("f", namespace="elsewhere"))
    status = compute_status(
        budget({"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}), pods
    )
    # healthy: a and b (c is not ready, d is pending); expected: the 4 selected pods
    assert (status.current_healthy, status.desired_healthy, status.expected_pods) == (2, 1, 4)
    assert status.disruptions_allowed == 1


def test_percentages_count_pods_with_a_controller() -> None:
    pods = [pod("a", owner="rs"), pod("b", owner="rs"), pod("c", owner="rs"), pod("bare")]
    spec = {"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}}
    status = compute_status(budget(spec), pods)
    assert (status.expected_pods, status.desired_healthy, status.current_healthy) == (3, 2, 4)
    assert status.disruptions_allowed == 2
    spec = {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "a"}}}
    status = compute_status(budget(spec), pods)
    assert (status.expected_pods, status.desired_healthy, status.disruptions_allowed) == (3, 2, 2)
    # The unmanaged pod is not expected, but it is healthy: one disruption to spare.
    spec = {"maxUnavailable": "0%", "selector": {"matchLabels": {"app": "a"}}}
    assert compute_status(budget(spec), pods).disruptions_allowed == 1
    assert compute_status(budget(spec), pods[:3]).disruptions_allowed == 0


def test_no_matching_pods_allows_nothing() -> None:
    spec = {"maxUnavailable": 5, "selector": {"matchLabels": {"app": "none"}}}
    assert compute_status(budget(spec), [pod("a")]).disruptions_allowed == 0
    # The controller reads an empty selector as "every pod of the namespace".
    status = compute_status(budget({"minAvailable": 0, "selector": {}}), [pod("a"), pod("b")])
    assert status.disruptions_allowed == 2


def test_loader_reads_budgets_and_fills_in_their_status() -> None:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a", "labels": {"app": "a"}},
            "spec": {"nodeName": "n", "containers": [{"name": "c"}]},
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "computed"},
            "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "a"}}},
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "given", "namespace": "x"},
            "spec": {"minAvailable": 5},
            "status": {"disruptionsAllowed": 7},
        },
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {}, "spec": {}},
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "computed"},
            "spec": {},
        },
    ]
    state = load_documents([("test", i + 1, d) for i, d in enumerate(docs)])
    by_name = {p.metadata.name: p for p in state.pdbs}
    assert set(by_name) == {"computed", "given"}
    computed, given = by_name["computed"], by_name["given"]
    assert computed.metadata.namespace == "default" and computed.metadata.uid
    assert computed.status is not None and computed.status.disruptions_allowed == 1
    assert given.status is not None and given.status.disruptions_allowed == 7
    assert [(p.document, p.field) for p in state.problems] == [
        (4, "metadata.name"),
        (5, "metadata.name"),
    ]
    assert "duplicate" in state.problems[1].message
