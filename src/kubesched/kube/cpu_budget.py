"""Where `kubesched run` spends its CPU: seconds by stage, for /metrics.

The scheduling thread (the event loop's) times its synchronous stages itself
with time.thread_time(): decoding listed and watched objects, the informers' handlers (the
cache and the queue's event handling), scheduling cycles and the once-a-second
housekeeping. What the thread spends elsewhere (binding cycles, socket reads,
the API client without an API worker, metrics scrapes) is the rest of the
thread; other threads of the process and the API worker's process are counted
apart. The bench divides each by the pods bound (bench/e2e.py).

The stages are read at scrape time, on the event loop's thread, as
kubesched_cpu_seconds_total{stage}.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

WATCH_DECODE = "list and watch decode"
INFORMER_HANDLERS = "informer handlers"
SCHEDULING_CYCLE = "scheduling cycle"
HOUSEKEEPING = "housekeeping"
TIMED = (WATCH_DECODE, INFORMER_HANDLERS, SCHEDULING_CYCLE, HOUSEKEEPING)
THREAD_REST = "scheduling thread, rest"
OTHER_THREADS = "other threads"
API_WORKER = "api worker"

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process (/proc/PID/stat), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


class CpuBudget:
    """The seconds of the timed stages, and how to read the rest. Create it on the
    scheduling thread: thread_time() is that thread's."""

    def __init__(self, worker_pid: Callable[[], int | None] = lambda: None) -> None:
        self.seconds = dict.fromkeys(TIMED, 0.0)
        self.worker_pid = worker_pid
        # CPU of API workers that died (a new one starts from zero).
        self._dead_workers = 0.0
        self._last_worker: tuple[int, float] | None = None

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] += seconds

    def read(self) -> dict[str, float]:
        """Every stage's seconds so far; on the scheduling thread."""
        out = dict(self.seconds)
        thread = time.thread_time()
        out[THREAD_REST] = max(0.0, thread - sum(self.seconds.values()))
        out[OTHER_THREADS] = max(0.0, time.process_time() - thread)
        out[API_WORKER] = self._worker_seconds()
        return out

    def _worker_seconds(self) -> float:
        pid = self.worker_pid()
        last = self._last_worker
        if last is not None and last[0] != pid:
            self._dead_workers += last[1]  # its last reading before it went
            last = self._last_worker = None
        if pid is None:
            return self._dead_workers
        seconds = process_cpu_seconds(pid)
        if seconds is None:
            seconds = last[1] if last is not None else 0.0
        self._last_worker = (pid, seconds)
        return self._dead_workers + seconds
