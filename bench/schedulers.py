"""Starting kube-scheduler and `kubesched run` the same way, and reading them.

Both get the same KubeSchedulerConfiguration (bench.workloads.scheduler_config:
client QPS/burst 5000, no leader election) except for the profile's
schedulerName, log verbosity 1, and serve /metrics on a free loopback port.
Both serve it over HTTPS on their secure port; `--authorization-always-allow-paths`
(and kube-scheduler's `--authentication-skip-lookup`) let an unauthenticated
client scrape it.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.cluster import BenchError, ControlPlane
from bench.machine import pin, process_cpu_seconds
from bench.workloads import scheduler_config

KUBE_SCHEDULER = "kube-scheduler"
KUBESCHED = "kubesched"
SCHEDULERS = (KUBE_SCHEDULER, KUBESCHED)
# The profile (spec.schedulerName) each scheduler serves in the benchmarks.
PROFILE_NAMES = {KUBE_SCHEDULER: "default-scheduler", KUBESCHED: "kubesched"}
VERBOSITY = int(os.environ.get("BENCH_SCHEDULER_V", "1"))
# Extra arguments of `kubesched run` (e.g. --no-api-worker), split at spaces.
KUBESCHED_ARGS = os.environ.get("BENCH_KUBESCHED_ARGS", "").split()
KUBESCHED_CONTENT_TYPE = os.environ.get("BENCH_KUBESCHED_CONTENT_TYPE", "")
# `python -m bench --pin`: the control plane and the harness on CPU 0, the scheduler
# under test (its threads and child processes) on CPU 1.
PIN_ENV = "BENCH_PIN"
HARNESS_CPU, SCHEDULER_CPU = 0, 1

_UNKNOWN_PLUGIN = re.compile(r"unknown plugin '([^']+)'")


class PluginUnavailable(BenchError):
    """The scheduler refused the profile: it has no plugin of that name."""

    def __init__(self, plugin: str) -> None:
        self.plugin = plugin
        super().__init__(f"plugin not available ({plugin})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SchedulerProcess:
    kind: str
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    pid_file: Path

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def get(self, path: str, timeout: float = 10.0) -> httpx.Response:
        # Both serving certificates are self-signed (kube-scheduler's in --cert-dir).
        with httpx.Client(verify=False, timeout=timeout) as client:
            return client.get(self.base_url + path)

    def metrics(self) -> str:
        response = self.get("/metrics", timeout=30.0)
        if response.status_code != 200:
            raise BenchError(f"{self.kind} /metrics: {response.status_code} {response.text[:200]}")
        return response.text

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def peak_rss_bytes(self) -> int:
        """VmHWM: the peak resident set size of the process so far."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise BenchError(f"no VmHWM for pid {self.proc.pid}")

    def cpu_seconds(self) -> float:
        """User + system CPU time so far of the process, its threads and every
        process it runs (kubesched's API worker), reaped or alive."""
        return process_cpu_seconds(self.proc.pid)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            if self.proc.poll() is not None:
                log = self.log_tail(200)
                unknown = _UNKNOWN_PLUGIN.search(log)
                if unknown:
                    raise PluginUnavailable(unknown.group(1))
                raise BenchError(f"{self.kind} exited with {self.proc.returncode}:\n{log}")
            try:
                response = self.get("/readyz", timeout=2.0)
                if response.status_code == 200:
                    return
                last = f"{response.status_code} {response.text[:200]}"
            except httpx.TransportError as exc:
                last = repr(exc)
            if time.monotonic() >= deadline:
                self.stop()
                raise BenchError(
                    f"{self.kind} not ready after {timeout:g}s ({last}):\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        with contextlib.suppress(OSError):
            self.pid_file.unlink()


def start_scheduler(
    kind: str,
    cp: ControlPlane,
    workdir: Path,
    required_plugins: tuple[str, ...],
    *,
    seed: int = 1,
    kubesched_src: Path | None = None,
    feature_gates: str = "",
    extenders: list[dict[str, Any]] | None = None,
) -> SchedulerProcess:
    """Start KIND against the cluster with the benchmark configuration. The
    config and log go in WORKDIR (which should be inside the cluster dir: the pid
    file there lets hack/cluster-down.sh stop a scheduler a crashed run left).
    KUBESCHED_SRC: run kubesched from that directory (holding the ``kubesched``
    package) instead of the installed one. FEATURE_GATES: both schedulers'
    --feature-gates ("A=true,B=true"; "" none). EXTENDERS: the configuration's
    `extenders:` entries (bench/extender.py)."""
    if kind not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {kind!r}")
    port = free_port()
    workdir = workdir / f"{kind}-{port}"
    workdir.mkdir(parents=True)
    kubeconfig = str(cp.scheduler_kubeconfig)
    config = workdir / "config.yaml"
    document = scheduler_config(PROFILE_NAMES[kind], required_plugins, kubeconfig)
    if extenders:
        document["extenders"] = extenders
    if kind == KUBESCHED and KUBESCHED_CONTENT_TYPE:
        # BENCH_KUBESCHED_CONTENT_TYPE: kubesched's wire format (kube-scheduler keeps
        # its default, protobuf).
        document["clientConnection"]["contentType"] = KUBESCHED_CONTENT_TYPE
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    if kind == KUBE_SCHEDULER:
        command = [
            str(cp.bin_dir / "kube-scheduler"),
            f"--config={config}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--authentication-skip-lookup",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={workdir / 'certs'}",
            f"--v={VERBOSITY}",
        ]
    else:
        command = [
            sys.executable,
            "-m",
            "kubesched.cli.main",
            "run",
            f"--config={config}",
            f"--kubeconfig={kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--no-leader-elect",
            f"--seed={seed}",
            f"--v={VERBOSITY}",
            *KUBESCHED_ARGS,
        ]
    if feature_gates:
        command.append(f"--feature-gates={feature_gates}")
    env = dict(os.environ)
    if kind == KUBESCHED and kubesched_src is not None:
        env["PYTHONPATH"] = str(kubesched_src.resolve())
    log_path = workdir / f"{kind}.log"
    pinned = os.environ.get(PIN_ENV) == "1"
    if pinned:
        for pid in (*cp.pids(), os.getpid()):
            pin(pid, {HARNESS_CPU})
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=(lambda: os.sched_setaffinity(0, {SCHEDULER_CPU})) if pinned else None,
        )
    pid_file = cp.dir / f"bench-{kind}-{port}.pid"
    pid_file.write_text(f"{proc.pid}\n")
    return SchedulerProcess(kind, proc, port, log_path, pid_file)
