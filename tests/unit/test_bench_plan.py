"""bench/plan.py and bench/sweep.py at a smoke size: the figures are there and hold
together (no speed is asserted: that is the benchmark's, on a quiet machine)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import yaml

from bench.plan import bench_add, bench_remove
from bench.sweep import POOLS, cluster_documents, setups
from kubesched.cluster.manifests import load_paths
from kubesched.plan.pools import load_pools
from kubesched.sweep.engines import LocalEngine
from kubesched.sweep.task import SweepBase, VariationResult


def test_add_nodes_figures_hold_together() -> None:
    row = bench_add(40, timeout=1.0, repeat=1, workers=1, quiet_wait=0)
    assert row["verified"]["scheduled"] is True
    solver, estimator = Decimal(row["solver"]["cost"]), Decimal(row["estimator"]["cost"])
    assert 0 < solver <= estimator
    assert row["bound"] is not None and Decimal(row["bound"]) <= solver
    assert row["gap_to_bound"] is not None and row["gap_to_bound"] >= 0


def test_remove_nodes_frees_fewer_with_pdbs() -> None:
    free = bench_remove(30, repeat=1, with_pdbs=False, quiet_wait=0)
    held = bench_remove(30, repeat=1, with_pdbs=True, quiet_wait=0)
    assert free["pods"] == held["pods"] > 30
    assert 0 < free["verified"] <= free["planned"] < 30
    assert held["verified"] <= free["verified"]
    assert sum(held["blocked"].values()) == 30 - held["planned"]


def test_sweep_bench_variations_run(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all(cluster_documents(12, 30)))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(POOLS))
    base = SweepBase(
        load_paths([tmp_path / "c.yaml"]), {p.name: p for p in load_pools(tmp_path / "p.yaml")}
    )
    work = setups(tmp_path, 6)
    assert len(work) == 6 and len({s.variation.id for s in work}) == 6
    rows: list[VariationResult] = []
    LocalEngine(1).run(base, work, rows.append)
    assert [r.index for r in rows] == list(range(6)) and not any(r.error for r in rows)
    # The first variations add no node and scale the 30 pending pods 1 to 3 times.
    assert [r.pods for r in rows[:5]] == [30, 45, 60, 75, 90]
