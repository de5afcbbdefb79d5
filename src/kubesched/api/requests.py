"""Pod resource requests by the upstream rules (component-helpers resource.PodRequests).

- regular containers are summed;
- sidecars (init containers with restartPolicy Always) run beside them, so they
  add to the sum, and stay running while later init containers run;
- each regular init container runs alone (beside the sidecars started before
  it), so the pod needs the max of that and the running sum;
- pod-level `spec.resources` replaces the container sum for cpu and memory;
- `spec.overhead` is added last.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

from kubesched.api.objects import Container, Pod, ResourceList
from kubesched.api.quantity import MAX_AMOUNT, resource_amount

# Requests assumed for scoring when a container states none
# (pkg/scheduler/util.DefaultMilliCPURequest and DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

# Resources that pod-level `spec.resources` may set (IsSupportedPodLevelResource).
_POD_LEVEL = ("cpu", "memory")

Amounts = dict[str, int]


# The same few quantities come back pod after pod: parse each (name, text) once.
# typed: 1 and 1.0 and True are different inputs (True is refused).
_amount = lru_cache(maxsize=4096, typed=True)(resource_amount)


def amounts(resources: ResourceList) -> Amounts:
    """Integer amounts of a ResourceList: milli-CPU for cpu, units for the rest."""
    return {name: _amount(name, quantity) for name, quantity in resources.items()}


def container_requests(container: Container) -> Amounts:
    """Requests of one container, with limits standing in for missing requests
    as the apiserver's defaulting does."""
    res = container.resources
    merged = amounts(res.limits) if res.limits else {}
    if res.requests:
        merged.update(amounts(res.requests))
    return merged


def _add(into: Amounts, more: Mapping[str, int]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, 0) + amount


def _max(into: Amounts, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def _combine(
    containers: Iterable[Amounts], init_containers: Iterable[tuple[bool, Amounts]]
) -> Amounts:
    total: Amounts = {}
    for reqs in containers:
        _add(total, reqs)
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for is_sidecar, reqs in init_containers:
        if is_sidecar:
            _add(total, reqs)
            _add(sidecars, reqs)
            running = dict(sidecars)
        else:
            running = dict(reqs)
            _add(running, sidecars)
        _max(init_peak, running)
    _max(total, init_peak)
    return total


def _is_sidecar(container: Container) -> bool:
    return container.restart_policy == "Always"


def _pod_level(pod: Pod) -> Amounts:
    if pod.spec.resources is None:
        return {}
    level = {n: q for n, q in pod.spec.resources.requests.items() if n in _POD_LEVEL}
    # Defaulting sets pod-level requests from pod-level limits when absent.
    for name, quantity in pod.spec.resources.limits.items():
        if name in _POD_LEVEL and name not in level:
            level[name] = quantity
    return amounts(level)


# Each container's requests (container_requests), regular ones then init ones with
# whether each is a sidecar: what pod_requests and non_zero_requests start from.
_Parsed = tuple[list[Amounts], list[tuple[bool, Amounts]]]


def _parse(pod: Pod) -> _Parsed:
    return (
        [container_requests(c) for c in pod.spec.containers],
        [(_is_sidecar(c), container_requests(c)) for c in pod.spec.init_containers],
    )


def pod_requests(pod: Pod, parsed: _Parsed | None = None) -> Amounts:
    """What a pod takes from its node: the amounts NodeResourcesFit checks.
    `parsed`: the pod's containers as _parse gives them, if already at hand."""
    containers, init_containers = parsed or _parse(pod)
    total = _combine(containers, init_containers)
    total.update(_pod_level(pod))
    if pod.spec.overhead:
        _add(total, amounts(pod.spec.overhead))
    # Each amount fits int64 but their sum may not: it saturates there (upstream's
    # int64 sum would wrap), since the node table holds int64.
    return {name: min(amount, MAX_AMOUNT) for name, amount in total.items() if amount}


def _with_defaults(reqs: Amounts) -> Amounts:
    out = dict(reqs)
    out.setdefault("cpu", DEFAULT_MILLI_CPU_REQUEST)
    out.setdefault("memory", DEFAULT_MEMORY_REQUEST)
    return out


def non_zero_requests(
    pod: Pod, pod_level: bool = True, parsed: _Parsed | None = None
) -> tuple[int, int]:
    """(milli-CPU, memory bytes) for scoring: a container that states no cpu or
    memory request counts as 100m / 200Mi, so that empty pods still spread.
    kube-scheduler v1.36's NodeResourcesFit scorer builds its resource scorer
    without the PodLevelResources gate, so it asks for `pod_level=False`."""
    containers, init_containers = parsed or _parse(pod)
    total = _combine(
        (_with_defaults(reqs) for reqs in containers),
        ((sidecar, _with_defaults(reqs)) for sidecar, reqs in init_containers),
    )
    if pod_level:
        total.update(_pod_level(pod))
    if pod.spec.overhead:
        _add(total, amounts(pod.spec.overhead))
    return min(total.get("cpu", 0), MAX_AMOUNT), min(total.get("memory", 0), MAX_AMOUNT)


def requests_and_non_zero(pod: Pod) -> tuple[Amounts, tuple[int, int]]:
    """pod_requests and non_zero_requests of the pod, its containers parsed once
    (what PodInfo works out for every pod that comes in)."""
    parsed = _parse(pod)
    return pod_requests(pod, parsed), non_zero_requests(pod, parsed=parsed)
