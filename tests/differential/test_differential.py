"""CI-sized differential run: small generated scenarios through kube-scheduler and
kubesched on a real control plane must agree (see harness/__init__.py for what is compared).

DIFF_FEATURES=spread,affinity,... picks generator features (their plugins must be in
kubesched's default profile; default: every feature it has the plugins of);
DIFF_SEED picks another series.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.differential import generator as gen
from tests.differential.harness import KUBE, MODE_DIRECT, MODE_KS, STRICT_KINDS, Harness
from tests.integration.conftest import ControlPlane

pytestmark = pytest.mark.integration

SEED = int(os.environ.get("DIFF_SEED", "1000"))
COUNT = 3  # indexes 0..2: the profiles default, most-allocated and weights


def _features() -> list[str]:
    """DIFF_FEATURES, or else every feature kubesched's default profile has the plugins
    of (all of them once DynamicResources is there): CI runs, rather than skips, while
    a feature's plugin is still being written."""
    wanted = os.environ.get("DIFF_FEATURES", "")
    features = gen.parse_features(wanted)
    missing = gen.unsupported_features(features)
    if missing and not wanted:
        return [f for f in features if f not in missing]
    if missing:
        pytest.skip(f"kubesched lacks the plugins of {missing}")
    return features


@pytest.mark.parametrize("index", range(COUNT))
def test_kube_scheduler_and_kubesched_agree(harness: Harness, index: int) -> None:
    scenario = gen.generate(SEED, index, features=_features(), size="small")
    comparison = harness.run(scenario)
    assert comparison.compared == comparison.steps
    # Bound sets, FailedScheduling texts (condition and events), later placements:
    assert comparison.bound_agree == comparison.compared, comparison.summary()
    assert comparison.message_agree == comparison.unbound_both, comparison.summary()
    # ...and the node wherever the best score is unique, and no other disagreement.
    assert comparison.ok, comparison.summary()


def _sabotage(config: dict[str, Any]) -> dict[str, Any]:
    """kubesched's side only: MostAllocated scoring and no TaintToleration filter."""
    profile = config["profiles"][0]
    profile["plugins"].setdefault("filter", {})["disabled"] = [{"name": "TaintToleration"}]
    profile["pluginConfig"] = [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
    ]
    return config


def test_the_harness_reports_a_planted_disagreement(
    diff_control_plane: ControlPlane, tmp_path: Path
) -> None:
    def node(name: str, cpu: str, **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "labels": {gen.ZONE_LABEL: "zone-a"},
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            **extra,
        }

    def pod(name: str, cpu: str) -> dict[str, Any]:
        container = {
            "name": "c",
            "image": gen.DEFAULT_IMAGE,
            "resources": {"requests": {"cpu": cpu}},
        }
        return {"name": name, "labels": {"app": "web"}, "spec": {"containers": [container]}}

    scenario = {
        "name": "planted",
        "features": [],
        "profile": "default",
        "config": gen.profile_config("default", []),
        "nodes": [
            node("n0", "2"),
            node("n1", "8"),
            node("n2", "16", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        ],
        # p0: LeastAllocated (kube-scheduler) wants n1, MostAllocated (kubesched) n0.
        # p1: fits only the tainted n2, which kube-scheduler must not use.
        "pods": [pod("p0", "1"), pod("p1", "12")],
    }
    harness = Harness(diff_control_plane, tmp_path, sabotage=_sabotage)
    try:
        comparison = harness.run(scenario)
    finally:
        harness.close()
    found = [(d.kind, d.pod, d.mode) for d in comparison.disagreements]
    assert found[0] == ("node", "p0", MODE_DIRECT), comparison.summary()
    assert (comparison.disagreements[0].kube, comparison.disagreements[0].kubesched) == ("n1", "n0")
    # From there on each run is checked against kubesched in-process on its own state:
    # kube-scheduler agrees with it, the sabotaged kubesched run binds what cannot fit.
    assert found[1:] == [("predict", "p1", MODE_KS)], comparison.summary()
    assert comparison.runs[KUBE].steps[1].message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )


def test_dra_runs_start_from_the_same_devices(
    diff_control_plane: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kube-scheduler on both sides of DRA scenarios (kubesched's own DynamicResources
    is not needed): the second run must see every device free again (the first run's
    claims deleted, classes and slices shared), so both runs agree run against run,
    claims' allocations included. Leaked allocations would make devices scarce in the
    second run."""
    real_start = Harness._start

    def kube_on_both_sides(
        self: Harness, side: str, config_path: Path, work: Path, gates: str = ""
    ) -> Any:
        return real_start(self, KUBE, config_path, work, gates)

    monkeypatch.setattr(Harness, "_start", kube_on_both_sides)
    harness = Harness(diff_control_plane, tmp_path)
    claims = agree = 0
    try:
        for index in (0, 4):
            comparison = harness.run(gen.generate(11, index, features=["dra"]))
            claims, agree = claims + comparison.claims, agree + comparison.claims_agree
            # The in-process predictions are kubesched's: only run against run counts.
            direct = [
                (d.kind, d.pod)
                for d in comparison.disagreements
                if d.mode == MODE_DIRECT and d.kind in STRICT_KINDS
            ]
            assert not direct, comparison.summary()
    finally:
        harness.close()
    assert claims and agree == claims
