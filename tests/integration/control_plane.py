"""The control plane the integration tests run on: the hack/ scripts (run_hack, and
ensure_binaries, which builds kube-apiserver, kube-scheduler, kube-controller-manager
and etcd once per session), the repository's paths, a free loopback port, and
ControlPlane: a cluster started by hack/cluster-up.sh (etcd, kube-apiserver,
kube-controller-manager), as its DIR/env describes it.

The cluster itself is bench/control_plane.py's, shared with the benchmarks (which
must not import tests); ControlPlane adds the tests' admin client.
"""

from __future__ import annotations

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


_helm: Path | HackScriptError | None = None


def ensure_helm() -> Path:
    """helm (hack/build-helm.sh: built once through the Go module proxy, then cached),
    for rendering deploy/helm/kubesched. Remembered for the session like the others."""
    global _helm
    if _helm is None:
        try:
            _helm = Path(run_hack("build-helm.sh", timeout=BUILD_TIMEOUT)) / "helm"
        except HackScriptError as exc:
            _helm = exc
    if isinstance(_helm, HackScriptError):
        raise _helm
    return _helm


@dataclass(frozen=True)
class ControlPlane(shared.ControlPlane):
    """A cluster started by hack/cluster-up.sh (the fields come from DIR/env)."""

    def admin_api(self, **kwargs: Any) -> AdminApi:
        return AdminApi(self, **kwargs)
