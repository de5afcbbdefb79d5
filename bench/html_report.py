"""The HTML report on a large cluster: how big the page is, how long it takes to
build, and how long Chromium takes to load and draw it.

    python -m bench.html_report --nodes 5000 --repeat 3

NODES nodes (bench.explain's: 5 zones, every 10th tainted, every 50th cordoned,
every 7th too small) and 20 Deployments of WORKLOAD_PODS replicas each (zone
spread), then one Deployment that fits nowhere; the page explains its default
number of pods (`simulate --html`'s --html-explain). Figures: the page's size;
the CPU seconds of building and rendering it (after the simulation, which is
measured apart); in headless Chromium (Debian's, through chromedriver), the time
from navigation to the load event, and the time to redraw the heat map for
another resource (a click on its tab), median of REPEAT loads.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.explain import cluster_documents
from bench.machine import CpuMeter, wait_quiet
from kubesched.cli.html import simulation_page, write_page
from kubesched.cli.workloads import explained_pods_of, node_zones
from kubesched.cluster.manifests import load_documents, pending_pods, running_pods
from kubesched.framework.profile import ProfileConfig
from kubesched.simulation.simulator import simulate
from tests.browser.chromium import start_browser

DEFAULT_EXPLAINED = 40  # simulate --html's --html-explain default
WORKLOADS = 20


def _deployment(name: str, replicas: int, cpu: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}
                    ],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": labels},
                        }
                    ],
                },
            },
        },
    }


def documents(nodes: int, replicas: int) -> list[tuple[str, int, object]]:
    docs = [d for d in cluster_documents(nodes, 0) if d[2]["kind"] == "Node"]  # type: ignore[index]
    for i in range(WORKLOADS):
        docs.append(("bench", len(docs) + 1, _deployment(f"app-{i:02d}", replicas, "500m")))
    docs.append(("bench", len(docs) + 1, _deployment("too-big", 50, "100")))
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--workload-pods", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quiet-wait", type=float, default=30.0)
    args = parser.parse_args()
    state = load_documents(documents(args.nodes, args.workload_pods))
    pending = pending_pods(state)
    pods = [*running_pods(state), *pending]
    explained = explained_pods_of(pending, DEFAULT_EXPLAINED)
    wait_quiet(max_wait=args.quiet_wait)
    meter = CpuMeter().start()
    started = time.process_time()
    result = simulate(
        state.nodes,
        pods,
        [ProfileConfig.default("default-scheduler")],
        seed=0,
        explain=explained,
    )
    simulated = time.process_time() - started
    builds: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        for _ in range(args.repeat):
            started = time.process_time()
            page = simulation_page(
                result,
                title="kubesched simulate",
                nodes=state.nodes,
                running=set(),
                zones=node_zones(state.nodes),
                dra=state.dra,
                explained=explained,
                seed=0,
            )
            write_page(page, path)
            builds.append(time.process_time() - started)
        size = path.stat().st_size
        loads: list[float] = []
        redraws: list[float] = []
        browser = start_browser()
        try:
            for _ in range(args.repeat):
                browser.get(path.as_uri())
                loads.append(
                    browser.execute_script(
                        "const t = performance.getEntriesByType('navigation')[0];"
                        "return t.loadEventEnd - t.startTime;"
                    )
                )
                cells = browser.execute_script(
                    "return document.querySelectorAll('#heat-zones .cell').length"
                )
                if cells != args.nodes:
                    raise SystemExit(f"the heat map has {cells} cells for {args.nodes} nodes")
                redraws.append(
                    browser.execute_script(
                        "const t = performance.now();"
                        "document.querySelector('#heat-resources [data-resource=memory]').click();"
                        "document.body.offsetHeight;"  # force the layout
                        "return performance.now() - t;"
                    )
                )
        finally:
            browser.quit()
    figures = meter.stop()
    print(
        f"HTML report, {args.nodes} nodes, {len(pods)} pods ({result.scheduled} scheduled), "
        f"{len(explained)} pods explained: {size / 1024:.0f} KiB; "
        f"simulation {simulated:.2f} CPU s; page built and rendered in "
        f"{statistics.median(builds):.3f} CPU s (median of {args.repeat}); Chromium: "
        f"loaded in {statistics.median(loads):.0f} ms, heat map redrawn in "
        f"{statistics.median(redraws):.0f} ms (medians); others took "
        f"{figures['foreign_share']:.0%} of the CPUs; {platform.processor() or platform.machine()}"
    )


if __name__ == "__main__":
    main()
