"""`kubesched sweep` end to end on files: the table, JSON, the HTML page, a resumed
run, and one-line errors naming the SPEC's field for what only the command checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.cli.main import main
from tests.sweep.cluster import write_sweep


def _sweep(*args: str) -> tuple[int, str, str]:
    # Wide enough that rich does not wrap the table's reason column.
    runner = CliRunner(env={"COLUMNS": "200"})
    result = runner.invoke(main, ["sweep", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_json_rows_in_the_specs_order_then_resume_runs_nothing(tmp_path: Path) -> None:
    spec = write_sweep(
        tmp_path,
        {"grid": {"nodes": [{}, {"small": 1}, {"big": 1}], "scale": [1, 2]}},
        nodes=2,
        pods=12,
    )
    html = tmp_path / "sweep.html"
    code, out, err = _sweep(str(spec), "-o", "json", "--workers", "1", "--html", str(html))
    assert code == 0, err
    document = json.loads(out)
    rows = document["variations"]
    assert [r["index"] for r in rows] == list(range(6))
    # 8 cpu of room for 12 pods of 1 cpu; a small node adds 4, a big one 16.
    assert [(r["params"]["nodes"], r["params"]["scale"], r["placed"]) for r in rows] == [
        ("-", "1", 8),
        ("-", "2", 8),
        ("small:1", "1", 12),
        ("small:1", "2", 12),
        ("big:1", "1", 12),
        ("big:1", "2", 24),
    ]
    assert rows[5]["cost"] == 3.0
    results = Path(document["results"])
    assert results == spec.with_suffix(".results.jsonl")
    assert len(results.read_text().splitlines()) == 7  # the header and 6 rows
    page = html.read_text()
    assert "<svg" in page and "Pending pods against nodes added" in page
    assert page.count("<tr>") == 7  # the header and 6 rows
    # Again without --resume: refused, the file kept.
    code, _, err = _sweep(str(spec), "-o", "json")
    assert code == 1
    assert "a results file is there already: --resume" in err
    code, out, err = _sweep(str(spec), "-o", "json", "--resume")
    assert code == 0, err
    assert json.loads(out)["variations"] == rows
    assert len(results.read_text().splitlines()) == 7


def test_text_table_names_what_does_not_vary(tmp_path: Path) -> None:
    spec = write_sweep(tmp_path, {"grid": {"nodes": [{}, {"small": 1}]}}, nodes=2, pods=12)
    code, out, _ = _sweep(str(spec), "--workers", "1")
    assert code == 0
    assert "every variation: config default, scale 1, gates -" in out
    assert "4 Insufficient cpu" in out
    assert "12/12" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"variations": [{"nodes": {"tiny": 1}}]},
            "variations[0].nodes.tiny: no such pool in {folder}/pools.yaml (pools: big, small)",
        ),
        (
            {"grid": {"nodes": [{"big": 5}]}},
            "grid[nodes[0]].nodes.big: 5 nodes, but the pool's max is 4",
        ),
        (
            {"variations": [{"config": "missing.yaml"}]},
            "variations[0].config: {folder}/missing.yaml: no such file",
        ),
        (
            {"variations": [{"featureGates": "NoSuchGate=true"}]},
            "variations[0].featureGates: unrecognized feature gate: NoSuchGate (kubesched can set:",
        ),
    ],
)
def test_what_only_the_command_checks_is_refused_before_any_run(
    tmp_path: Path, spec: dict[str, object], message: str
) -> None:
    path = write_sweep(tmp_path, spec)
    code, out, err = _sweep(str(path))
    assert code == 1
    assert out == ""
    line = f"Error: {path}: {message.format(folder=tmp_path)}"
    assert err.startswith(line)
    assert len(err.strip().splitlines()) == 1
    assert not path.with_suffix(".results.jsonl").exists()


def test_a_config_the_loader_refuses_names_the_variation(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: x, plugins: {multiPoint: {enabled: [{name: Nope}]}}}]\n"
    )
    path = write_sweep(tmp_path, {"variations": [{"config": "bad.yaml"}]})
    code, _, err = _sweep(str(path))
    assert code == 1
    assert err.startswith(f"Error: {path}: variations[0].config: ")
    assert "Nope" in err and len(err.strip().splitlines()) == 1
