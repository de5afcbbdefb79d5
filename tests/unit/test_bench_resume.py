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


def _single_run(commit: str, stamp: str, rates: dict[str, float], ceiling: float) -> dict[str, Any]:
    """A `--repeat 1` results document of one workload at size 5000."""

    def result(rate: float) -> dict[str, Any]:
        return {"status": "ok", "pods_per_second": rate, "peak_rss_mb": rate / 10}

    return {
        "size": "5000",
        "kubernetes_version": "v1.36.3",
        "kubesched_commit": commit,
        "timestamp": stamp,
        "repeat": 1,
        "workloads": {
            "SchedulingBasic": {
                "params": {"nodes": 5000},
                "e2e": {who: result(rate) for who, rate in rates.items()},
                "ceiling": result(ceiling),
            }
        },
    }


def test_single_runs_of_one_commit_are_pooled_into_medians() -> None:
    runs = [
        _single_run("abc", "t1", {"kube-scheduler": 100, "kubesched": 300}, 700),
        _single_run("abc", "t2", {"kube-scheduler": 120, "kubesched": 200}, 600),
        _single_run("abc", "t3", {"kube-scheduler": 90, "kubesched": 250}, 800),
    ]
    merged = merge(runs, ["a.json", "b.json", "c.json"])
    entry = merged["workloads"]["SchedulingBasic"]
    assert entry["e2e"]["kube-scheduler"]["pods_per_second"] == 100
    assert entry["e2e"]["kubesched"]["pods_per_second"] == 250
    assert entry["e2e"]["kubesched"]["spread"]["pods_per_second"] == {
        "min": 200,
        "median": 250,
        "max": 300,
    }
    assert [r["pods_per_second"] for r in entry["e2e"]["kubesched"]["repeats"]] == [300, 200, 250]
    assert entry["ceiling"]["pods_per_second"] == 700
    assert entry["ratios"]["e2e_pods_per_second"] == 2.5
    assert entry["of_ceiling"]["e2e"]["kubesched"] == 35.7
    assert entry["source"]["pooled"] == 3
    assert entry["source"]["file"] == "a.json, b.json, c.json"
    assert merged["repeat"] == 3


def test_runs_of_another_commit_replace_rather_than_pool() -> None:
    older = _single_run("abc", "t1", {"kube-scheduler": 100, "kubesched": 300}, 700)
    newer = _single_run("def", "t2", {"kube-scheduler": 120, "kubesched": 200}, 600)
    merged = merge([older, older, newer], ["a.json", "b.json", "c.json"])
    entry = merged["workloads"]["SchedulingBasic"]
    assert entry["e2e"]["kubesched"]["pods_per_second"] == 200
    assert "repeats" not in entry["e2e"]["kubesched"]
    assert entry["source"]["file"] == "c.json"
    assert "pooled" not in entry["source"]
    assert merged["repeat"] == 1
