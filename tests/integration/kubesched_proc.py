"""Starting `kubesched run` as a real process against the test control plane."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.integration.control_plane import ControlPlane, free_port
from tests.integration.kube_scheduler_proc import stop_process

BOUND = re.compile(r'"Successfully bound pod to node" pod="([^"]+)" node="([^"]+)"')


class KubeschedProcess:
    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path, port: int) -> None:
        self.proc = proc
        self.log_path = log_path
        self.port = port

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def bound(self) -> Counter[str]:
        """How many times this process logged binding each pod."""
        return Counter(m.group(1) for m in BOUND.finditer(self.log()))

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=5)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"kubesched exited {self.proc.returncode}:\n{self.log()[-3000:]}"
                )
            try:
                if self.get("/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"kubesched not ready in {timeout}s:\n{self.log()[-3000:]}")

    def stop(self) -> int | None:
        return stop_process(self.proc, 40)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def start_kubesched(
    cp: ControlPlane, workdir: Path, *args: str, name: str = "kubesched", **env: Any
) -> KubeschedProcess:
    port = free_port()
    log_path = workdir / f"{name}-{port}.log"
    command = [
        sys.executable,
        "-m",
        "kubesched.cli.main",
        "run",
        "--kubeconfig",
        str(cp.kubeconfig),
        "--health-port",
        str(port),
        "--health-address",
        "127.0.0.1",
        "-v",
        "2",
        *args,
    ]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=cp.process_env(**env)
        )
    return KubeschedProcess(proc, log_path, port)
