"""Attempts per pod: read from either scheduler's log, compared where deterministic
(harness/records.attempts_in_log, harness/compare.compare_attempts). No cluster."""

from __future__ import annotations

import importlib
from datetime import datetime
from typing import Any

import pytest

from tests.differential import generator as gen
from tests.differential.harness import KUBE, KUBESCHED, Run, Step
from tests.differential.harness.compare import busy_steps, compare_attempts
from tests.differential.harness.records import Comparison, attempts_in_log
from tests.differential.harness.report import Totals
from tests.differential.harness.stepped import (
    MODE_SIMULATE,
    compare_simulated_attempts,
    simulate_stepped,
)

# The module (the package exports the function compare under the same name).
compare_module = importlib.import_module("tests.differential.harness.compare")
NEAR = datetime(2026, 11, 28, 23, 0, 0).timestamp()


def test_attempts_are_read_from_both_schedulers_log_lines() -> None:
    log = "\n".join(
        [
            # kube-scheduler v1.36.3, --v=3 (schedule_one.go's line)
            'I1128 22:36:25.679877   11668 schedule_one.go:123] "Attempting to schedule pod" '
            'pod="d2-kube/p00"',
            'I1128 22:36:25.722709   11668 schedule_one.go:123] "Attempting to schedule pod" '
            'pod="d2-kube/p01"',
            'I1128 22:36:25.722709   11668 schedule_one.go:481] "Successfully bound pod to node" '
            'pod="d2-kube/p01" node="n1"',
            'I1128 22:36:26.112268   11668 schedule_one.go:123] "Attempting to schedule pod" '
            'pod="d2-kube/p00"',
            'I1128 22:36:26.2   1 schedule_one.go:123] "Attempting to schedule pod" pod="x/p00"',
            # kubesched -v 3
            'I1128 22:36:47.557600   11931 schedule_one.py:83] "Attempting to schedule pod" '
            'pod="other-ks/p00"',
        ]
    )
    got = attempts_in_log(log, "d2-kube", NEAR)
    assert {pod: len(times) for pod, times in got.items()} == {"p00": 2, "p01": 1}
    assert got["p00"][0] == datetime(2026, 11, 28, 22, 36, 25, 679877).timestamp()
    assert list(attempts_in_log(log, "other-ks", NEAR)) == ["p00"]
    # A line of 31 December read on 1 January belongs to the year before.
    late = 'I1231 23:59:59.000000 1 x.go:1] "Attempting to schedule pod" pod="n/p"'
    new_year = datetime(2027, 1, 1, 0, 0, 5).timestamp()
    (when,) = attempts_in_log(late, "n", new_year)["p"]
    assert when == datetime(2026, 12, 31, 23, 59, 59).timestamp()


@pytest.fixture(autouse=True)
def _no_simulation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The made-up scenarios below are not complete enough to simulate."""
    if "simulat" not in request.node.name:
        monkeypatch.setattr(compare_module, "compare_simulated_attempts", lambda *a: None)


def _scenario(n: int) -> dict[str, Any]:
    return {
        "name": "s",
        "nodes": [{"name": "n0", "labels": {}}],
        "pods": [{"name": f"p{i:02d}", "labels": {}, "spec": {}} for i in range(n)],
    }


def _run(
    side: str,
    steps: list[tuple[str, str | None]],
    attempts: dict[str, list[float]] | None,
    conditions: dict[str, str] | None = None,
) -> Run:
    """Steps (pod, node or None) created at t = 10, 20, ...; ATTEMPTS: times."""
    run = Run(side, "ns")
    placements: dict[str, str | None] = {}
    for i, (pod, node) in enumerate(steps):
        placements = {**placements, pod: node}
        run.steps.append(
            Step(
                pod,
                "bound" if node else "unschedulable",
                node=node,
                began=10.0 * (i + 1),
                placements=placements,
            )
        )
    run.final = dict(placements)
    run.attempts = attempts
    run.conditions = conditions or {}
    return run


def test_equal_attempts_agree_and_count_in_the_rates() -> None:
    steps = [("p00", None), ("p01", "n0"), ("p02", None)]
    # p00 fails, is retried once when p01 is bound (its step's window), fails again.
    attempts = {"p00": [11.0, 21.5], "p01": [21.0], "p02": [31.0]}
    result = Comparison("s")
    compare_attempts(
        _scenario(3), _run(KUBE, steps, attempts), _run(KUBESCHED, steps, attempts), result, None
    )
    assert result.disagreements == []
    assert (result.attempts, result.attempts_agree) == (3, 3)
    assert result.pod_attempts["p00"][KUBE].windows == {0: 1, 1: 1}
    totals = Totals()
    totals.add(result)
    assert "attempts per pod (where both deterministic): 3/3 (100.0%)" in totals.lines()


def test_a_retry_one_scheduler_makes_and_the_other_does_not_is_a_disagreement() -> None:
    steps = [("p00", None), ("p01", "n0")]
    kube = _run(KUBE, steps, {"p00": [11.0], "p01": [21.0]})
    ks = _run(KUBESCHED, steps, {"p00": [11.0, 21.5], "p01": [21.0]})
    result = Comparison("s")
    compare_attempts(_scenario(2), kube, ks, result, None)
    (d,) = result.disagreements
    assert (d.kind, d.pod, d.step, d.kube, d.kubesched) == ("attempts", "p00", 1, 1, 2)
    assert d.detail.endswith("1: 0, 1")  # step 1 (p01 bound) woke p00 in kubesched only
    assert (result.attempts, result.attempts_agree) == (2, 1)


def test_busy_steps_and_steps_after_the_states_diverged_are_not_compared() -> None:
    scenario = _scenario(3)
    # Step 1 bound p01 and a retry bound p00 too: two events, in-flight timing.
    steps = [("p00", None), ("p01", "n0"), ("p02", None)]
    kube = _run(KUBE, steps, {"p00": [11.0, 21.5, 22.0], "p01": [21.0], "p02": [31.0]})
    ks = _run(KUBESCHED, steps, {"p00": [11.0, 21.5], "p01": [21.0], "p02": [31.0]})
    for run in (kube, ks):
        run.steps[1].placements = {"p00": "n0", "p01": "n0"}
        run.steps[2].placements = {"p00": "n0", "p01": "n0", "p02": None}
    assert busy_steps(scenario, kube) == {1}
    result = Comparison("s")
    compare_attempts(scenario, kube, ks, result, None)
    assert result.disagreements == []
    # Diverged at step 0: nothing from step 0 on is compared.
    result = Comparison("s")
    ks.attempts = {"p00": [11.0], "p01": [21.0], "p02": [31.0, 32.0]}
    compare_attempts(scenario, kube, ks, result, 0)
    assert (result.disagreements, result.attempts) == ([], 0)


def test_the_last_message_must_agree_when_every_window_was_compared() -> None:
    steps = [("p00", None), ("p01", "n0")]
    attempts = {"p00": [11.0, 21.5], "p01": [21.0]}
    kube = _run(KUBE, steps, attempts, {"p00": "0/1 nodes are available: 1 Too many pods."})
    ks = _run(KUBESCHED, steps, attempts, {"p00": "0/1 nodes are available: 1 Insufficient cpu."})
    result = Comparison("s")
    compare_attempts(_scenario(2), kube, ks, result, None)
    (d,) = result.disagreements
    assert (d.kind, d.pod) == ("attempts", "p00")
    assert d.detail.startswith("last FailedScheduling message")


def test_without_a_verbose_log_nothing_is_compared() -> None:
    steps: list[tuple[str, str | None]] = [("p00", None)]
    result = Comparison("s")
    compare_attempts(
        _scenario(1), _run(KUBE, steps, None), _run(KUBESCHED, steps, {"p00": [11.0]}), result, None
    )
    assert (result.attempts, result.disagreements) == (0, [])
    assert result.pod_attempts["p00"][KUBE].count is None


def test_the_stepped_simulation_counts_attempts_per_step_and_compares_them() -> None:
    """harness.stepped: the simulator given the pods one at a time, as the harness
    creates them; each step's window holds the attempts that step caused."""
    scenario = gen.generate(904, 7, features=["spread", "affinity", "preemption"])
    scenario.pop("pdbs", None)
    simulated = simulate_stepped(scenario)
    assert simulated is not None
    windows, placements, _ = simulated
    names = [p["name"] for p in scenario["pods"]]
    assert len(windows) == len(placements) == len(names)
    for i, name in enumerate(names):
        assert windows[i].get(name) == 1  # each pod's own first attempt, in its own step
        assert set(placements[i]) == set(names[: i + 1])
    # kube-scheduler's run as the simulation went, but one retry more in step 1.
    kube = Run(KUBE, "ns")
    for i, name in enumerate(names):
        node = placements[i][name]
        kube.steps.append(
            Step(name, "bound" if node else "unschedulable", node=node, began=10.0 * (i + 1),
                 placements=placements[i])
        )  # fmt: skip
    kube.attempts = {}
    for i, window in enumerate(windows):
        for pod, n in window.items():
            kube.attempts.setdefault(pod, []).extend([10.0 * (i + 1) + 0.5] * n)
    result = Comparison(scenario["name"])
    result.pod_attempts = {name: {KUBE: compare_module.pod_attempts(kube, name)} for name in names}
    compare_simulated_attempts(scenario, kube, result, set())
    assert result.simulated == result.simulated_agree > 0
    kube.attempts[names[0]].append(10.0 * len(names) + 0.7)
    result.pod_attempts[names[0]][KUBE] = compare_module.pod_attempts(kube, names[0])
    result.simulated = result.simulated_agree = 0
    compare_simulated_attempts(scenario, kube, result, set())
    (d,) = result.disagreements
    assert (d.kind, d.pod, d.mode, d.step) == ("attempts", names[0], MODE_SIMULATE, len(names) - 1)


def test_scenarios_the_simulation_cannot_load_are_not_simulated() -> None:
    scenario = gen.generate(904, 7, features=["volumes"])
    assert scenario.get("volumes")
    assert simulate_stepped(scenario) is None
