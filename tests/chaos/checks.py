"""What `make chaos` and `make soak` check, as pure functions over API objects (the JSON
dicts of the apiserver's lists), so that the counting is unit-tested on made-up data
(tests/unit/test_chaos_checks.py) apart from the long runs that feed it.

* lost_pods: pending pods of our scheduler that the final cluster has room for;
* BindingLedger / scheduled_twice: pods bound twice (a binding that changed, or two
  `Scheduled` events for one pod UID);
* overcommitted_nodes: nodes whose bound pods request more than their allocatable;
* count_tracebacks: Python tracebacks in the scheduler's logs;
* slope: the least-squares growth of the soak's memory samples.

The resource arithmetic is written here again on purpose (a checker that shared the
scheduler's code would share its bugs); only the Quantity parser is kubesched's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.quantity import resource_amount

# The resources overcommit and fit are judged on (the pods count is one per pod).
CHECKED_RESOURCES = ("cpu", "memory", "pods")
TRACEBACK = "Traceback (most recent call last)"
ERROR_LINE = re.compile(r"^E\d{4} ", re.MULTILINE)

Amounts = dict[str, int]
Obj = Mapping[str, Any]


def _amounts(resources: Mapping[str, Any] | None) -> Amounts:
    return {name: resource_amount(name, q) for name, q in (resources or {}).items()}


def pod_requests(pod: Obj) -> Amounts:
    """cpu (milli), memory (bytes) and pods (1) a pod asks for: the containers' sum, at
    least the largest init container, plus the overhead (component-helpers PodRequests
    for pods without sidecars or pod-level resources, which these runs never make)."""
    spec = pod.get("spec", {})
    total: Amounts = {"cpu": 0, "memory": 0}
    for container in spec.get("containers", []):
        for name, amount in _amounts(container.get("resources", {}).get("requests")).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers", []):
        for name, amount in _amounts(container.get("resources", {}).get("requests")).items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in _amounts(spec.get("overhead")).items():
        total[name] = total.get(name, 0) + amount
    total["pods"] = 1
    return total


def allocatable(node: Obj) -> Amounts:
    return _amounts(node.get("status", {}).get("allocatable"))


def _live(pod: Obj) -> bool:
    """Holds resources: not finished. A pod being deleted still holds its node's room."""
    return pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def node_usage(pods: Iterable[Obj]) -> dict[str, Amounts]:
    """The requests of the live pods bound to each node."""
    usage: dict[str, Amounts] = {}
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if not node or not _live(pod):
            continue
        used = usage.setdefault(node, {})
        for name, amount in pod_requests(pod).items():
            used[name] = used.get(name, 0) + amount
    return usage


@dataclass(frozen=True)
class Overcommit:
    node: str
    resource: str
    requested: int
    allocatable: int


def overcommitted_nodes(pods: Iterable[Obj], nodes: Iterable[Obj]) -> list[Overcommit]:
    """Every (node, resource) of CHECKED_RESOURCES whose bound pods request more than
    the node's allocatable. A pod bound to a node that does not exist counts against an
    allocatable of 0."""
    usage = node_usage(pods)
    by_name = {n["metadata"]["name"]: allocatable(n) for n in nodes}
    out = []
    for node, used in sorted(usage.items()):
        room = by_name.get(node, {})
        for resource in CHECKED_RESOURCES:
            if used.get(resource, 0) > room.get(resource, 0):
                out.append(Overcommit(node, resource, used[resource], room.get(resource, 0)))
    return out


def _tolerates(pod: Obj, taint: Obj) -> bool:
    """Whether one of the pod's tolerations matches TAINT (ToleratesTaint, simplified:
    these runs use no tolerationSeconds and no numeric operators)."""
    for tol in pod.get("spec", {}).get("tolerations", []):
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if not tol.get("key"):
            if tol.get("operator") == "Exists":
                return True
            continue
        if tol["key"] != taint.get("key"):
            continue
        if tol.get("operator") == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _node_admits(pod: Obj, node: Obj) -> bool:
    """Everything but room: cordon, taints that keep pods off, the nodeSelector."""
    if node.get("spec", {}).get("unschedulable"):
        return False
    for taint in node.get("spec", {}).get("taints", []):
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(pod, taint):
            return False
    labels = node["metadata"].get("labels", {})
    selector = pod.get("spec", {}).get("nodeSelector", {})
    return all(labels.get(k) == v for k, v in selector.items())


def lost_pods(pods: Sequence[Obj], nodes: Sequence[Obj], scheduler_name: str) -> list[str]:
    """Pending pods of SCHEDULER_NAME (not bound, not being deleted, not gated) that the
    final cluster has room for: placed first-fit, in creation order, on the room the
    bound pods leave, each placed pod taking its room. First-fit never finds room that
    is not there, so every pod it places is one the scheduler should have bound (it may
    miss some a cleverer packing would place: the count is a lower bound)."""
    usage = node_usage(pods)
    room = {}
    for node in nodes:
        name = node["metadata"]["name"]
        used = usage.get(name, {})
        room[name] = {r: a - used.get(r, 0) for r, a in allocatable(node).items()}
    pending = [
        p
        for p in pods
        if p.get("spec", {}).get("schedulerName") == scheduler_name
        and not p.get("spec", {}).get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
        and not p.get("spec", {}).get("schedulingGates")
        and _live(p)
    ]
    pending.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), _key(p)))
    lost = []
    for pod in pending:
        wants = pod_requests(pod)
        for node in nodes:
            free = room[node["metadata"]["name"]]
            if _node_admits(pod, node) and all(free.get(r, 0) >= a for r, a in wants.items()):
                for r, a in wants.items():
                    free[r] -= a
                lost.append(_key(pod))
                break
    return lost


def _key(pod: Obj) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


@dataclass
class BindingLedger:
    """The node each pod UID was seen bound to, from a watch (and its relists) of the
    pods over the whole run; a UID seen on two different nodes was bound twice. The
    apiserver refuses to change a bound pod's spec.nodeName, so this is a guard
    against something moving a pod outside the binding subresource; the Scheduled
    events (scheduled_counts) are the sharp test of a second successful bind."""

    nodes: dict[str, str] = field(default_factory=dict)
    changed: dict[str, list[str]] = field(default_factory=dict)

    def observe(self, pod: Obj) -> None:
        uid = pod["metadata"].get("uid", "")
        node = pod.get("spec", {}).get("nodeName") or ""
        if not uid or not node:
            return
        before = self.nodes.setdefault(uid, node)
        if before != node:
            seen = self.changed.setdefault(uid, [before])
            if seen[-1] != node:
                seen.append(node)
            self.nodes[uid] = node


def scheduled_counts(events: Iterable[Obj]) -> Counter[str]:
    """How many `Scheduled` events each pod UID got (events.k8s.io/v1 items: an Event
    with a series counts series.count times)."""
    counts: Counter[str] = Counter()
    for event in events:
        if event.get("reason") != "Scheduled":
            continue
        regarding = event.get("regarding") or event.get("involvedObject") or {}
        uid = regarding.get("uid", "")
        if not uid:
            continue
        series = event.get("series") or {}
        counts[uid] += max(1, int(series.get("count", 1)))
    return counts


def scheduled_twice(events: Iterable[Obj], ledger: BindingLedger) -> set[str]:
    """The pod UIDs bound twice: two Scheduled events, or a binding that changed."""
    twice = {uid for uid, n in scheduled_counts(events).items() if n > 1}
    return twice | set(ledger.changed)


def count_tracebacks(logs: Iterable[str]) -> int:
    return sum(text.count(TRACEBACK) for text in logs)


def count_error_lines(logs: Iterable[str]) -> int:
    """Lines klog's text format writes at error level (E<mmdd> ...)."""
    return sum(len(ERROR_LINE.findall(text)) for text in logs)


def slope(samples: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of (time, value) samples (value units per time unit);
    0 for fewer than two distinct times."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (v - mean_v) for t, v in samples) / var


def table(rows: Sequence[tuple[str, object]]) -> str:
    """Two aligned columns, the figures right-aligned."""
    width = max(len(name) for name, _ in rows)
    values = [str(v) for _, v in rows]
    vwidth = max(len(v) for v in values)
    return "\n".join(
        f"  {name:<{width}}  {v:>{vwidth}}" for (name, _), v in zip(rows, values, strict=True)
    )
