"""How busy the machine is with work that is not the benchmark's.

On a shared 2-core machine another process's burst of CPU changes a run's
figures. ``wait_quiet`` waits (a bounded time) for the CPUs to calm down before
a run; ``CpuMeter`` measures, over a run, the CPU time the machine spent on
processes other than the benchmark's own (``foreign``), which the results
record next to the figures.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
NPROC = os.cpu_count() or 1


def _busy_seconds() -> float:
    """CPU time of the whole machine spent not idle (iowait counts as idle)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / TICKS


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), its children that it
    has reaped included, and its live descendants' (a scheduler's worker
    processes); 0 if it is gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    own = sum(int(f) for f in fields[11:15]) / TICKS  # utime stime cutime cstime
    return own + sum(process_cpu_seconds(child) for child in child_pids(pid))


def child_pids(pid: int) -> list[int]:
    """The live processes whose parent is PID."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and int(fields[1]) == pid:
            children.append(int(entry.name))
    return children


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of process PID on CPUS (sched_setaffinity is per thread; threads
    started later inherit it from theirs). A process gone meanwhile is skipped."""
    try:
        tasks = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return
    for task in tasks:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(task, cpus)


def thread_schedstat(pid: int, tid: int | None = None) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one) of thread TID of
    process PID (its main thread by default), from /proc/.../schedstat; zeros if it
    is gone or the kernel keeps no schedstats."""
    try:
        fields = Path(f"/proc/{pid}/task/{tid or pid}/schedstat").read_text().split()
    except OSError:
        return (0.0, 0.0)
    return (int(fields[0]) / 1e9, int(fields[1]) / 1e9)


def _own_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def busy_cores(window: float = 2.0) -> float:
    """How many CPUs were busy, on average, over the next WINDOW seconds."""
    before, started = _busy_seconds(), time.monotonic()
    time.sleep(window)
    return (_busy_seconds() - before) / (time.monotonic() - started)


def wait_quiet(
    threshold: float = 0.5,
    max_wait: float = 60.0,
    log: Callable[[str], None] | None = None,
) -> dict[str, float]:
    """Wait until fewer than THRESHOLD CPUs are busy (2 s windows), at most MAX_WAIT
    seconds; how long it waited and how busy the CPUs were when it stopped waiting."""
    started = time.monotonic()
    told = False
    while True:
        busy = busy_cores()
        waited = time.monotonic() - started
        if busy < threshold or waited >= max_wait:
            return {"waited_seconds": round(waited, 1), "busy_cpus_at_start": round(busy, 2)}
        if log is not None and not told:
            log(f"  waiting for the CPUs to calm down ({busy:.2f} of {NPROC} busy)")
            told = True


@dataclass
class CpuMeter:
    """CPU seconds over an interval: the whole machine's, the benchmark's own
    processes' (PIDS, this process, and its finished children), and the rest."""

    pids: Iterable[int] = ()
    _start: dict[str, float] = field(default_factory=dict)

    def _ours(self) -> float:
        return sum(process_cpu_seconds(p) for p in self.pids) + _own_seconds() + _children_seconds()

    def start(self) -> CpuMeter:
        self.pids = list(self.pids)
        self._start = {"wall": time.monotonic(), "busy": _busy_seconds(), "ours": self._ours()}
        return self

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._start["wall"]
        busy = _busy_seconds() - self._start["busy"]
        ours = self._ours() - self._start["ours"]
        foreign = max(0.0, busy - ours)
        return {
            "wall_seconds": round(wall, 2),
            "machine_cpu_seconds": round(busy, 2),
            "benchmark_cpu_seconds": round(ours, 2),
            "foreign_cpu_seconds": round(foreign, 2),
            # the share of the machine's CPU capacity that other work took
            "foreign_share": round(foreign / (wall * NPROC), 3) if wall > 0 else 0.0,
        }
