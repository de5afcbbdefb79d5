"""`kubesched sweep --ray-address` on a real Ray cluster started here (`ray start
--head` on loopback, 2 CPUs: two workers): the rows equal the local run's, variation
by variation, and a worker killed in the middle of the sweep loses nothing."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.ray_local import local_ray
from kubesched.cli.main import main
from kubesched.cluster.manifests import load_paths
from kubesched.framework.features import DEFAULT_GATES
from kubesched.framework.profile import ProfileConfig
from kubesched.plan.pools import load_pools
from kubesched.sweep.engines import LocalEngine, RayEngine
from kubesched.sweep.spec import Variation
from kubesched.sweep.task import SweepBase, VariationResult, VariationSetup
from tests.sweep.cluster import write_sweep
from tests.sweep.test_engines import _comparable, _processes


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A one-node Ray cluster on loopback with 2 CPUs (`ray start --head --port P
    --num-cpus 2`, bench/ray_local.py), stopped after the module."""
    with local_ray(cpus=2) as address:
        yield address


def _rows(document: dict[str, object]) -> list[dict[str, object]]:
    rows = document["variations"]
    assert isinstance(rows, list)
    return [{k: v for k, v in row.items() if k != "wallSeconds"} for row in rows]


def test_the_rows_on_ray_equal_the_local_ones(ray_address: str, tmp_path: Path) -> None:
    """docs/how-to/sweep.md's `ray start --head --port ... --num-cpus 2` (the
    ray_address fixture), then `kubesched sweep SPEC --ray-address ... --results ...`."""
    spec = write_sweep(
        tmp_path,
        {"grid": {"nodes": [{}, {"small": 2}, {"big": 1}], "scale": [1, 3]}},
        nodes=4,
        pods=40,
    )
    runner = CliRunner()
    local = runner.invoke(
        main,
        ["sweep", str(spec), "-o", "json", "--workers", "1", "--results", str(tmp_path / "a")],
    )
    assert local.exit_code == 0, local.stderr
    on_ray = runner.invoke(
        main,
        [
            "sweep",
            str(spec),
            "-o",
            "json",
            "--ray-address",
            ray_address,
            "--results",
            str(tmp_path / "b"),
        ],
    )
    assert on_ray.exit_code == 0, on_ray.stderr
    ray_document = json.loads(on_ray.stdout)
    assert ray_document["engine"] == "ray"
    assert _rows(ray_document) == _rows(json.loads(local.stdout))
    assert len(_rows(ray_document)) == 6


def test_a_ray_worker_killed_mid_sweep_loses_nothing(ray_address: str, tmp_path: Path) -> None:
    write_sweep(tmp_path, {"variations": [{}]}, nodes=16, pods=120, pod_cpu="250m")
    base = SweepBase(
        load_paths([tmp_path / "cluster.yaml"]),
        {p.name: p for p in load_pools(tmp_path / "pools.yaml")},
    )
    setups = [
        VariationSetup(
            Variation(i, {"small": i}, "default", 1.0 + i / 4, "", "x"),
            [ProfileConfig.default()],
            None,
            DEFAULT_GATES,
            0,
            1,
        )
        for i in range(6)
    ]
    rows: list[VariationResult] = []
    killed: list[int] = []

    def on_result(row: VariationResult) -> None:
        rows.append(row)
        if killed:
            return
        # A worker running a variation right now (Ray names its process after the task).
        busy = [pid for pid, _, cmd in _processes() if cmd.startswith(b"ray::_run_on_ray")]
        if busy:
            os.kill(busy[0], signal.SIGKILL)
            killed.append(busy[0])

    RayEngine(ray_address).run(base, setups, on_result)
    assert killed, "no busy Ray worker was seen to kill"
    assert sorted(r.index for r in rows) == list(range(6))
    assert not [r for r in rows if r.error]
    alone: list[VariationResult] = []
    LocalEngine(1).run(base, setups, alone.append)
    assert _comparable(rows) == _comparable(alone)
