"""The real kube-scheduler beside the integration tests: start_kube_scheduler runs it
against a ControlPlane (flags as in hack/README.md, a free secure port, a
KubeSchedulerConfiguration passed with --config) and waits for /readyz;
KubeSchedulerProcess.stop and stop_process stop it.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.integration.control_plane import ControlPlane, free_port


# --------------------------------------------------------------------- kube-scheduler
class KubeSchedulerProcess(subprocess.Popen[bytes]):
    """A running kube-scheduler: ``port`` (its secure port), ``workdir``, ``log_path``."""

    port: int
    workdir: Path
    log_path: Path
    pid_file: Path

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        stop_process(self, timeout)
        with contextlib.suppress(OSError):
            self.pid_file.unlink()


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> int | None:
    """SIGTERM, then SIGKILL after TIMEOUT seconds; the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def _scheduler_config(cp: ControlPlane, config: str | Path | Mapping[str, Any], out: Path) -> Path:
    """The config file to pass with --config: CONFIG (a path or a dict) with
    clientConnection.kubeconfig set to the cluster's scheduler kubeconfig when
    empty (with --config, kube-scheduler ignores --kubeconfig)."""
    data = dict(config) if isinstance(config, Mapping) else yaml.safe_load(Path(config).read_text())
    conn = dict(data.get("clientConnection") or {})
    if not conn.get("kubeconfig"):
        conn["kubeconfig"] = str(cp.scheduler_kubeconfig)
    data["clientConnection"] = conn
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def start_kube_scheduler(
    cp: ControlPlane,
    config_path: str | Path | Mapping[str, Any] | None = None,
    *,
    leader_elect: bool = False,
    extra_args: Iterable[str] = (),
    wait_ready: bool = True,
    timeout: float = 30.0,
    verbosity: int = 2,
) -> KubeSchedulerProcess:
    """Run the real kube-scheduler (K8S_BIN_DIR) against the cluster.

    Flags as in hack/README.md, ``--leader-elect=false`` unless LEADER_ELECT, a
    free secure port on 127.0.0.1. CONFIG_PATH: a KubeSchedulerConfiguration file
    or dict, passed with --config (its clientConnection.kubeconfig is filled in).
    Its pid goes in DIR/kube-scheduler-<port>.pid so that cluster-down stops it
    should a test leak it; log in DIR/kube-scheduler-<port>-<random>/kube-scheduler.log
    (a port is free again once a scheduler stops, so the name alone could repeat).
    With WAIT_READY, returns once /readyz answers ok (raises, with the log tail,
    if it exits or is not ready within TIMEOUT). Stop it with ``.stop()``.
    """
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix=f"kube-scheduler-{port}-", dir=cp.dir))
    kubeconfig = str(cp.scheduler_kubeconfig)
    cmd = [
        str(cp.binary("kube-scheduler")),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--leader-elect={'true' if leader_elect else 'false'}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={workdir / 'certs'}",
        f"--v={verbosity}",
    ]
    if config_path is not None:
        cmd.append(f"--config={_scheduler_config(cp, config_path, workdir / 'config.yaml')}")
    cmd.extend(extra_args)
    log_path = workdir / "kube-scheduler.log"
    with log_path.open("wb") as log:
        proc = KubeSchedulerProcess(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=cp.process_env(),
        )
    proc.port = port
    proc.workdir = workdir
    proc.log_path = log_path
    proc.pid_file = cp.dir / f"kube-scheduler-{port}.pid"
    proc.pid_file.write_text(f"{proc.pid}\n")
    if wait_ready:
        try:
            _wait_scheduler_ready(proc, timeout)
        except BaseException:
            proc.stop()
            raise
    return proc


def _wait_scheduler_ready(proc: KubeSchedulerProcess, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = f"https://127.0.0.1:{proc.port}/readyz"
    last = ""
    with httpx.Client(verify=False, timeout=2.0) as client:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"kube-scheduler exited with {proc.returncode}:\n{proc.log_tail()}"
                )
            try:
                r = client.get(url)
                if r.status_code == 200:
                    return
                last = f"{r.status_code} {r.text[:200]}"
            except httpx.TransportError as exc:
                last = repr(exc)
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"kube-scheduler not ready after {timeout:g}s ({last}):\n{proc.log_tail()}"
                )
            time.sleep(0.2)
