"""The bind probe: bind pending pods round-robin to nodes, with no scheduling.

    python -m bench.bind_probe --kubeconfig K --pods SELECTOR --nodes SELECTOR

Runs as a process of its own, as a scheduler would, and goes through
kubesched's own client stack exactly as `kubesched run` builds it
(kubesched.kube.runner.Runner.run): ``load_connection`` of the kubeconfig, one
``KubeClient``, the event and status writers at half the client QPS/burst each,
and ``KubeCluster.bind`` for every pod. All binds are started at once and the
client's adaptive in-flight limit (kubesched.kube.inflight) lets through as many
at a time as it lets a running scheduler, so the probe follows whatever `run` does.
No informer, no scheduling cycle, no event: what is left is the cost of the
bind requests on this control plane, the ceiling of any scheduler's end-to-end
throughput here (bench.drain).

``--watch`` and ``--events`` add the rest of the API work a scheduler cannot
skip, still without scheduling: the informer's list and watch of every live pod
(as `run` holds it, decoding each change into a Pod), and one Scheduled event per
bound pod through the EventWriter, as `run` records it. The gap between the two
ceilings is what that work costs the control plane and the scheduler's process
(bench.drain's "ceiling-events" mode).

Prints one JSON line: pods listed and bound, the bind errors, the seconds from
the first bind sent to the last answered, its own CPU seconds and peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from collections.abc import Sequence
from typing import Any

import msgspec


async def probe(
    kubeconfig: str,
    pod_selector: str,
    node_selector: str,
    qps: float,
    burst: int,
    *,
    with_events: bool = False,
    with_watch: bool = False,
) -> dict[str, Any]:
    # Imported here, not at the top: the harness imports bench.drain, which
    # names this module, without the kubesched under test on its path.
    from kubesched.api.objects import Node, Pod
    from kubesched.kube.client import KubeClient
    from kubesched.kube.cluster import KubeCluster
    from kubesched.kube.config import load_connection
    from kubesched.kube.informer import Handlers, Informer
    from kubesched.kube.informers import LIVE_PODS
    from kubesched.kube.writer import MAX_QUEUED_EVENTS, EventWriter, StatusWriter

    connection = await load_connection(kubeconfig)
    client = KubeClient(connection)
    # As Runner.run builds them: the writers are part of the stack even when idle.
    # With --events the queue holds an event for every pod: a scheduler's writer drops
    # what does not fit in client-go's 1,000 (binding faster than it writes events),
    # and the probe is to measure binds with each one's event written.
    most = (1 << 20) if with_events else MAX_QUEUED_EVENTS
    events = EventWriter(client, qps=qps / 2, burst=max(1, burst // 2), max_pending=most)
    statuses = StatusWriter(client, qps=qps / 2, burst=max(1, burst // 2))
    cluster = KubeCluster(client, events, statuses)
    background: list[asyncio.Task[None]] = []
    changes = 0

    def seen(*_: Pod) -> None:
        nonlocal changes
        changes += 1

    async def bind(pod: Pod, node: str) -> None:
        await cluster.bind(pod, node)
        if with_events:
            # As scheduler/binding_cycle.py records it (bindingCycle in schedule_one.go).
            cluster.record_event(
                pod, "Normal", "Scheduled", f"Successfully assigned {pod.key} to {node}"
            )

    try:
        if with_watch:
            informer = Informer(
                client,
                "/api/v1/pods",
                Pod,
                Handlers(seen, seen, seen),
                params={"fieldSelector": LIVE_PODS},
            )
            background.append(asyncio.create_task(informer.run()))
            await informer.synced.wait()
        if with_events:
            background.append(asyncio.create_task(events.run()))
        listed = await client.list(
            "/api/v1/pods", {"labelSelector": pod_selector, "fieldSelector": "spec.nodeName="}
        )
        pods = [msgspec.json.decode(raw, type=Pod) for raw in listed.items]
        node_list = await client.list("/api/v1/nodes", {"labelSelector": node_selector})
        nodes = sorted(msgspec.json.decode(raw, type=Node).metadata.name for raw in node_list.items)
        if not nodes:
            raise SystemExit(f"bind probe: no node matches {node_selector!r}")
        cpu_before = _cpu_seconds()
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *(bind(pod, nodes[i % len(nodes)]) for i, pod in enumerate(pods)),
            return_exceptions=True,
        )
        seconds = time.monotonic() - started
        # The events still queued or in flight when the last bind was answered,
        # written after it (a write that failed is never counted: 30 s at most).
        bound = sum(1 for o in outcomes if not isinstance(o, BaseException))
        give_up = time.monotonic() + 30.0
        while with_events and events.written + events.dropped < bound:
            if time.monotonic() > give_up:
                break
            await asyncio.sleep(0.05)
        # First bind sent -> last bind answered and (with --events) last event written.
        all_seconds = time.monotonic() - started
        cpu = _cpu_seconds() - cpu_before
    finally:
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        await client.aclose()
    errors = [f"{type(o).__name__}: {o}" for o in outcomes if isinstance(o, BaseException)]
    return {
        "pods": len(pods),
        "nodes": len(nodes),
        "bound": len(pods) - len(errors),
        "errors": len(errors),
        "first_errors": errors[:3],
        "bind_seconds": round(seconds, 3),
        "binds_per_second": round((len(pods) - len(errors)) / seconds, 1) if seconds > 0 else None,
        "bind_cpu_seconds": round(cpu, 2),
        # Where the adaptive in-flight limit ended (it starts at 64); None for a
        # kubesched under test (--kubesched-rev) from before the limit.
        "inflight_limit": getattr(getattr(client, "limiter", None), "limit", None),
        "peak_rss_mb": round(_peak_rss_kib() / 1024, 1),
        "watch": with_watch,
        "pod_changes_seen": changes if with_watch else None,
        "events": with_events,
        "events_written": events.written if with_events else None,
        "events_dropped": events.dropped if with_events else None,
        # pods bound with their event written, per second (the events trail the binds)
        "with_events_per_second": (
            round((len(pods) - len(errors)) / all_seconds, 1)
            if with_events and all_seconds > 0
            else None
        ),
    }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_kib() -> int:
    # ru_maxrss is in KiB on Linux: the VmHWM of this process.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bind_probe", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--pods", required=True, help="label selector of the pods to bind")
    parser.add_argument("--nodes", required=True, help="label selector of the nodes")
    parser.add_argument("--qps", type=float, default=5000.0, help="as the benchmark's config")
    parser.add_argument("--burst", type=int, default=5000)
    parser.add_argument("--events", action="store_true", help="a Scheduled event per bind")
    parser.add_argument("--watch", action="store_true", help="an informer on every live pod")
    args = parser.parse_args(argv)
    result = asyncio.run(
        probe(
            args.kubeconfig,
            args.pods,
            args.nodes,
            args.qps,
            args.burst,
            with_events=args.events,
            with_watch=args.watch,
        )
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
