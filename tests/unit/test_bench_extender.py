"""The extender bench's arithmetic (bench/extender.py): requests paired into
attempts, the figures from the durations and the /metrics histograms, the median
and spread of the repeats and their comparison with kube-scheduler alone, and the
extenders entry the kube-scheduler configuration gets. The bench itself runs against
a control plane in tests/integration/test_bench_extender.py."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from bench.extender import (
    ALONE,
    NAMES,
    algorithm_latency,
    count_extender_cpu,
    extender_entry,
    extender_figures,
    per_attempt,
    print_tables,
    read_requests,
    spread,
    summarize,
)


def _histogram(name: str, buckets: dict[str, int], total: float, labels: str = "") -> str:
    """Prometheus text of one histogram series with cumulative BUCKETS."""
    sep = "," if labels else ""
    lines = [f'{name}_bucket{{{labels}{sep}le="{le}"}} {n}' for le, n in buckets.items()]
    count = max(buckets.values())
    braces = f"{{{labels}}}" if labels else ""
    lines += [f"{name}_sum{braces} {total}", f"{name}_count{braces} {count}"]
    return "\n".join(lines) + "\n"


def test_requests_pair_into_attempts() -> None:
    text = "filter 200 0.001\nprioritize 200 0.002\nfilter 200 0.003\nfilter 200 0.004\n"
    text += "prioritize 200 0.001\nfilter 200 0.00"  # a line still being written
    requests = read_requests(text)
    assert len(requests) == 5
    # The third attempt had no prioritize (one node left, or it failed).
    assert [round(s, 6) for s in per_attempt(requests)] == [0.003, 0.003, 0.005]


def test_extender_figures_exact_and_from_the_histogram() -> None:
    requests = [("filter", 200, 0.001 * (i + 1)) for i in range(100)]
    requests += [("prioritize", 200, 0.002)] * 100 + [("filter", 500, 0.01)]
    name = "kubesched_extender_request_duration_seconds"
    after = _histogram(
        name, {"0.001": 1, "0.01": 10, "0.1": 101, "+Inf": 101}, 5.1, 'code="200",verb="filter"'
    ) + _histogram(name, {"0.001": 0, "0.005": 100, "+Inf": 100}, 0.2, 'verb="prioritize"')
    figures = extender_figures(requests, "", after)
    assert figures["requests"] == 201
    assert figures["by_verb"] == {"filter": 101, "prioritize": 100}
    assert figures["errors"] == 1
    assert figures["prioritize_ms"]["p50"] == 2.0
    assert figures["filter_ms"]["p50"] == 50.0  # nearest rank: the 51st of 101
    assert figures["histogram_ms"]["filter"]["count"] == 101
    assert 10 < figures["histogram_ms"]["filter"]["p50"] < 100  # interpolated
    assert figures["histogram_ms"]["prioritize"]["p99"] <= 5.0


def test_algorithm_latency_between_two_scrapes() -> None:
    name = "scheduler_scheduling_algorithm_duration_seconds"
    before = _histogram(name, {"0.001": 5, "0.002": 5, "0.004": 5, "+Inf": 5}, 0.004)
    after = _histogram(name, {"0.001": 5, "0.002": 9, "0.004": 15, "+Inf": 15}, 0.034)
    latency = algorithm_latency(before, after)
    assert latency["attempts"] == 10
    assert latency["mean"] == 3.0  # (0.034 - 0.004) / 10, exact
    # the 5th of 10 in the (2 ms, 4 ms] bucket, which holds the 5th to the 10th
    assert latency["p50"] is not None and 2.0 < latency["p50"] < 2.5


def _run(pods_per_second: float, mean_ms: float, status: str = "ok") -> dict[str, Any]:
    return {
        "status": status,
        "pods_per_second": pods_per_second,
        "algorithm_ms": {"p50": mean_ms, "p99": 2 * mean_ms, "mean": mean_ms},
    }


def test_summary_pairs_each_repeat_with_the_alone_run() -> None:
    runs = {
        ALONE: [_run(100, 2.0), _run(120, 2.0), _run(80, 3.0)],
        NAMES: [_run(50, 5.0), _run(30, 9.0, status="timeout"), _run(40, 4.0)],
    }
    result = summarize(runs)
    assert result["summary"][ALONE]["pods/s"] == {"min": 80, "median": 100, "max": 120}
    # the failed run counts nowhere
    assert result["summary"][NAMES]["pods/s"] == {"min": 40, "median": 40, "max": 50}
    assert result["vs_alone"][NAMES]["pods/s"] == {"min": 0.5, "median": 0.5, "max": 0.5}
    assert result["vs_alone"][NAMES]["algorithm mean ms"] == {"min": 1.0, "median": 1.0, "max": 3.0}
    assert ALONE not in result["vs_alone"]
    assert spread([3.0, 1.0, 2.0, 4.0]) == {"min": 1.0, "median": 2.0, "max": 4.0}

    doc = {
        "kubernetes_version": "v1.36.3",
        "kubesched_commit": "abc",
        "pods": 10,
        "repeat": 3,
        "results": {"500": {"runs": runs, **result}},
    }
    out = io.StringIO()
    print_tables(doc, Console(file=out, width=200))
    text = out.getvalue()
    assert "500 nodes, 10 pods, median [min–max] of 3" in text
    assert "×0.50" in text and "+1 [1–3]" in text
    assert "500 nodes, names: timeout" in text


def test_the_extender_cpu_is_the_benchmark_s_own() -> None:
    cpu = {
        "wall_seconds": 10.0,
        "benchmark_cpu_seconds": 8.0,
        "foreign_cpu_seconds": 5.0,
        "foreign_share": 0.25,
    }
    count_extender_cpu(cpu, 4.0)
    assert cpu["benchmark_cpu_seconds"] == 12.0 and cpu["foreign_cpu_seconds"] == 1.0
    assert cpu["foreign_share"] < 0.25


def test_the_extenders_entry_is_the_how_tos() -> None:
    entry = extender_entry(12345, node_cache_capable=False)
    assert entry["urlPrefix"] == "https://127.0.0.1:12345/scheduler"
    assert entry["nodeCacheCapable"] is False and entry["enableHTTPS"] is True
    assert (entry["filterVerb"], entry["prioritizeVerb"]) == ("filter", "prioritize")
