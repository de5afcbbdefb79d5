"""Fixtures of the differential tests: one control plane for the package, a Harness.

The cluster is this package's own (tests/integration's fixtures are not visible
here): started once for tests/differential and torn down after its last test.
Set KUBESCHED_DIFF_CLUSTER_ENV=<dir>/env to use a cluster already running
(hack/cluster-up.sh) instead, e.g. while working on the harness.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.differential.harness import Harness
from tests.differential.run import control_plane
from tests.integration.conftest import ControlPlane, HackScriptError, ensure_binaries


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the binaries before the first test (a cold build would eat the first
    test's timeout), as tests/integration/conftest.py does for its tests."""
    here = Path(__file__).parent
    if any(
        item.get_closest_marker("integration") and Path(item.path).is_relative_to(here)
        for item in session.items
    ):
        with contextlib.suppress(HackScriptError):
            ensure_binaries()


@pytest.fixture(scope="package")
def diff_control_plane() -> Iterator[ControlPlane]:
    env = os.environ.get("KUBESCHED_DIFF_CLUSTER_ENV")
    with control_plane(Path(env) if env else None) as cp:
        yield cp


@pytest.fixture(scope="package")
def harness(
    diff_control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Harness]:
    h = Harness(diff_control_plane, tmp_path_factory.mktemp("differential"))
    try:
        yield h
    finally:
        h.close()
