"""Capacity: how many more copies of a pod fit, as cluster-capacity answers it.

cluster-capacity (kubernetes-sigs/cluster-capacity) schedules copies of a pod
spec one after another, with the real scheduler, until one does not fit; the
answer is how many did, on which nodes, and the stop reason: the
FailedScheduling text of the first copy that did not fit (or the limit,
`--max-limit` there). Here the copies go through the same Scheduler that
`simulate` drives, one at a time, each placed before the next is made.

Several specs are placed in turn: one copy of each spec, round after round; a
spec stops at its first copy that does not fit (the cluster only fills up, so
a later copy could not fit either) or at its limit, the others go on.

Copies never preempt (preemptionPolicy Never): the count is what fits beside
the pods already there, not what fits by evicting them. The input's pending pods
are scheduled first, as `simulate` schedules them.

The results are typed records (msgspec Structs): what `kubesched capacity`
prints as text, JSON and YAML, and what an HTML report can render.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Sequence

import msgspec

from kubesched.api.objects import Pod
from kubesched.cluster.dra_manifests import create_pod_claims
from kubesched.framework.explain import ProfilePlugins
from kubesched.simulation.simulator import (
    Session,
    World,
    run_until_quiet,
    session_result,
    start_session,
)

LIMIT_REACHED = "LimitReached"
# cluster-capacity's text when --max-limit stops a run.
LIMIT_MESSAGE = "Maximum number of pods simulated: {limit}"


class _Record(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class StopReason(_Record):
    """Why no more copies were placed: the first copy's failure (its reason and
    FailedScheduling message), or LimitReached."""

    reason: str
    message: str


class SpecCapacity(_Record):
    """How many copies of one spec fit, and where."""

    name: str  # the spec's pod (namespace/name), the copies' model
    count: int
    nodes: dict[str, int]  # copies per node, for the nodes that got any
    stop_reason: StopReason


class CapacityResult(_Record):
    specs: list[SpecCapacity]
    profiles: list[ProfilePlugins] = []
    excluded_nodes: list[str] = []
    seed: int | None = None
    wall_seconds: float = 0.0


def copy_name(template: Pod, index: int) -> str:
    """`<name>-<index>`, as cluster-capacity names its copies (generateName's base
    for pods that have no name of their own)."""
    base = template.metadata.name or template.metadata.generate_name.rstrip("-")
    return f"{base}-{index}"


def make_copy(template: Pod, index: int, *, preemption_policy: str | None = "Never") -> Pod:
    """A pending copy of the template: its own name and UID, and PREEMPTION_POLICY
    (capacity's copies never preempt; None keeps the template's)."""
    meta = msgspec.structs.replace(
        template.metadata,
        name=copy_name(template, index),
        generate_name="",
        uid=_copy_uid(template, index),
        resource_version="",
    )
    policy = template.spec.preemption_policy if preemption_policy is None else preemption_policy
    spec = msgspec.structs.replace(template.spec, node_name="", preemption_policy=policy)
    status = msgspec.structs.replace(
        template.status, nominated_node_name="", resource_claim_statuses=[]
    )
    return msgspec.structs.replace(template, metadata=meta, spec=spec, status=status)


def _copy_uid(template: Pod, index: int) -> str:
    digest = hashlib.sha256(f"capacity/{template.key}/{index}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _claim_name(kind: str, namespace: str, base: str, taken: Callable[[str], bool]) -> str:
    """generateName for the copies' claims: deterministic, and free."""
    for attempt in range(1_000_000):
        digest = hashlib.sha256(f"{kind}/{namespace}/{base}/{attempt}".encode()).hexdigest()
        name = base + digest[:5]
        if not taken(name):
            return name
    raise RuntimeError(f"no free name for {base}")


def capacity(
    world: World,
    templates: Sequence[Pod],
    *,
    limit: int = 0,
    seed: int | None = None,
    percentage_of_nodes_to_score: int = 0,
) -> CapacityResult:
    """How many copies of each template fit in `world` (its pending pods placed
    first), placed in turn; `limit` > 0 caps each template's copies."""
    return asyncio.run(_capacity(world, templates, limit, seed, percentage_of_nodes_to_score))


async def _capacity(
    world: World, templates: Sequence[Pod], limit: int, seed: int | None, percentage: int
) -> CapacityResult:
    started = time.perf_counter()
    session = start_session(world, seed, percentage)
    await run_until_quiet(session.scheduler, session.clock)
    counts: list[dict[str, int]] = [{} for _ in templates]
    stops: list[StopReason | None] = [None] * len(templates)
    placed = [0] * len(templates)
    while any(stop is None for stop in stops):
        for i, template in enumerate(templates):
            if stops[i] is not None:
                continue
            if limit and placed[i] >= limit:
                stops[i] = StopReason(
                    reason=LIMIT_REACHED, message=LIMIT_MESSAGE.format(limit=limit)
                )
                continue
            node, stop = await _place(session, make_copy(template, placed[i] + 1))
            if node is None:
                stops[i] = stop
                continue
            placed[i] += 1
            counts[i][node] = counts[i].get(node, 0) + 1
    result = session_result(session, time.perf_counter() - started)
    return CapacityResult(
        specs=[
            SpecCapacity(
                name=template.key,
                count=placed[i],
                nodes=dict(sorted(counts[i].items())),
                stop_reason=stops[i] or StopReason(reason="", message=""),
            )
            for i, template in enumerate(templates)
        ],
        # The profiles that ran: those of the copies and of the input's pods.
        profiles=[
            p
            for p in result.profiles
            if p.profile in {t.spec.scheduler_name for t in templates}
            or p.profile in {pod.spec.scheduler_name for pod in result.pods.values()}
        ],
        seed=seed,
        wall_seconds=round(time.perf_counter() - started, 3),
    )


async def _place(session: Session, pod: Pod) -> tuple[str | None, StopReason | None]:
    """Add the copy and schedule until quiet: its node, or why it has none (the copy is
    then taken away again, as cluster-capacity stops at it)."""
    if pod.spec.resource_claims:
        # The resourceclaim controller makes the copy's claims from its templates.
        create_pod_claims(session.listers.dra, [pod], _claim_name)
    session.cluster.add_pod(pod)
    await run_until_quiet(session.scheduler, session.clock)
    key = pod.key
    now = session.cluster.pods.get(key)
    if now is not None and now.spec.node_name:
        return now.spec.node_name, None
    outcome = session.recorder.outcomes.get(key)
    if outcome is not None and outcome.message:
        stop = StopReason(reason=outcome.reason, message=outcome.message)
    else:
        qpi = session.scheduler.queue.unschedulable.get(key)
        gated = qpi is not None and qpi.gated
        stop = StopReason(
            reason="SchedulingGated" if gated else "NotScheduled",
            message="the copy is waiting for scheduling gates" if gated else "not scheduled",
        )
    session.cluster.remove_pod(key)
    return None, stop
