"""`make bench` in miniature: the smallest workload through bench.run.run_bench,
in-process and end to end against the session's control plane, both schedulers,
creating the pods while scheduling and draining a backlog, beside the bind ceiling.

Checks that the harness works and that both schedulers bound every pod (the gang
workload: every pod a correct scheduler binds, no gang in part, on a control plane
of its own serving the alpha Workload API); it asserts nothing about speed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.report import ceiling_events_lines
from bench.run import run_bench
from bench.schedulers import KUBE_SCHEDULER, KUBESCHED, SCHEDULERS
from tests.integration.control_plane import ControlPlane

pytestmark = pytest.mark.integration

TOP_KEYS = {
    "schema",
    "timestamp",
    "size",
    "modes",
    "kubernetes_version",
    "kubesched_commit",
    "machine",
    "workloads",
    "plot",
}
E2E_KEYS = {
    "status",
    "scheduler",
    "measured_pods",
    "bound",
    "seconds",
    "pods_per_second",
    "attempt_latency_ms",
    "create_to_bound_ms",
    "attempts",
    "peak_rss_mb",
    "scheduler_cpu_seconds",
    "violations",
}


def _tiny(
    control_plane: ControlPlane, tmp_path: Path, workload: str, modes: tuple[str, ...]
) -> dict[str, Any]:
    """One workload at size tiny on the session's control plane. A smoke of the
    machinery, not a measurement: no wait for idle CPUs (waiting up to 20 s per run
    made it time out on a busy machine), no table, no plot."""
    doc, _ = run_bench(
        [workload],
        "tiny",
        modes=modes,
        cluster_env=control_plane.dir / "env",
        out_dir=tmp_path,
        make_plot=False,
        show_table=False,
        quiet_wait=0,
        log=None,
    )
    return doc


@pytest.mark.timeout(180)
def test_smallest_workload_end_to_end(control_plane: ControlPlane, tmp_path: Path) -> None:
    doc, path = run_bench(
        ["SchedulingBasic"],
        "tiny",
        modes=("inprocess", "e2e"),
        cluster_env=control_plane.dir / "env",
        out_dir=tmp_path,
        show_table=False,
        log=None,
        # A smoke of the machinery, not a measurement: waiting up to 20 s per run for
        # idle CPUs made it time out on a busy machine.
        quiet_wait=0,
    )

    saved = json.loads(path.read_text())
    assert saved == json.loads(json.dumps(doc))
    assert path.name.startswith("results-") and path.suffix == ".json"
    assert set(saved) >= TOP_KEYS
    assert Path(saved["plot"]).is_file()
    assert {"nproc", "memory_gib", "cpu_model"} <= set(saved["machine"])

    entry = saved["workloads"]["SchedulingBasic"]
    assert entry["params"] == {
        "nodes": 5,
        "init_pods": 5,
        "measure_pods": 10,
        "unschedulable_pods": 0,
    }
    assert set(entry["ratios"]) == {
        "e2e_pods_per_second",
        "e2e_p99_latency",
        "e2e_p99_create_to_bound",
        "e2e_peak_rss",
        "e2e_cpu_seconds",
        "inprocess_vs_e2e",
        "backlog_pods_per_second",
        "backlog_cpu_seconds",
    }
    # backlog not run here: no ratio, and no share of a ceiling
    assert entry["ratios"]["backlog_pods_per_second"] is None
    assert "ceiling" not in entry

    inproc = entry["inprocess"]
    assert inproc["status"] == "ok", inproc
    assert inproc["bound"] == inproc["measured_pods"] == 10
    assert inproc["violations"] == []

    assert set(entry["e2e"]) == set(SCHEDULERS)
    for kind in (KUBE_SCHEDULER, KUBESCHED):
        result = entry["e2e"][kind]
        assert result["status"] == "ok", (kind, result)
        assert set(result) >= E2E_KEYS, (kind, sorted(result))
        assert result["bound"] == result["measured_pods"] == 10, (kind, result)
        assert result["violations"] == [], (kind, result)
        assert set(result["attempt_latency_ms"]) == {"p50", "p90", "p99"}
        assert set(result["create_to_bound_ms"]) == {"p50", "p90", "p99"}
        assert result["attempts"].get("scheduled", 0) >= 10, (kind, result["attempts"])
        assert result["peak_rss_mb"] > 0
    assert entry["ratios"]["e2e_pods_per_second"] is not None


@pytest.mark.timeout(240)
def test_backlog_drain_and_bind_ceiling(control_plane: ControlPlane, tmp_path: Path) -> None:
    """Both schedulers drain pods created before they start, and the bind probe
    binds the same number of pending pods through kubesched's client stack; the
    table's shares of the ceiling come out of the same run."""
    doc = _tiny(control_plane, tmp_path, "Unschedulable", ("backlog", "ceiling"))
    entry = doc["workloads"]["Unschedulable"]
    assert "e2e" not in entry and "inprocess" not in entry

    ceiling = entry["ceiling"]
    assert ceiling["status"] == "ok", ceiling
    assert (ceiling["nodes"], ceiling["measured_pods"], ceiling["bound"]) == (5, 10, 10)
    probe = ceiling["probe"]
    assert probe["pods"] == probe["bound"] == 10 and probe["errors"] == 0, probe
    assert probe["nodes"] == 5
    assert ceiling["pods_per_second"] > 0

    for kind in SCHEDULERS:
        result = entry["backlog"][kind]
        assert result["status"] == "ok", (kind, result)
        assert result["mode"] == "backlog"
        assert result["bound"] == result["measured_pods"] == 10, (kind, result)
        # no violation: every measured pod bound, the 2 that fit nowhere left pending
        assert result["violations"] == [], (kind, result)
        assert result["pods_left"] == {"init": 1, "measure": 10}, (kind, result)
        assert result["startup_seconds"] > 0 and result["pods_per_second"] > 0
        assert result["scheduler_cpu_seconds"] >= result["startup_cpu_seconds"] > 0
        assert result["attempts"].get("scheduled", 0) >= 10, (kind, result["attempts"])
        assert result["peak_rss_mb"] > 0
        assert set(result["start_to_bound_ms"]) == {"p50", "p90", "p99"}
        assert entry["of_ceiling"]["backlog"][kind] is not None
    assert entry["ratios"]["backlog_pods_per_second"] is not None


def test_bind_ceiling_with_events_and_a_pod_watch(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """ceiling-events: the probe also lists and watches every live pod and writes a
    Scheduled event per bind, as `kubesched run` does, and the report states it."""
    doc = _tiny(control_plane, tmp_path, "SchedulingBasic", ("ceiling-events",))
    entry = doc["workloads"]["SchedulingBasic"]
    assert "ceiling" not in entry
    full = entry["ceiling_events"]
    assert full["status"] == "ok", full
    assert full["scheduler_api_work"] is True
    probe = full["probe"]
    measured = entry["params"]["measure_pods"]
    assert probe["bound"] == measured and probe["errors"] == 0, probe
    assert probe["watch"] is True and probe["events"] is True
    assert probe["events_written"] == measured and probe["events_dropped"] == 0, probe
    # the list saw the run's pending pods, the watch their binds
    assert probe["pod_changes_seen"] >= 2 * measured, probe
    (line,) = ceiling_events_lines(entry)
    assert line.startswith("bind ceiling with events and a pod watch: ")
    assert f"({measured} events written, 0 dropped; " in line
    assert probe["with_events_per_second"] > 0, probe


DRA = "SchedulingWithResourceClaimTemplate"


@pytest.mark.timeout(300)
def test_dra_workload_end_to_end(control_plane: ControlPlane, tmp_path: Path) -> None:
    """The DRA workload's tiny size (scheduler_perf's "fast") in process and on the
    control plane with both schedulers: every pod bound, each with a device of its
    own on its node. The template claims are kube-controller-manager's to make."""
    # A ControlPlane that knows its kube-controller-manager lists its controllers.
    if "resourceclaim-controller" not in getattr(control_plane, "controllers", ()):
        pytest.skip("needs kube-controller-manager's resourceclaim-controller in the control plane")
    doc = _tiny(control_plane, tmp_path, DRA, ("inprocess", "e2e"))
    entry = doc["workloads"][DRA]
    assert entry["params"]["devices_per_node"] == 10
    assert entry["inprocess"]["status"] == "ok", entry["inprocess"]
    assert entry["inprocess"]["violations"] == []
    for kind in (KUBE_SCHEDULER, KUBESCHED):
        result = entry["e2e"][kind]
        assert result["status"] == "ok", (kind, result)
        assert result["bound"] == result["measured_pods"] == 10, (kind, result)
        assert result["violations"] == [], (kind, result)


GANGS = "GangScheduling"


@pytest.mark.timeout(300)
def test_gang_workload_end_to_end_with_the_workload_api(tmp_path: Path) -> None:
    """The gang workload's tiny size (2 PodGroups of 8 one-GPU pods among 32
    singles, 16 GPUs) with both schedulers' GenericWorkload and GangScheduling on.
    Without --cluster-env, run_bench starts a control plane of its own serving the
    alpha Workload API (the session's serves the shipped API) and stops it. Each
    scheduler binds every GPU and every pod without one, gangs whole or not at all."""
    doc, _ = run_bench(
        [GANGS],
        "tiny",
        modes=("e2e",),
        out_dir=tmp_path,
        make_plot=False,
        show_table=False,
        quiet_wait=0,
        log=None,
    )
    entry = doc["workloads"][GANGS]
    assert entry["params"]["gangs"] == 2
    for kind in (KUBE_SCHEDULER, KUBESCHED):
        result = entry["e2e"][kind]
        assert result["status"] == "ok", (kind, result)
        assert result["bound"] == result["measured_pods"] == 40, (kind, result)
        assert result["violations"] == [], (kind, result)
        gangs = result["gangs"]
        assert gangs["in_part"] == 0, (kind, gangs)
        assert gangs["whole"] >= 1 and gangs["whole"] + gangs["refused"] == 2, (kind, gangs)
        assert gangs["gang_pods_bound"] == 8 * gangs["whole"], (kind, gangs)
        assert gangs["pods_bound"] == 40 and gangs["single_pods_bound"] == 24, (kind, gangs)
        assert result["attempts"].get("scheduled", 0) >= 40, (kind, result["attempts"])
    assert entry["ratios"]["e2e_pods_per_second"] is not None
