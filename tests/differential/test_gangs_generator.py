"""The gangs feature of the generator and the comparison, without a cluster."""

from __future__ import annotations

import pytest

from tests.differential import generator as gen
from tests.differential.harness import KUBE, KUBESCHED, Run, Step, compare


def test_gangs_are_opt_in_and_known() -> None:
    assert "gangs" not in gen.parse_features(None)
    assert gen.parse_features("spread,gangs") == ["spread", "gangs"]
    assert gen.unsupported_features(["gangs"]) == {}
    with pytest.raises(ValueError, match=r"known: .*gangs"):
        gen.parse_features("gang")


@pytest.mark.parametrize("index", range(12))
def test_gangs_are_runs_of_alike_pods_with_min_count_their_size(index: int) -> None:
    scenario = gen.generate(60, index, features=["gangs"])
    pods = {p["name"]: p for p in scenario["pods"]}
    order = [p["name"] for p in scenario["pods"]]
    assert scenario["gangs"], "every scenario of the feature has a gang"
    for gang in scenario["gangs"]:
        members = gang["pods"]
        assert gang["minCount"] == len(members) >= 2
        first = order.index(members[0])
        assert order[first : first + len(members)] == members  # consecutive
        specs = [pods[m]["spec"] for m in members]
        assert all(s == specs[0] for s in specs)
        assert specs[0]["schedulingGroup"] == {"podGroupName": gang["name"]}
        manifest = gen.pod_group_manifest(gang, "ns")
        assert manifest["spec"]["schedulingPolicy"]["gang"]["minCount"] == len(members)
        assert gen.last_members(scenario)[members[-1]] == members
        assert all(gen.waits_for_group(scenario, m) for m in members[:-1])
        assert not gen.waits_for_group(scenario, members[-1])
    grouped = {m for g in scenario["gangs"] for m in g["pods"]}
    assert all("schedulingGroup" not in pods[n]["spec"] for n in order if n not in grouped)


def _gang_runs(
    notes: dict[str, dict[str, list[str]]] | None = None,
) -> tuple[dict[str, object], dict[str, Run]]:
    """Both runs of seed 60's first gang scenario with nothing bound; with NOTES, each
    member's FailedScheduling notes as NOTES[side][member] (the others: one shared
    note). A gang step's created object would make compare predict; it must not."""
    scenario = gen.generate(60, 0, features=["gangs"])
    gang = scenario["gangs"][0]
    runs = {}
    for side in (KUBE, KUBESCHED):
        run = Run(side, f"ns-{side}")
        placed: dict[str, str | None] = {}
        for pod in scenario["pods"]:
            name = pod["name"]
            member = name in gang["pods"]
            placed[name] = None
            run.steps.append(
                Step(
                    name,
                    "created" if member and name != gang["pods"][-1] else "unschedulable",
                    created={"metadata": {"name": name}} if member else {},
                    group=gang["name"] if member else "",
                    placements=dict(placed),
                )
            )
            if notes is not None:
                run.events[name] = notes[side].get(name, ["0/3 nodes are available."])
                run.conditions[name] = run.events[name][-1]
        runs[side] = run
    return scenario, runs


def test_gang_steps_get_no_single_pod_prediction() -> None:
    scenario, runs = _gang_runs()
    comparison = compare(scenario, runs[KUBE], runs[KUBESCHED], {})
    assert comparison.predictions == {}
    assert comparison.disagreements == []


def test_gang_steps_after_the_states_diverged_are_counted_not_judged() -> None:
    scenario = gen.generate(60, 0, features=["gangs"])
    gang = scenario["gangs"][0]
    first = scenario["pods"][0]["name"]
    assert first not in gang["pods"]
    runs = {}
    for side in (KUBE, KUBESCHED):
        run = Run(side, f"ns-{side}")
        placed: dict[str, str | None] = {}
        for pod in scenario["pods"]:
            name = pod["name"]
            member = name in gang["pods"]
            # The first pod binds in one run only: the states differ from there on.
            bound = name == first and side == KUBE
            placed[name] = scenario["nodes"][0]["name"] if bound else None
            run.steps.append(
                Step(
                    name,
                    "bound" if bound else ("created" if member else "unschedulable"),
                    node=placed[name],
                    group=gang["name"] if member else "",
                    placements=dict(placed),
                )
            )
        runs[side] = run
    comparison = compare(scenario, runs[KUBE], runs[KUBESCHED], {})
    assert comparison.unjudged == len(gang["pods"])
    assert comparison.disagreements[0].kind == "bound"
    assert not any(d.pod in gang["pods"] for d in comparison.disagreements)


def test_alike_gang_members_may_get_each_others_notes() -> None:
    """Which of two identical members kube-scheduler tries first is Go map order: the
    FitError and the "waiting" note may land on either, and that is agreement."""
    scenario = gen.generate(60, 0, features=["gangs"])
    first, second = scenario["gangs"][0]["pods"][:2]
    fit, wait = ["0/3 nodes are available: 3 Insufficient cpu."], ["pod group is unschedulable"]
    swapped = {KUBE: {first: fit, second: wait}, KUBESCHED: {first: wait, second: fit}}
    scenario, runs = _gang_runs(swapped)
    comparison = compare(scenario, runs[KUBE], runs[KUBESCHED], {})
    assert comparison.disagreements == []
    assert comparison.member_orders == 2
    # Different notes, not the same ones handed round: a disagreement.
    other = ["0/3 nodes are available: 3 Insufficient memory."]
    differ = {KUBE: {first: fit, second: wait}, KUBESCHED: {first: wait, second: other}}
    scenario, runs = _gang_runs(differ)
    comparison = compare(scenario, runs[KUBE], runs[KUBESCHED], {})
    assert {d.pod for d in comparison.disagreements} == {first, second}
    assert comparison.member_orders == 0


def test_alike_members_notes_match_as_events_agree_allows() -> None:
    """seed60-040: kube-scheduler's member A got the FitError and a retry's note, B the
    "waiting" note and the retry's; in kubesched A got "waiting" alone (its retry folded
    into the condition) and B the other two. Matched A↔B, each pair agrees."""
    scenario = gen.generate(60, 0, features=["gangs"])
    first, second = scenario["gangs"][0]["pods"][:2]
    fit, retry, wait = "0/3 nodes: 3 ports.", "0/3 nodes: 2 Insufficient memory.", "waiting"
    notes = {
        KUBE: {first: [fit, retry], second: [wait, retry]},
        KUBESCHED: {first: [wait], second: [fit, retry]},
    }
    scenario, runs = _gang_runs(notes)
    runs[KUBESCHED].conditions[first] = retry
    comparison = compare(scenario, runs[KUBE], runs[KUBESCHED], {})
    assert comparison.disagreements == []
    assert comparison.member_orders == 2
