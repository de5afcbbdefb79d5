"""What `kubesched explain` costs beyond the simulation, on a large cluster.

    python -m bench.explain --nodes 5000 --pods 200 --repeat 3

A cluster of NODES nodes (mixed sizes, zones, a share tainted, cordoned or too
small) and PODS pending pods, then one that no node fits, is simulated twice per
repeat: plainly, and with the last two pods explained (every node's filter
verdict, the other filters' verdicts on the rejected nodes, every score plugin's
scores, grouped), the explanations rendered as text and JSON. The figure is the
median of the differences in CPU time: explain's cost beyond the simulation
itself; and, since that difference is within a shared machine's noise, explain's
own work measured directly (building the explanations in the scheduling cycle,
rendering them). By default every feasible node is scored (percentageOfNodesToScore 100),
explain's worst case. The text's line count shows it stays readable (nodes that
share a verdict are one row).
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import statistics
import time
from typing import Any

import msgspec
from rich.console import Console

from bench.machine import CpuMeter, wait_quiet
from kubesched.api.objects import Node, Pod
from kubesched.cli.explain_report import print_explanation
from kubesched.cluster.manifests import load_documents, pending_pods, running_pods
from kubesched.framework.explain import Explanation
from kubesched.framework.profile import ProfileConfig
from kubesched.scheduler import explain as explain_module
from kubesched.simulation.simulator import simulate


def cluster_documents(nodes: int, pods: int) -> list[tuple[str, int, object]]:
    """NODES nodes in 5 zones (every 10th tainted, every 50th cordoned, every 7th
    small) and PODS pending pods of one Deployment-like shape with spread."""
    docs: list[tuple[str, int, object]] = []
    for i in range(nodes):
        spec: dict[str, Any] = {}
        if i % 10 == 3:
            spec["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        if i % 50 == 7:
            spec["unschedulable"] = True
        cpu = "1" if i % 7 == 5 else str(8 * (1 + i % 3))
        docs.append(
            (
                "bench",
                len(docs) + 1,
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": f"node-{i:05d}",
                        "labels": {
                            "kubernetes.io/hostname": f"node-{i:05d}",
                            "topology.kubernetes.io/zone": f"zone-{i % 5}",
                        },
                    },
                    "spec": spec,
                    "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
                },
            )
        )
    for i in range(pods + 1):
        # The last pod asks for more cpu than any node has: every node rejects it.
        cpu = "100" if i == pods else "2"
        docs.append(
            (
                "bench",
                len(docs) + 1,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"web-{i:04d}",
                        "namespace": "default",
                        "labels": {"app": "web"},
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "nginx",
                                "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                            }
                        ],
                        "topologySpreadConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "topology.kubernetes.io/zone",
                                "whenUnsatisfiable": "ScheduleAnyway",
                                "labelSelector": {"matchLabels": {"app": "web"}},
                            }
                        ],
                    },
                },
            )
        )
    return docs


class BuildTimer:
    """CPU seconds spent building explanations (build_explanation, which the
    scheduling cycle calls for an explained attempt), accumulated."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.wrapped = explain_module.build_explanation

    def __call__(self, *args: Any, **kwargs: Any) -> Explanation:
        started = time.process_time()
        try:
            return self.wrapped(*args, **kwargs)
        finally:
            self.seconds += time.process_time() - started


def measure(
    nodes: list[Node], pods: list[Pod], explain: list[str], percentage: int
) -> tuple[float, float, str, str]:
    """CPU seconds of a simulation with the explanations rendered (CPU time, not wall
    time: on a shared machine the wall clock counts the others' work); of explain's
    own work in it (building and rendering the explanations); text; JSON."""
    profiles = [ProfileConfig.default("default-scheduler")]
    timer = BuildTimer()
    explain_module.build_explanation = timer
    started = time.process_time()
    try:
        result = simulate(
            nodes, pods, profiles, seed=0, explain=explain, percentage_of_nodes_to_score=percentage
        )
    finally:
        explain_module.build_explanation = timer.wrapped
    rendering = time.process_time()
    out = io.StringIO()
    documents = []
    for key in explain:
        explanation = result.explanations[key][-1]
        print_explanation(
            Console(file=out, width=160),
            explanation,
            final_node=result.placements.get(key),
            total_attempts=len(result.explanations[key]),
        )
        documents.append(msgspec.to_builtins(explanation))
    text, document = out.getvalue(), json.dumps(documents)
    ended = time.process_time()
    return ended - started, timer.seconds + ended - rendering, text, document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quiet-wait", type=float, default=30.0)
    parser.add_argument(
        "--percentage",
        type=int,
        default=100,
        help="percentageOfNodesToScore (100: every feasible node is scored and explained)",
    )
    args = parser.parse_args()
    state = load_documents(cluster_documents(args.nodes, args.pods))
    pods = [*running_pods(state), *pending_pods(state)]
    # The last schedulable pod and the one no node fits.
    targets = [pods[-2].key, pods[-1].key]
    differences: list[float] = []
    own: list[float] = []
    plain_runs: list[float] = []
    text = document = ""
    for _ in range(args.repeat):
        wait_quiet(max_wait=args.quiet_wait)
        meter = CpuMeter().start()
        plain, _, _, _ = measure(state.nodes, pods, [], args.percentage)
        explained, work, text, document = measure(state.nodes, pods, targets, args.percentage)
        own.append(work)
        figures = meter.stop()
        differences.append(explained - plain)
        plain_runs.append(plain)
        print(
            f"  simulate {plain:.2f} CPU s, with explain {explained:.2f} CPU s: "
            f"+{explained - plain:.2f}s, explain's own work {work:.3f} CPU s "
            f"(others took {figures['foreign_share']:.0%} of the CPUs)"
        )
    print(text)
    print(
        f"explain of 2 pods: its own work {statistics.median(own):.3f} CPU s median, "
        f"the whole run {statistics.median(differences):+.2f} CPU s beyond the simulation "
        f"({statistics.median(plain_runs):.2f} CPU s) — {args.nodes} nodes, "
        f"{args.pods + 1} pods, percentageOfNodesToScore {args.percentage}, "
        f"{len(text.splitlines())} lines of text, "
        f"{len(document) // 1024} KiB of JSON; {platform.processor() or platform.machine()}, "
        f"{platform.python_version()}"
    )


if __name__ == "__main__":
    main()
