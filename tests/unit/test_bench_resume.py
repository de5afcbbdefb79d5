"""A bench run writes its results after each workload, so a run stopped part way
keeps them; `python -m bench.report --merge` makes one table of several runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.report import main as report_main
from bench.report import merge
from bench.run import run_bench


class Stop(Exception):
    pass


def stop_at(text: str) -> Callable[[str], None]:
    def log(line: str) -> None:
        if line.startswith(text):
            raise Stop(line)

    return log


def test_a_stopped_run_keeps_its_finished_workloads_and_runs_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options: dict[str, Any] = {
        "size": "tiny",
        "modes": ["inprocess"],
        "out_dir": tmp_path,
        "make_plot": False,
        "show_table": False,
        "quiet_wait": 0,
    }
    with pytest.raises(Stop):
        run_bench(
            ["SchedulingBasic", "SchedulingNodeAffinity"],
            log=stop_at("in-process SchedulingNodeAffinity"),
            **options,
        )
    (first,) = tmp_path.glob("results-*.json")
    stopped = json.loads(first.read_text())
    assert stopped["complete"] is False
    assert stopped["workloads"]["SchedulingBasic"]["inprocess"]["status"] == "ok"
    assert "inprocess" not in stopped["workloads"]["SchedulingNodeAffinity"]

    rest, second = run_bench(["SchedulingNodeAffinity"], log=None, **options)
    assert rest["complete"] is True
    merged = merge([stopped, rest], [first.name, second.name])
    assert list(merged["workloads"]) == ["SchedulingBasic", "SchedulingNodeAffinity"]
    assert merged["workloads"]["SchedulingBasic"]["source"]["complete"] is False
    assert merged["workloads"]["SchedulingNodeAffinity"]["source"]["file"] == second.name

    report_main(["--merge", str(first), str(second)])
    out = capsys.readouterr().out
    assert "| SchedulingBasic |" in out and "| SchedulingNodeAffinity |" in out
    assert "a run stopped before its end" in out


def test_runs_of_different_sizes_are_not_merged() -> None:
    small = {"size": "small", "kubernetes_version": "v1.36.3", "workloads": {}}
    big = dict(small, size="5000")
    with pytest.raises(ValueError, match=r"b\.json: size '5000', not 'small' as in a\.json"):
        merge([small, big], ["a.json", "b.json"])
