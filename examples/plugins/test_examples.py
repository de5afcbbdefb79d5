"""The example plugins, alone and in the full default profile through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from examples.plugins.app_pool import REASON, AppPool
from examples.plugins.cheapest_node import CheapestNode
from kubesched.cli.main import main
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node, make_pod, make_table

HERE = Path(__file__).resolve().parent
NODES = [
    make_node("cheap", labels={"example.com/pool": "web", "example.com/hourly-cost": "0.10"}),
    make_node("mid", labels={"example.com/pool": "db", "example.com/hourly-cost": "0.55"}),
    make_node("dear", labels={"example.com/pool": "web", "example.com/hourly-cost": "1.00"}),
    make_node("unpriced"),
]


def test_app_pool_keeps_pods_in_their_pool() -> None:
    table = make_table(NODES)
    rows = table.order()
    pod = PodInfo(make_pod("p", labels={"example.com/pool": "web"}))
    verdicts = AppPool().filter(CycleState(), pod, table, rows)
    passed = {table.names[r] for r in rows[verdicts.passed()]}
    assert passed == {"cheap", "dear"}
    [(reason, mask)] = verdicts.reasons
    assert reason == REASON
    assert {table.names[r] for r in rows[mask]} == {"mid", "unpriced"}


def test_app_pool_ignores_pods_without_a_pool_and_refuses_unknown_pools() -> None:
    table = make_table(NODES)
    rows = table.order()
    free = AppPool().filter(CycleState(), PodInfo(make_pod("p")), table, rows)
    assert free.passed().all()
    nowhere = PodInfo(make_pod("p", labels={"example.com/pool": "gpu"}))
    assert not AppPool().filter(CycleState(), nowhere, table, rows).passed().any()


def test_cheapest_node_scores_cheapest_highest() -> None:
    table = make_table(NODES)
    rows = table.order()
    plugin = CheapestNode()
    pod = PodInfo(make_pod("p"))
    scores = plugin.score(CycleState(), pod, table, rows)
    plugin.normalize_scores(CycleState(), pod, scores)
    by_node = dict(zip((table.names[r] for r in rows), scores.tolist(), strict=True))
    # cost 10, 55, 100 cents: 100 - (c - 10) * 100 // 90
    assert by_node == {"cheap": 100, "mid": 50, "dear": 0, "unpriced": 0}
    assert scores.dtype == np.int64


def test_both_plugins_through_the_cli(tmp_path: Path) -> None:
    manifest = tmp_path / "cluster.yaml"
    nodes = "\n".join(
        f"""---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{example.com/pool: {pool}, example.com/hourly-cost: "{cost}"}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}"""
        for name, pool, cost in [
            ("w-cheap", "web", "0.1"),
            ("w-dear", "web", "0.9"),
            ("d", "db", "0.01"),
        ]
    )
    pods = "\n".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: web-{i}, labels: {{example.com/pool: web}}}}
spec: {{containers: [{{name: c, image: nginx}}]}}"""
        for i in range(3)
    )
    manifest.write_text(nodes + "\n" + pods + "\n")
    result = CliRunner().invoke(
        main,
        [
            "simulate",
            "-f",
            str(manifest),
            "-o",
            "json",
            "--plugin",
            f"{HERE / 'app_pool.py'}:AppPool",
            "--plugin",
            "examples.plugins.cheapest_node:CheapestNode",
            "--enable",
            "AppPool",
            "--enable",
            "CheapestNode:10",
        ],
    )
    assert result.exit_code == 0, result.output
    placements = json.loads(result.stdout)["placements"]
    # The pool keeps them off "d" (the cheapest of all); cost sends them to w-cheap.
    assert set(placements.values()) == {"w-cheap"}
