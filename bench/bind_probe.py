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
    kubeconfig: str, pod_selector: str, node_selector: str, qps: float, burst: int
) -> dict[str, Any]:
    # Imported here, not at the top: the harness imports bench.drain, which
    # names this module, without the kubesched under test on its path.
    from kubesched.api.objects import Node, Pod
    from kubesched.kube.client import KubeClient
    from kubesched.kube.cluster import KubeCluster
    from kubesched.kube.config import load_connection
    from kubesched.kube.writer import EventWriter, StatusWriter

    connection = await load_connection(kubeconfig)
    client = KubeClient(connection)
    # As Runner.run builds them: the writers are part of the stack even when idle.
    events = EventWriter(client, qps=qps / 2, burst=max(1, burst // 2))
    statuses = StatusWriter(client, qps=qps / 2, burst=max(1, burst // 2))
    cluster = KubeCluster(client, events, statuses)
    try:
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
            *(cluster.bind(pod, nodes[i % len(nodes)]) for i, pod in enumerate(pods)),
            return_exceptions=True,
        )
        seconds = time.monotonic() - started
        cpu = _cpu_seconds() - cpu_before
    finally:
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
    args = parser.parse_args(argv)
    result = asyncio.run(probe(args.kubeconfig, args.pods, args.nodes, args.qps, args.burst))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
