"""Starting `kubesched run` as a real process against the test control plane.

It serves on a free secure port on 127.0.0.1 (HTTPS, its self-signed certificate):
/readyz for anyone, /metrics for a bearer token allowed to `get` it, such as
``metrics_reader_token``'s (a ServiceAccount bound to a role for the path).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane, free_port
from tests.integration.kube_scheduler_proc import stop_process

BOUND = re.compile(r'"Successfully bound pod to node" pod="([^"]+)" node="([^"]+)"')

METRICS_READER = "kubesched-metrics-reader"
METRICS_READER_NAMESPACE = "kube-system"
_RBAC = "/apis/rbac.authorization.k8s.io/v1"


def metrics_reader_token(cp: ControlPlane) -> str:
    """A TokenRequest token of a ServiceAccount that may `get` /metrics (made once
    per control plane; the objects are replaced if they exist)."""
    sa = {"kind": "ServiceAccount", "name": METRICS_READER, "namespace": METRICS_READER_NAMESPACE}
    with AdminApi(cp) as admin:
        admin.apply(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": METRICS_READER, "namespace": METRICS_READER_NAMESPACE},
            }
        )
        admin.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": METRICS_READER},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            }
        )
        admin.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": METRICS_READER},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": METRICS_READER,
                },
                "subjects": [sa],
            }
        )
        return admin.create_token(METRICS_READER_NAMESPACE, METRICS_READER, 3600)


class KubeschedProcess:
    def __init__(
        self, proc: subprocess.Popen[bytes], log_path: Path, port: int, cp: ControlPlane
    ) -> None:
        self.proc = proc
        self.log_path = log_path
        self.port = port
        self.cp = cp
        self._metrics_token: str | None = None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def bound(self) -> Counter[str]:
        """How many times this process logged binding each pod."""
        return Counter(m.group(1) for m in BOUND.finditer(self.log()))

    def get(self, path: str, token: str | None = None) -> httpx.Response:
        """GET PATH on the secure port (its certificate is self-signed), with TOKEN
        as the bearer token if given."""
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.get(
            f"https://127.0.0.1:{self.port}{path}", headers=headers, verify=False, timeout=5
        )

    def metrics(self) -> httpx.Response:
        """GET /metrics as a ServiceAccount allowed to read it."""
        if self._metrics_token is None:
            self._metrics_token = metrics_reader_token(self.cp)
        return self.get("/metrics", self._metrics_token)

    def wait_ready(self, timeout: float = 30.0, path: str = "/readyz") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"kubesched exited {self.proc.returncode}:\n{self.log()[-3000:]}"
                )
            try:
                if self.get(path).status_code == 200:
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
        "--secure-port",
        str(port),
        "--bind-address",
        "127.0.0.1",
        "-v",
        "2",
        *args,
    ]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=cp.process_env(**env)
        )
    return KubeschedProcess(proc, log_path, port, cp)


def simulate_live(cp: ControlPlane, *args: str, timeout: float = 120) -> Any:
    """`kubesched simulate --from-cluster -o json` on the control plane (a process of
    its own, as a user runs it); the CompletedProcess."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesched.cli.main",
            "simulate",
            "--from-cluster",
            "--kubeconfig",
            str(cp.kubeconfig),
            "-o",
            "json",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
