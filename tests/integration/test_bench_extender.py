"""`make bench-extender` in miniature (bench/extender.py): kube-scheduler alone, then
with `kubesched extender` sent node names, then whole Nodes, on 20 nodes of the
session's control plane, 30 pods each, once.

Checks that the harness works: every run bound every pod where it should, the
extender answered every request kube-scheduler made, and every figure of the table
is there; it asserts nothing about speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.extender import ALONE, NAMES, NODES, run_extender_bench
from tests.integration.control_plane import ControlPlane

pytestmark = pytest.mark.integration

PODS = 30


@pytest.mark.timeout(300)
def test_the_extender_bench_at_a_tiny_size(control_plane: ControlPlane, tmp_path: Path) -> None:
    doc, path = run_extender_bench(
        [20],
        PODS,
        1,
        whole_nodes_at=[20],
        cluster_env=control_plane.dir / "env",
        out_dir=tmp_path,
        # A smoke of the machinery, not a measurement: no wait for idle CPUs.
        quiet_wait=0,
        show_table=False,
        log=None,
    )

    saved = json.loads(path.read_text())
    assert saved == json.loads(json.dumps(doc))
    assert path.name.startswith("extender-") and saved["complete"] is True
    entry = saved["results"]["20"]
    assert set(entry["runs"]) == {ALONE, NAMES, NODES}
    for config, runs in entry["runs"].items():
        (run,) = runs
        assert run["status"] == "ok", (config, run)
        assert run["bound"] == run["measured_pods"] == PODS, (config, run)
        assert run["violations"] == [], (config, run)
        assert run["pods_per_second"] > 0
        algorithm = run["algorithm_ms"]
        assert algorithm["attempts"] >= PODS, (config, algorithm)
        assert algorithm["mean"] > 0 and algorithm["p99"] >= algorithm["p50"] > 0, algorithm
        assert run["attempts"].get("scheduled", 0) >= PODS, (config, run["attempts"])
    assert "extender" not in entry["runs"][ALONE][0]

    for config in (NAMES, NODES):
        run = entry["runs"][config][0]
        extender = run["extender"]
        # kube-scheduler called it for every attempt, and it answered every call.
        assert extender["errors"] == 0, (config, run.get("extender_log_tail"))
        assert extender["by_verb"]["filter"] == run["algorithm_ms"]["attempts"], extender
        assert extender["by_verb"]["prioritize"] >= 1, extender
        # The recorded durations and the /metrics histogram saw the same requests.
        for verb in ("filter", "prioritize"):
            assert extender["histogram_ms"][verb]["count"] == extender["by_verb"][verb]
            assert extender[f"{verb}_ms"]["p99"] >= extender[f"{verb}_ms"]["p50"] >= 0
            assert extender[f"{verb}_ms"]["p99"] > 0
        assert extender["attempt_ms"]["p50"] >= extender["filter_ms"]["p50"]
        assert extender["cpu_seconds"] > 0 and extender["peak_rss_mb"] > 0
        versus = entry["vs_alone"][config]
        assert versus["pods/s"]["median"] > 0
        assert "algorithm mean ms" in versus
        assert entry["summary"][config]["extender per attempt p99 ms"]["median"] > 0
