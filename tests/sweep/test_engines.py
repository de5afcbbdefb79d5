"""The local engine and the results file: every variation once, the same rows as a
run in one process, through failures, a killed worker and a resumed sweep."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import msgspec
import pytest

from kubesched.cluster.manifests import load_paths
from kubesched.framework.features import DEFAULT_GATES
from kubesched.framework.profile import ProfileConfig
from kubesched.plan.pools import load_pools
from kubesched.sweep.engines import LocalEngine
from kubesched.sweep.spec import Variation
from kubesched.sweep.store import ResultsStore, StoreError
from kubesched.sweep.task import SweepBase, VariationResult, VariationSetup
from tests.sweep.cluster import write_sweep


def _base(tmp_path: Path) -> SweepBase:
    # Big enough that a variation takes a while (a worker is busy when one is killed).
    write_sweep(tmp_path, {"variations": [{}]}, nodes=20, pods=160, pod_cpu="250m")
    state = load_paths([tmp_path / "cluster.yaml"])
    return SweepBase(state, {p.name: p for p in load_pools(tmp_path / "pools.yaml")})


def _setups(count: int) -> list[VariationSetup]:
    profiles = [ProfileConfig.default()]
    return [
        VariationSetup(
            Variation(i, {"small": i % 4, "big": i // 4}, "default", 1 + (i % 3) / 2, "", "x"),
            profiles,
            None,
            DEFAULT_GATES,
            0,
            1,
        )
        for i in range(count)
    ]


def _comparable(rows: list[VariationResult]) -> list[dict[str, object]]:
    """The rows without their wall time, in the SPEC's order."""
    out = []
    for row in sorted(rows, key=lambda r: r.index):
        data = msgspec.to_builtins(row)
        data.pop("wallSeconds")
        out.append(data)
    return out


def _processes() -> list[tuple[int, int, bytes]]:
    """(pid, parent pid, command line) of every process."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        found.append((int(entry), int(stat.rsplit(")", 1)[1].split()[1]), cmdline))
    return found


def _workers() -> list[int]:
    """The pool's workers: children of this process's fork server."""
    processes = _processes()
    servers = {pid for pid, ppid, cmd in processes if ppid == os.getpid() and b"forkserver" in cmd}
    return [pid for pid, ppid, _ in processes if ppid in servers]


def test_workers_give_the_rows_one_process_gives(tmp_path: Path) -> None:
    base, setups = _base(tmp_path), _setups(6)
    here: list[VariationResult] = []
    LocalEngine(1).run(base, setups, here.append)
    pooled: list[VariationResult] = []
    LocalEngine(2).run(base, setups, pooled.append)
    assert len(pooled) == 6
    assert _comparable(pooled) == _comparable(here)
    # Not the same row eight times: the variations differ.
    assert len({(r.placed, r.nodes) for r in here}) > 3


def test_a_killed_worker_loses_no_variation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base, setups = _base(tmp_path), _setups(6)
    rows: list[VariationResult] = []
    killed: list[int] = []

    def on_result(row: VariationResult) -> None:
        rows.append(row)
        if not killed:
            workers = _workers()
            assert workers, "no worker process to kill"
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])

    with caplog.at_level(logging.WARNING, logger="kubesched.sweep"):
        LocalEngine(2).run(base, setups, on_result)
    assert killed
    assert "running it again" in caplog.text  # the pool broke, and was made again
    assert sorted(r.index for r in rows) == list(range(6))  # each once
    assert not [r for r in rows if r.error]
    alone: list[VariationResult] = []
    LocalEngine(1).run(base, setups, alone.append)
    assert _comparable(rows) == _comparable(alone)


def test_a_variation_that_fails_every_try_is_a_row_with_its_error(tmp_path: Path) -> None:
    base = _base(tmp_path)
    good, bad = _setups(2)
    # A pool the base does not have: the task raises, every time.
    bad = VariationSetup(
        Variation(1, {"ghost": 1}, "default", 1.0, "", "x"),
        good.profiles,
        None,
        DEFAULT_GATES,
        0,
        1,
    )
    for workers in (1, 2):
        rows: list[VariationResult] = []
        LocalEngine(workers, retries=1).run(base, [good, bad], rows.append)
        by_index = {r.index: r for r in rows}
        assert sorted(by_index) == [0, 1]
        assert by_index[0].error == ""
        assert by_index[1].error == "failed 2 times; last: KeyError: 'ghost'"


def test_a_resumed_sweep_runs_only_what_the_file_lacks(tmp_path: Path) -> None:
    base, setups = _base(tmp_path), _setups(4)
    path = tmp_path / "results.jsonl"
    store = ResultsStore(path, "sweep.yaml", "digest-1", resume=False)
    LocalEngine(1).run(base, setups[:2], store.add)
    store.close()
    # A crash mid-write leaves half a line: that row is dropped and runs again.
    with path.open("ab") as out:
        out.write(b'{"id": "nodes=small:2')
    with pytest.raises(StoreError, match="--resume"):
        ResultsStore(path, "sweep.yaml", "digest-1", resume=False)
    with pytest.raises(StoreError, match="another SPEC"):
        ResultsStore(path, "sweep.yaml", "digest-2", resume=True)
    store = ResultsStore(path, "sweep.yaml", "digest-1", resume=True)
    assert store.done() == {setups[0].variation.id, setups[1].variation.id}
    todo = [s for s in setups if s.variation.id not in store.done()]
    ran: list[VariationResult] = []

    def add(row: VariationResult) -> None:
        ran.append(row)
        store.add(row)

    LocalEngine(1).run(base, todo, add)
    # A row offered twice counts once.
    assert store.add(ran[0]) is False
    store.close()
    assert [r.index for r in ran] == [2, 3]
    final = ResultsStore(path, "sweep.yaml", "digest-1", resume=True)
    assert [r.index for r in final.ordered()] == [0, 1, 2, 3]
    final.close()
