"""The control plane of hack/cluster-up.sh as the benchmarks and the integration
tests both use it: the hack/ scripts (run_hack), a free loopback port, and
ControlPlane, a cluster as its DIR/env describes it.

Standard library only, so that tests/integration can build on it (its
ControlPlane adds an admin client) without importing the benchmarks' clients.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

REPO_ROOT = Path(__file__).resolve().parents[1]
HACK_DIR = REPO_ROOT / "hack"


class HackScriptError(RuntimeError):
    pass


def run_hack(
    script: str, *args: str, timeout: float = 300, env: Mapping[str, str] | None = None
) -> str:
    """Run hack/SCRIPT ARGS (with ENV added to os.environ); return the last line of
    its stdout (the scripts' result).

    On failure raise HackScriptError with the tail of stderr (the scripts log there).
    """
    cmd = [str(HACK_DIR / script), *args]
    try:
        proc = subprocess.run(
            cmd,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **env} if env else None,
        )
    except subprocess.TimeoutExpired as exc:
        raise HackScriptError(f"{' '.join(cmd)} timed out after {timeout:.0f}s") from exc
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.splitlines()[-40:])
        raise HackScriptError(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The control plane's own processes, as DIR/<name>.pid records them.
PROCESSES = ("kube-controller-manager", "kube-apiserver", "etcd")


@dataclass(frozen=True)
class ControlPlane:
    """A cluster started by hack/cluster-up.sh (the fields come from DIR/env)."""

    dir: Path
    kubeconfig: Path
    scheduler_kubeconfig: Path
    url: str
    ca_cert: Path
    admin_cert: Path
    admin_key: Path
    bin_dir: Path
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env_file(cls, env_file: Path) -> Self:
        env: dict[str, str] = {}
        for line in env_file.read_text().splitlines():
            name, sep, value = line.partition("=")
            if sep:
                env[name.strip()] = value.strip()
        return cls(
            dir=env_file.resolve().parent,
            kubeconfig=Path(env["KUBECONFIG"]),
            scheduler_kubeconfig=Path(env["SCHEDULER_KUBECONFIG"]),
            url=env["APISERVER_URL"],
            ca_cert=Path(env["CA_CERT"]),
            admin_cert=Path(env["ADMIN_CERT"]),
            admin_key=Path(env["ADMIN_KEY"]),
            bin_dir=Path(env["K8S_BIN_DIR"]),
            env=env,
        )

    @property
    def controllers(self) -> tuple[str, ...]:
        """The controllers kube-controller-manager runs (none: it does not run)."""
        return tuple(c for c in self.env.get("KUBE_CONTROLLERS", "").split(",") if c)

    @property
    def workload_api(self) -> bool:
        """Whether kube-apiserver serves the alpha Workload API (KUBESCHED_WORKLOAD_API=1)."""
        return self.env.get("WORKLOAD_API") == "1"

    def binary(self, name: str) -> Path:
        """Path of kube-apiserver / kube-scheduler / kube-controller-manager (K8S_BIN_DIR)
        or etcd (ETCD_BIN_DIR)."""
        base = Path(self.env.get("ETCD_BIN_DIR", self.bin_dir)) if name == "etcd" else self.bin_dir
        return base / name

    def process_env(self, **extra: str) -> dict[str, str]:
        """os.environ plus DIR/env (KUBECONFIG, APISERVER_URL, ...) for a subprocess."""
        return {**os.environ, **self.env, **extra}

    def ssl_context(self, client_cert: bool = True) -> ssl.SSLContext:
        """Trusts the cluster CA; presents the admin certificate if client_cert."""
        ctx = ssl.create_default_context(cafile=str(self.ca_cert))
        if client_cert:
            ctx.load_cert_chain(str(self.admin_cert), str(self.admin_key))
        return ctx

    def pid(self, name: str = "kube-apiserver") -> int:
        return int((self.dir / f"{name}.pid").read_text().strip())

    def pids(self) -> list[int]:
        """The process ids of the control plane's processes that it runs (PROCESSES)."""
        out = []
        for name in PROCESSES:
            with contextlib.suppress(OSError, ValueError):
                out.append(self.pid(name))
        return out

    def log(self, name: str = "kube-apiserver", lines: int = 40) -> str:
        path = self.dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def restart_apiserver(self, hard: bool = False, compact: bool = False) -> int:
        """Stop kube-apiserver (SIGTERM, or SIGKILL if hard) and start it again with
        the same flags (hack/restart-apiserver.sh). Returns once /readyz is ok; the
        URL, certificates and all objects (etcd) are unchanged. Returns the new pid.
        With compact, etcd is compacted while the apiserver is down (watches that
        resume from an older resourceVersion then get 410 Gone)."""
        args = (["--hard"] if hard else []) + (["--compact"] if compact else [])
        return int(run_hack("restart-apiserver.sh", *args, str(self.dir), timeout=120))
