"""The scheduling cycle's diagnosis (scheduler/schedule_one.py, findNodesThatFitPod
upstream): which plugins a failed attempt names as its rejectors, which decides the
events that retry it (the queue's hints) and whether it waits for one at all."""

from __future__ import annotations

import asyncio
from typing import Any

from kubesched.framework.clock import SimClock
from kubesched.framework.profile import ProfileConfig
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod


def _on_node(*names: str) -> dict[str, Any]:
    """Required node affinity on metadata.name: NodeAffinity's PreFilter narrows the
    nodes to NAMES (PreFilterResult), whether they exist or not."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(names)}]}
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    }


def _attempt(pod: Any, *nodes: Any) -> tuple[Scheduler, InMemoryCluster, SimClock]:
    clock = SimClock()
    cluster = InMemoryCluster(nodes={n.metadata.name: n for n in nodes})
    cluster.pods[pod.key] = pod
    sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=1)
    cluster.watch(sched)
    asyncio.run(run_until_quiet(sched, clock))
    return sched, cluster, clock


def test_a_prefilter_that_named_only_missing_nodes_is_the_rejector() -> None:
    """differential seed904-007 (p03, matchFields metadata.name In [n-missing]):
    upstream's RunPreFilterPlugins returns the plugins that narrowed the nodes
    (pluginsWithNodes) and findNodesThatFitPod starts the diagnosis's
    UnschedulablePlugins with them, so the pod waits in the unschedulable pool
    for a NodeAffinity event. Without a rejector the attempt counts as an error
    and is retried on the error backoff: kubesched ran it again, kube-scheduler not."""
    pod = make_pod("p03", cpu="100m", spec=_on_node("n-missing"))
    sched, _, _ = _attempt(pod, make_node("n0", cpu="4"))
    qpi = sched.queue.unschedulable.get(pod.key)
    assert qpi is not None, "not waiting in the unschedulable pool"
    assert qpi.unschedulable_plugins == {"NodeAffinity"}
    assert (qpi.unschedulable_count, qpi.consecutive_errors_count, qpi.attempts) == (1, 0, 1)


def test_the_narrowing_plugins_join_the_filters_rejectors() -> None:
    """A PreFilter result naming an existing node that a filter then rejects:
    upstream's rejectors are the narrowing plugin and the filter's."""
    pod = make_pod("big", cpu="8", spec=_on_node("n0"))
    sched, _, _ = _attempt(pod, make_node("n0", cpu="4"), make_node("n1", cpu="16"))
    qpi = sched.queue.unschedulable.get(pod.key)
    assert qpi is not None
    assert qpi.unschedulable_plugins == {"NodeAffinity", "NodeResourcesFit"}
