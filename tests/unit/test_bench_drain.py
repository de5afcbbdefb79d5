"""The benchmark's sizes at upstream's scale, the backlog drain's and the bind
ceiling's figures, the median of repeats with its spread, and the tables' share
of the ceiling (bench/run.py, bench/drain.py, bench/report.py). The modes
themselves run against a control plane in tests/integration/test_bench_smoke.py."""

from __future__ import annotations

import io
from typing import Any, cast

import pytest
from rich.console import Console

from bench.cluster import Bindings
from bench.drain import drain_figures
from bench.medians import median_run
from bench.report import ceiling_events_lines, markdown_table, of_ceiling, print_table, ratios
from bench.run import ceiling_shape, default_repeat, run_bench, workloads_of_size
from bench.schedulers import KUBE_SCHEDULER, KUBESCHED
from bench.workloads import WORKLOADS, Size

# scheduler_perf v1.36.3's performance-config.yaml cases that size "5000" follows:
# (nodes, init pods, measured pods).
UPSTREAM_5000 = {
    "SchedulingBasic": (5000, 1000, 10000),  # misc: SchedulingBasic 5000Nodes_10000Pods
    "SchedulingNodeAffinity": (5000, 5000, 10000),  # affinity: 5000Nodes_10000Pods
    "TopologySpreading": (5000, 5000, 5000),  # topology_spreading: 5000Nodes_5000Pods
    "SchedulingPodAntiAffinity": (5000, 1000, 2000),  # affinity: 5000Nodes_2000Pods
    # misc: its 5000Nodes case is commented out upstream ("always seems to fail");
    # 1000Nodes is the largest that runs.
    "PreemptionBasic": (1000, 4000, 1000),
    "Unschedulable": (5000, 100, 10000),  # misc: 5kNodes/100Init/10kPods
    "MixedChurn": (5000, 0, 10000),  # misc: SchedulingWithMixedChurn 5000Nodes_10000Pods
    # dra: no 5000-node case; 5000pods_500nodes' 10 devices per node on 5,000 nodes.
    "SchedulingWithResourceClaimTemplate": (5000, 5000, 10000),
    # no gang case upstream; 800 nodes with 8 GPUs and 4,200 without, 10,000 measured.
    "GangScheduling": (800, 0, 10000),
}


def test_size_5000_has_upstreams_counts_for_every_workload() -> None:
    assert set(UPSTREAM_5000) == set(WORKLOADS)
    for name, (nodes, init, measured) in UPSTREAM_5000.items():
        size = WORKLOADS[name].size("5000")
        assert (size.nodes, size.init_pods, size.measure_pods) == (nodes, init, measured), name
    assert WORKLOADS["SchedulingWithResourceClaimTemplate"].size("5000").devices_per_node == 10


def test_size_15000_is_schedulingbasic_alone() -> None:
    assert WORKLOADS["SchedulingBasic"].size("15000") == Size(15000, 0, 30000)
    having, missing = workloads_of_size(list(WORKLOADS), "15000")
    assert having == ["SchedulingBasic"]
    assert set(missing) == set(WORKLOADS) - {"SchedulingBasic"}
    with pytest.raises(ValueError, match="unknown size '15000'"):
        WORKLOADS["TopologySpreading"].size("15000")
    with pytest.raises(ValueError, match="unknown size '15000'"):
        run_bench(["TopologySpreading"], "15000", modes=(), log=None)


def test_upstream_sizes_repeat_three_times_by_default() -> None:
    assert default_repeat("5000") == default_repeat("15000") == 3
    assert default_repeat("small") == default_repeat("500") == 1
    with pytest.raises(ValueError, match="--repeat 0"):
        run_bench(["SchedulingBasic"], "tiny", modes=(), repeat=0, log=None)


def test_the_ceiling_has_the_workloads_nodes_and_measured_pods() -> None:
    assert ceiling_shape(WORKLOADS["SchedulingBasic"], "5000") == (5000, 10000)
    # the unschedulable pods never bind: not counted
    assert ceiling_shape(WORKLOADS["Unschedulable"], "5000") == (5000, 10000)
    # nodes without devices count as nodes
    assert ceiling_shape(WORKLOADS["SchedulingWithResourceClaimTemplate"], "tiny") == (2, 10)


def _bindings(times: dict[str, float]) -> Bindings:
    bindings = Bindings(cast(Any, None), "run=x", len(times))
    bindings.bound = dict(times)
    return bindings


def test_drain_rate_counts_the_intervals_between_the_first_and_last_bind() -> None:
    figures = drain_figures(_bindings({"a": 10.0, "b": 10.5, "c": 11.0}), spawned=8.0)
    assert figures["bound"] == 3
    assert figures["seconds"] == 1.0
    assert figures["pods_per_second"] == 2.0  # 2 intervals in 1 s, start-up left out
    assert figures["startup_seconds"] == 2.0
    assert figures["total_seconds"] == 3.0
    assert figures["start_to_bound_ms"] == {"p50": 2500.0, "p90": 3000.0, "p99": 3000.0}
    assert figures["bound_per_second"] == [0, 0, 2, 1]


def test_drain_rate_of_one_pod_is_unknown_not_infinite() -> None:
    figures = drain_figures(_bindings({"a": 5.0}), spawned=4.0)
    assert figures["pods_per_second"] is None
    assert figures["startup_seconds"] == 1.0


def _run(rate: float, cpu: float, status: str = "ok") -> dict[str, Any]:
    return {
        "status": status,
        "pods_per_second": rate,
        "scheduler_cpu_seconds": cpu,
        "create_to_bound_ms": {"p50": rate * 10, "p99": rate * 20},
    }


def test_median_of_repeats_keeps_the_spread_of_the_successful_ones() -> None:
    chosen = median_run([_run(10, 1.0), _run(30, 3.0), _run(5, 9.0, "timeout"), _run(20, 2.5)])
    assert chosen["pods_per_second"] == 20
    assert chosen["scheduler_cpu_seconds"] == 2.5
    assert chosen["spread"]["pods_per_second"] == {"min": 10, "median": 20, "max": 30}
    assert chosen["spread"]["scheduler_cpu_seconds"] == {"min": 1.0, "median": 2.5, "max": 3.0}
    assert chosen["spread"]["create_to_bound_ms.p99"] == {"min": 200, "median": 400, "max": 600}
    assert [r["status"] for r in chosen["repeats"]] == ["ok", "ok", "timeout", "ok"]
    assert "spread" not in median_run([_run(10, 1.0)])


def _entry() -> dict[str, Any]:
    return {
        "params": {"nodes": 500, "init_pods": 500, "measure_pods": 1000},
        "ceiling": {"status": "ok", "pods_per_second": 2000.0},
        "e2e": {
            KUBE_SCHEDULER: {"status": "ok", "pods_per_second": 500.0},
            KUBESCHED: {"status": "ok", "pods_per_second": 800.0},
        },
        "backlog": {
            KUBE_SCHEDULER: {"status": "ok", "pods_per_second": 1000.0, "scheduler_cpu_seconds": 4},
            KUBESCHED: {"status": "timeout", "pods_per_second": 1900.0},
        },
    }


def test_share_of_the_ceiling_per_scheduler_and_mode() -> None:
    entry = _entry()
    assert of_ceiling(entry) == {
        "e2e": {KUBE_SCHEDULER: 25.0, KUBESCHED: 40.0},
        # a run that did not finish has no share
        "backlog": {KUBE_SCHEDULER: 50.0, KUBESCHED: None},
    }
    assert ratios(entry)["backlog_pods_per_second"] is None
    entry["ceiling"]["status"] = "error"
    assert of_ceiling(entry)["e2e"] == {KUBE_SCHEDULER: None, KUBESCHED: None}


def test_the_table_shows_the_ceiling_and_the_shares() -> None:
    entry = _entry()
    entry["ratios"] = ratios(entry)
    doc = {
        "kubernetes_version": "v1.36.3",
        "size": "500",
        "machine": {"nproc": 2},
        "repeat": 3,
        "workloads": {"SchedulingBasic": entry},
    }
    out = io.StringIO()
    print_table(doc, Console(file=out, width=250))
    text = out.getvalue()
    assert "median of 3" in text
    assert "2,000" in text  # the ceiling
    assert "500 / 800" in text and "25% / 40%" in text
    assert "1,000 / timeout" in text and "50% / —" in text
    assert "1.60×" in text


def test_the_markdown_table_has_the_published_layout() -> None:
    entry = _entry()
    entry["ratios"] = ratios(entry)
    entry["e2e"][KUBESCHED]["spread"] = {"pods_per_second": {"min": 700, "median": 800, "max": 900}}
    header, rule, row = markdown_table({"workloads": {"SchedulingBasic": entry}}).splitlines()
    assert header.count("|") == rule.count("|") == row.count("|") == 13
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:9] == [
        "SchedulingBasic",
        "500 / 500 / 1000",
        "2,000",
        "500 / 800 (700–900)",
        "1.60×",
        "25% / 40%",
        "1,000 / timeout",
        "—",
        "50% / —",
    ]


def test_the_ceiling_with_events_is_reported_with_each_schedulers_share() -> None:
    entry: dict[str, Any] = {
        "ceiling_events": {
            "status": "ok",
            "pods_per_second": 400.0,
            "probe": {
                "events_written": 10000,
                "events_dropped": 0,
                "with_events_per_second": 350.0,
            },
        },
        "backlog": {
            KUBE_SCHEDULER: {"status": "ok", "pods_per_second": 100.0},
            KUBESCHED: {"status": "ok", "pods_per_second": 300.0},
        },
    }
    (line,) = ceiling_events_lines(entry)
    assert line == (
        "bind ceiling with events and a pod watch: 400 pods/s (10000 events written, "
        "0 dropped; bound with their events written: 350.0 pods/s); "
        f"of it: backlog {KUBE_SCHEDULER} 25%, backlog {KUBESCHED} 75%"
    )
    entry["ceiling_events"] = {"status": "timeout"}
    assert ceiling_events_lines(entry) == ["bind ceiling with events and a pod watch: timeout"]
    assert ceiling_events_lines({}) == []


def test_waiting_for_bindings_ends_when_they_are_all_seen_or_the_run_is_cancelled() -> None:
    """Bindings.wait returns once the last pod is seen, False at its timeout, and a
    cancelled wait (Ctrl-C on `python -m bench`) leaves no thread blocked for long:
    asyncio.run waits for its executor's threads when it shuts down."""
    import asyncio
    import time

    async def scenario() -> tuple[bool, bool, float]:
        waiting = Bindings(cast(Any, None), "run=x", 2)
        loop = asyncio.get_running_loop()
        loop.call_later(0.2, waiting.seen, "a", "n1")
        loop.call_later(0.3, waiting.seen, "b", "n1")
        all_seen = await waiting.wait(10.0)
        late = await Bindings(cast(Any, None), "run=y", 1).wait(0.3)
        stuck = asyncio.create_task(Bindings(cast(Any, None), "run=z", 1).wait(600.0))
        await asyncio.sleep(0.2)
        stuck.cancel()
        return all_seen, late, time.monotonic()

    started = time.monotonic()
    all_seen, late, cancelled_at = asyncio.run(scenario())
    assert all_seen and not late
    assert cancelled_at - started < 5.0
    assert time.monotonic() - cancelled_at < 3.0  # asyncio.run did not wait 600 s
