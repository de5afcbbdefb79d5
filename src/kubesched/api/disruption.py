"""PodDisruptionBudgets: which pods a budget covers, and how many it lets go.

`selector_matches` is apimachinery's LabelSelectorAsSelector(...).Matches with
the scheduler's reading of it (filterPodsWithPDBViolation): a nil selector, an
empty one and one that does not parse all match nothing.

`compute_status` is what the disruption controller writes into a budget's
status (DisruptionController.trySync), for budgets read from manifests, which
carry no status: the simulator has no controller running.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from kubesched.api.labels import selects
from kubesched.api.objects import (
    LabelSelector,
    Pod,
    PodDisruptionBudget,
    PodDisruptionBudgetStatus,
)

_PERCENT = re.compile(r"(-?[0-9]+)%")


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether a budget's selector covers a pod with `labels`, as the scheduler reads
    it (filterPodsWithPDBViolation): nil, empty or invalid selectors match nothing."""
    if selector is None or not (selector.match_labels or selector.match_expressions):
        return False
    return selects(selector, labels)


def controller_selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """The disruption controller's reading (a pod lister with the selector): nil and
    invalid select nothing, an empty selector selects every pod of the namespace."""
    return selects(selector, labels)


def scaled_value(value: int | str, total: int, round_up: bool) -> int | None:
    """intstr.GetScaledValueFromIntOrPercent; None where it returns an error."""
    if isinstance(value, int):
        return value
    found = _PERCENT.fullmatch(value)
    if found is None:
        return None
    percent = int(found.group(1))
    scaled = percent * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def _is_ready(pod: Pod) -> bool:
    """IsPodReady, for pods described in manifests: a pod bound to a node counts as
    ready unless a Ready condition says otherwise; a pending pod is not ready."""
    if not pod.spec.node_name or pod.status.phase in ("Succeeded", "Failed"):
        return False
    for condition in pod.status.conditions:
        if condition.type == "Ready":
            return condition.status == "True"
    return True


def _controller_uid(pod: Pod) -> str | None:
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref.uid or f"{ref.kind}/{ref.name}"
    return None


def compute_status(pdb: PodDisruptionBudget, pods: Iterable[Pod]) -> PodDisruptionBudgetStatus:
    """The status the disruption controller would write, from the pods it selects.

    A controller's scale is taken as the number of its pods that are present (the
    loader creates exactly `replicas` pods per workload). Pods without a
    controller do not count towards a percentage or maxUnavailable, as upstream.
    A budget the controller could not compute keeps disruptionsAllowed 0."""
    namespace = pdb.metadata.namespace
    selected = [
        p
        for p in pods
        if p.metadata.namespace == namespace
        and controller_selects(pdb.spec.selector, p.metadata.labels)
    ]
    spec = pdb.spec
    expected = desired = 0
    if spec.max_unavailable is not None or isinstance(spec.min_available, str):
        scale: dict[str, int] = {}
        for pod in selected:
            uid = _controller_uid(pod)
            if uid is not None:
                scale[uid] = scale.get(uid, 0) + 1
        expected = sum(scale.values())
        if spec.max_unavailable is not None:
            unavailable = scaled_value(spec.max_unavailable, expected, True)
            if unavailable is None:
                return PodDisruptionBudgetStatus()
            desired = max(expected - unavailable, 0)
        else:
            assert spec.min_available is not None
            available = scaled_value(spec.min_available, expected, True)
            if available is None:
                return PodDisruptionBudgetStatus()
            desired = available
    elif spec.min_available is not None:
        desired = spec.min_available
        expected = len(selected)
    healthy = sum(1 for p in selected if p.metadata.deletion_timestamp is None and _is_ready(p))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return PodDisruptionBudgetStatus(
        disruptions_allowed=allowed,
        current_healthy=healthy,
        desired_healthy=desired,
        expected_pods=expected,
    )
