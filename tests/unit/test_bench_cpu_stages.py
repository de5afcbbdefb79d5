"""bench/cpu_stages.py: CPU per bound pod by stage from two /metrics scrapes, and
bench/machine.py's CPU of a process with its children."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.cpu_stages import describe, ms_per_pod, stage_seconds
from bench.machine import process_cpu_seconds, thread_schedstat
from kubesched.kube.cpu_budget import CpuBudget
from kubesched.server.metrics import SchedulerMetrics


def _scrape(seconds: dict[str, float]) -> str:
    metrics = SchedulerMetrics()
    metrics.set_cpu_budget(lambda: seconds)
    return metrics.render().decode()


def test_stages_per_pod_between_two_scrapes() -> None:
    before = _scrape({"scheduling cycle": 1.0, "api worker": 0.5})
    after = _scrape({"scheduling cycle": 3.0, "api worker": 1.5})
    budget = ms_per_pod(before, after, bound=1000)
    assert budget == {"scheduling cycle": 2.0, "api worker": 1.0, "total": 3.0}
    assert describe(budget).startswith("CPU 3.000 ms per bound pod: scheduling cycle 2.000")


def test_kube_scheduler_has_no_stages() -> None:
    assert stage_seconds('scheduler_pending_pods{queue="active"} 0.0\n') == {}
    assert ms_per_pod(None, "", bound=10) == {}


def test_the_budget_metric_reads_the_stages_at_scrape() -> None:
    budget = CpuBudget()
    budget.add("scheduling cycle", 0.25)
    seconds = stage_seconds(_scrape(budget.read()))
    assert seconds["scheduling cycle"] == 0.25
    assert set(seconds) >= {"list and watch decode", "scheduling thread, rest", "api worker"}


def test_a_process_cpu_counts_its_children() -> None:
    # A parent that sleeps while its child burns CPU: the CPU is the child's.
    child_work = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            f"p = subprocess.Popen([sys.executable, '-c', {child_work!r}])\n"
            "time.sleep(5)\n",
        ]
    )
    try:
        deadline = time.monotonic() + 10
        while process_cpu_seconds(parent.pid) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_cpu_seconds(parent.pid) >= 0.4
    finally:
        parent.kill()
        parent.wait()


def test_the_main_threads_schedstat_counts_its_time_on_a_cpu() -> None:
    on_cpu, waited = thread_schedstat(os.getpid())
    started = time.thread_time()
    while time.thread_time() - started < 0.2:
        pass
    after, waited_after = thread_schedstat(os.getpid())
    assert after - on_cpu >= 0.15
    assert waited_after >= waited
    assert thread_schedstat(2**22 + 7) == (0.0, 0.0)  # no such process
