"""kubesched's simulator driven as the harness drives a real scheduler: the scenario's
pods added one at a time, in the scenario's order, each once the simulation is quiet
(simulate_stepped); and its attempts per pod compared with kube-scheduler's
(compare_simulated_attempts).

`kubesched simulate` (and harness.inprocess.simulate) starts with every pod pending:
they are tried in activeQ's order (priority, then arrival), so a pod tried before a
pod created after it in the harness, whose binding then wakes it, is tried once more
than kube-scheduler tried it, where the later pod was already bound. Those attempts
and messages are the simulator's answer to another question (all pods at once), not
a deviation; fed the pods one at a time, the simulator answers the harness's."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

from kubesched.cluster.manifests import load_documents
from kubesched.config.file import parse_config
from kubesched.simulation.simulator import World, run_until_quiet, start_session
from tests.differential import generator as gen
from tests.differential.harness.records import (
    KUBE,
    SCHEDULER_NAME,
    Comparison,
    Disagreement,
    Run,
)

MODE_SIMULATE = "kube-scheduler vs kubesched simulate, pods one at a time"
NAMESPACE = "default"
# Scenario parts whose objects the in-process simulation here does not load (volumes
# and DRA objects come from controllers on the cluster; workloads' Services change
# PodTopologySpread's default constraints; gangs are placed by the pod group cycle;
# extenders are served only while the harness runs the scenario, and a failing one's
# retries come on the error backoff's timer).
UNSUPPORTED = ("volumes", "dra", "workloads", "gangs", "extenders")


Stepped = tuple[list[dict[str, int]], list[dict[str, str | None]], dict[str, str]]


def simulate_stepped(
    scenario: Mapping[str, Any], run: Run | None = None, seed: int = 1
) -> Stepped | None:
    """Per step, the attempts each pod got during it (the step's pod added, then the
    simulation run until quiet: retries the step woke included), and the placements
    after it; at the end, each unbound pod's last FailedScheduling message; None for
    a scenario with UNSUPPORTED parts. RUN: a run whose PDBs (as
    the disruption controller left them, Run.objects) preemption respects."""
    if any(scenario.get(part) for part in UNSUPPORTED):
        return None
    names = {n["name"]: n["name"] for n in scenario["nodes"]}
    # The pods the API server rejected in RUN are not created here either.
    rejected = {s.pod for s in run.steps if s.outcome == "rejected"} if run is not None else set()
    objects: list[dict[str, Any]] = [
        *gen.priority_class_manifests(),
        *(gen.node_manifest(n, n["name"]) for n in scenario["nodes"]),
        *(
            gen.pod_manifest(p, NAMESPACE, SCHEDULER_NAME, names)
            for p in scenario["pods"]
            if p["name"] not in rejected
        ),
    ]
    for obj in run.objects if run is not None else ():
        if obj.get("kind") == "PodDisruptionBudget":
            pdb = copy.deepcopy(obj)
            pdb["metadata"] = {**pdb["metadata"], "namespace": NAMESPACE}
            pdb["metadata"].pop("managedFields", None)
            objects.append({"apiVersion": "policy/v1", **pdb})
    state = load_documents([("scenario", i + 1, o) for i, o in enumerate(objects)])
    if state.problems:
        return None
    config = parse_config(gen.scheduler_config(scenario, SCHEDULER_NAME))
    order = [p["name"] for p in scenario["pods"]]
    return asyncio.run(_stepped(state, config, seed, order))


async def _stepped(state: Any, config: Any, seed: int, order: list[str]) -> Stepped:
    session = start_session(World(state.nodes, [], config.profiles, state.pdbs), seed, 0)
    outcomes = session.recorder.outcomes
    pods = {p.metadata.name: p for p in state.pods}
    windows: list[dict[str, int]] = []
    placements: list[dict[str, str | None]] = []
    before: dict[str, int] = {}
    for name in order:
        if name not in pods:  # rejected by the API server: a step of its own, empty
            windows.append({})
            placements.append(placements[-1] if placements else {})
            continue
        session.cluster.add_pod(pods[name])
        await run_until_quiet(session.scheduler, session.clock)
        now = {key.split("/", 1)[1]: o.attempts for key, o in outcomes.items()}
        windows.append({p: n - before.get(p, 0) for p, n in now.items() if n != before.get(p, 0)})
        before = now
        placements.append(
            {p.metadata.name: p.spec.node_name or None for p in session.cluster.pods.values()}
        )
    messages = {
        key.split("/", 1)[1]: o.message
        for key, o in outcomes.items()
        if o.node is None and o.message
    }
    return windows, placements, messages


def compare_simulated_attempts(
    scenario: Mapping[str, Any], kube: Run, result: Comparison, busy: set[int]
) -> None:
    """kube-scheduler's attempts per pod and step window against the stepped
    simulation's, in the windows compare_attempts compares (not after BUSY steps),
    while the simulation's placements are kube-scheduler's (a tie the simulation broke
    otherwise ends the comparison). Counted in Comparison.simulated(_agree); a pod
    attempted otherwise is an `attempts` disagreement in MODE_SIMULATE."""
    if kube.attempts is None:
        return
    try:
        simulated = simulate_stepped(scenario, kube)
    except Exception as exc:  # the simulator's failure is a finding, not the harness's
        result.disagreements.append(
            Disagreement("attempts", 0, "*", "-", "-", f"simulate failed: {exc!r}", MODE_SIMULATE)
        )
        return
    if simulated is None:
        return
    windows, placements, messages = simulated
    end = len(kube.steps)
    for i, step in enumerate(kube.steps):
        if i >= len(placements) or placements[i] != step.placements:
            end = i
            break
    for j, step in enumerate(kube.steps[:end]):
        if step.outcome not in ("bound", "unschedulable"):
            continue
        compared = [k for k in range(j, end) if k not in busy]
        if not compared:
            continue
        got = result.pod_attempts[step.pod][KUBE].windows
        differ = {
            k: (got.get(k, 0), windows[k].get(step.pod, 0))
            for k in compared
            if got.get(k, 0) != windows[k].get(step.pod, 0)
        }
        result.simulated += 1
        last = result.pod_attempts[step.pod][KUBE].last
        if not differ and (
            # The last message too, when every window of a pod left pending was compared.
            end < len(kube.steps)
            or len(compared) < end - j
            or kube.final.get(step.pod, "") is not None
            or messages.get(step.pod, "") == last
        ):
            result.simulated_agree += 1
            continue
        if not differ:
            result.disagreements.append(
                Disagreement(
                    "attempts",
                    j,
                    step.pod,
                    last,
                    messages.get(step.pod, ""),
                    "last FailedScheduling message (simulate)",
                    MODE_SIMULATE,
                )
            )
            continue
        result.disagreements.append(
            Disagreement(
                "attempts",
                min(differ),
                step.pod,
                sum(x for x, _ in differ.values()),
                sum(y for _, y in differ.values()),
                "attempts per step window (step: kube-scheduler, simulate): "
                + ", ".join(f"{k}: {x}, {y}" for k, (x, y) in sorted(differ.items())),
                MODE_SIMULATE,
            )
        )
