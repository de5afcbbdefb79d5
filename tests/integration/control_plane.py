"""The control plane the integration tests run on: the hack/ scripts (run_hack, and
ensure_binaries, which builds kube-apiserver, kube-scheduler and etcd once per session),
the repository's paths, a free loopback port, and ControlPlane: a cluster started by
hack/cluster-up.sh, as its DIR/env describes it.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.admin_api import AdminApi

REPO_ROOT = Path(__file__).resolve().parents[2]
HACK_DIR = REPO_ROOT / "hack"
DEPLOY_DIR = REPO_ROOT / "deploy"

# A cold build (no Go cache) of kube-apiserver + kube-scheduler takes ~12-25 min.
BUILD_TIMEOUT = 45 * 60
CLUSTER_UP_TIMEOUT = 180


# --------------------------------------------------------------------- hack/ scripts
class HackScriptError(RuntimeError):
    pass


def run_hack(script: str, *args: str, timeout: float = 300) -> str:
    """Run hack/SCRIPT ARGS; return the last line of its stdout (the scripts' result).

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
        )
    except subprocess.TimeoutExpired as exc:
        raise HackScriptError(f"{' '.join(cmd)} timed out after {timeout:.0f}s") from exc
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.splitlines()[-40:])
        raise HackScriptError(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else ""


_binaries: tuple[Path, Path] | HackScriptError | None = None


def ensure_binaries() -> tuple[Path, Path]:
    """(k8s bin dir, etcd bin dir), building them first if they are not cached.

    Both build scripts are no-ops (well under a second) when the binaries exist.
    The result, or the failure, is remembered for the whole session.
    """
    global _binaries
    if _binaries is None:
        try:
            k8s = Path(run_hack("build-k8s.sh", timeout=BUILD_TIMEOUT))
            etcd = Path(run_hack("build-etcd.sh", timeout=BUILD_TIMEOUT))
            _binaries = (k8s, etcd)
        except HackScriptError as exc:
            _binaries = exc
    if isinstance(_binaries, HackScriptError):
        raise _binaries
    return _binaries


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------- the cluster
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
    def from_env_file(cls, env_file: Path) -> ControlPlane:
        env: dict[str, str] = {}
        for line in env_file.read_text().splitlines():
            name, sep, value = line.partition("=")
            if sep:
                env[name.strip()] = value.strip()
        return cls(
            dir=env_file.parent,
            kubeconfig=Path(env["KUBECONFIG"]),
            scheduler_kubeconfig=Path(env["SCHEDULER_KUBECONFIG"]),
            url=env["APISERVER_URL"],
            ca_cert=Path(env["CA_CERT"]),
            admin_cert=Path(env["ADMIN_CERT"]),
            admin_key=Path(env["ADMIN_KEY"]),
            bin_dir=Path(env["K8S_BIN_DIR"]),
            env=env,
        )

    def binary(self, name: str) -> Path:
        """Path of kube-apiserver / kube-scheduler (K8S_BIN_DIR) or etcd (ETCD_BIN_DIR)."""
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

    def admin_api(self, **kwargs: Any) -> AdminApi:
        return AdminApi(self, **kwargs)
