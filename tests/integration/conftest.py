"""A real control plane (etcd, kube-apiserver and kube-controller-manager from hack/)
for integration tests.

Fixtures:

* ``control_plane`` (session): builds the binaries if needed (hack/build-k8s.sh,
  hack/build-etcd.sh), starts a cluster with hack/cluster-up.sh in a pytest tmp dir,
  yields a :class:`ControlPlane`; hack/cluster-down.sh at the end (the logs are
  copied to ``<tmp>/cluster-logs*`` first).
* ``api`` (function): an :class:`AdminApi` (system:masters client certificate).
  Nodes and pods created through it are deleted when the test ends, so that a
  kube-scheduler in a later test never sees them.
* ``namespace`` (function): a fresh, uniquely named namespace (deleted namespaces
  stay Terminating forever here: no namespace controller).
* ``kube_scheduler`` (function): ``kube_scheduler(config_path=None, **kw)`` starts the
  real kube-scheduler (see :func:`start_kube_scheduler`) and stops it after the test.

Every test here must carry ``@pytest.mark.integration`` (or ``pytestmark``).

The helpers are in control_plane.py, admin_api.py and kube_scheduler_proc.py. The
names they define stay importable from here, as they always were: tests/differential
imports them from tests.integration.conftest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.integration.admin_api import (
    KINDS,
    PAUSE_IMAGE,
    SA_GROUPS,
    AdminApi,
    ApiError,
    WaitTimeout,
    event_fields,
    sa_user,
    unique_name,
)
from tests.integration.control_plane import (
    BUILD_TIMEOUT,
    CLUSTER_UP_TIMEOUT,
    DEPLOY_DIR,
    HACK_DIR,
    REPO_ROOT,
    ControlPlane,
    HackScriptError,
    ensure_binaries,
    ensure_helm,
    free_port,
    run_hack,
)
from tests.integration.kube_scheduler_proc import (
    KubeSchedulerProcess,
    start_kube_scheduler,
    stop_process,
)
from tests.integration.kubesched_proc import KubeschedProcess

__all__ = [
    "BUILD_TIMEOUT",
    "CLUSTER_UP_TIMEOUT",
    "DEPLOY_DIR",
    "HACK_DIR",
    "KINDS",
    "PAUSE_IMAGE",
    "REPO_ROOT",
    "SA_GROUPS",
    "AdminApi",
    "ApiError",
    "ControlPlane",
    "HackScriptError",
    "KubeSchedulerProcess",
    "WaitTimeout",
    "ensure_binaries",
    "ensure_helm",
    "event_fields",
    "free_port",
    "run_hack",
    "sa_user",
    "start_kube_scheduler",
    "stop_process",
    "unique_name",
]


def _binaries_cached() -> bool:
    """Whether the default bin dir (as hack/lib.sh computes it) has all the binaries."""
    version = os.environ.get("K8S_VERSION") or (HACK_DIR / "k8s-version").read_text().strip()
    cache = Path(os.environ.get("KUBESCHED_CACHE") or Path.home() / ".cache" / "kubesched")
    bin_dir = cache / "k8s" / version / "bin"
    binaries = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl", "etcd")
    return all((bin_dir / b).exists() for b in binaries)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries before the first test when integration tests are selected.

    Done here rather than in the fixture so that a cold build (~12 min) does not
    count against the first test's pytest-timeout (600 s). A failure is reported
    by the ``control_plane`` fixture, i.e. by every integration test.
    """
    if not any(item.get_closest_marker("integration") for item in session.items):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not _binaries_cached():
        reporter.write_line(
            "building kube-apiserver, kube-scheduler, kube-controller-manager, kubectl and etcd "
            "with hack/build-*.sh "
            "(a cold build takes ~12 min)..."
        )
    with contextlib.suppress(HackScriptError):
        ensure_binaries()


# --------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    ensure_binaries()
    cluster_dir = tmp_path_factory.mktemp("cluster")
    try:
        env_file = Path(run_hack("cluster-up.sh", str(cluster_dir), timeout=CLUSTER_UP_TIMEOUT))
    except HackScriptError:
        # cluster-up stops what it started on failure; only the dir is left.
        with contextlib.suppress(HackScriptError):
            run_hack("cluster-down.sh", str(cluster_dir), timeout=60)
        raise
    cp = ControlPlane.from_env_file(env_file)
    try:
        yield cp
    finally:
        logs = tmp_path_factory.mktemp("cluster-logs")
        for log in cluster_dir.glob("**/*.log"):
            with contextlib.suppress(OSError):
                target = logs / log.relative_to(cluster_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(log, target)
        run_hack("cluster-down.sh", str(cluster_dir), timeout=120)


@pytest.fixture
def api(control_plane: ControlPlane) -> Iterator[AdminApi]:
    client = AdminApi(control_plane)
    try:
        yield client
    finally:
        client.cleanup()
        client.close()


@pytest.fixture
def namespace(api: AdminApi, request: pytest.FixtureRequest) -> str:
    """A fresh namespace named after the test (left behind: it could never finish
    terminating here; the pods created through ``api`` are deleted)."""
    name = unique_name(f"t-{request.node.name}", max_len=50)
    api.create_namespace(name, labels={"kubesched.test/name": name})
    return name


@pytest.fixture
def kube_scheduler(control_plane: ControlPlane) -> Iterator[Callable[..., KubeSchedulerProcess]]:
    """``kube_scheduler(config_path=None, **kw)``: start_kube_scheduler on the
    session cluster; every scheduler started is stopped when the test ends."""
    started: list[KubeSchedulerProcess] = []

    def start(
        config_path: str | Path | Mapping[str, Any] | None = None, **kwargs: Any
    ) -> KubeSchedulerProcess:
        proc = start_kube_scheduler(control_plane, config_path, **kwargs)
        started.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in reversed(started):
            proc.stop()


@pytest.fixture
def kubesched(control_plane: ControlPlane) -> Iterator[list[KubeschedProcess]]:
    """The `kubesched run` processes a test starts (start_kubesched), each appended
    here; all stopped when the test ends."""
    started: list[KubeschedProcess] = []
    yield started
    for proc in started:
        proc.stop()
