"""`kubesched explain`: why a pod went where it went in the simulation, or nowhere."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import Any

import click
import msgspec
import yaml
from rich.console import Console
from rich.text import Text

from kubesched.api.objects import Pod
from kubesched.cli.explain_report import print_explanation
from kubesched.cli.gangs import gang_line, gang_of
from kubesched.cli.html import simulation_page, write_page
from kubesched.cli.options import (
    ManifestInput,
    SchedulerSetup,
    html_option,
    load_manifests,
    manifest_options,
    scheduler_options,
    seed_note,
    world_of,
)
from kubesched.cli.report import profile_line
from kubesched.cli.workloads import node_zones, workload_of
from kubesched.cluster.manifests import pending_pods, running_pods
from kubesched.framework.explain import Explanation
from kubesched.simulation.simulator import SimulationResult, simulate_world

# kubectl's namespace for a name given without one (no kubeconfig context is read:
# the pods are the manifests').
DEFAULT_NAMESPACE = "default"


def resolve_pod(key: str, pending: list[Pod], running: list[Pod]) -> tuple[str, str]:
    """The pending pod KEY names, and a note if it named a workload (a Deployment,
    ReplicaSet, StatefulSet, Job, ...): its first pending pod is explained. A
    BadParameter naming the pods meant when there is none."""
    known = {p.key for p in pending}
    if key in known:
        return key, ""
    already = {p.key: p.spec.node_name for p in running}
    if key in already:
        raise click.BadParameter(
            f"{key} already runs on node {already[key]} (spec.nodeName): "
            "explain covers the pods the simulation schedules",
            param_hint="POD",
        )
    namespace, _, name = key.partition("/")
    owned = [p for p in pending if (w := workload_of(p)).namespace == namespace and w.name == name]
    if owned:
        workload = workload_of(owned[0])
        return owned[0].key, (
            f"{key} is {workload.kind} {key}: explaining its first pending pod "
            f"{owned[0].key} (of {len(owned)})"
        )
    close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.5)
    starting = sorted(k for k in known if k.startswith(f"{key}-"))[:3]
    meant = list(dict.fromkeys([*starting, *close]))
    guess = f"; did you mean {', '.join(meant)}?" if meant else ""
    raise click.BadParameter(f"no pending pod {key} in the input{guess}", param_hint="POD")


def pod_key(name: str, namespace: str | None = None) -> str:
    """namespace/name: a bare name is in -n's namespace, else in `default`, as
    kubectl's; NS/NAME with a different -n is a BadParameter."""
    if "/" not in name:
        return f"{namespace or DEFAULT_NAMESPACE}/{name}"
    given, _, _ = name.partition("/")
    if namespace is not None and given != namespace:
        raise click.BadParameter(
            f"{name} is in namespace {given!r}, but -n/--namespace says {namespace!r}: "
            "give one of them",
            param_hint="POD",
        )
    return name


def victims_of(result: SimulationResult, key: str) -> list[str]:
    """The pods preempted for this one: their Preempted events name its UID."""
    pod = result.pods.get(key)
    if pod is None or not pod.metadata.uid:
        return []
    uid = pod.metadata.uid
    return sorted({e.pod for e in result.events if e.reason == "Preempted" and uid in e.message})


@click.command("explain")
@click.argument("pods", nargs=-1, required=True, metavar="POD...")
@click.option(
    "-n",
    "--namespace",
    default=None,
    help=f"The namespace of the PODs given by name alone (default: {DEFAULT_NAMESPACE}).",
)
@manifest_options
@scheduler_options
@click.option(
    "-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True
)
@click.option("--all-attempts", is_flag=True, help="Every attempt, not just the last.")
@click.option(
    "--top",
    type=click.IntRange(0),
    default=10,
    show_default=True,
    help="Groups of feasible nodes shown in the score table (0: all).",
)
@click.option(
    "--examples",
    type=click.IntRange(0),
    default=3,
    show_default=True,
    help="Node names shown per group (0: all).",
)
@html_option
def explain_command(
    pods: tuple[str, ...],
    namespace: str | None,
    manifests: ManifestInput,
    setup: SchedulerSetup,
    output: str,
    all_attempts: bool,
    top: int,
    examples: int,
    html: Path | None,
) -> None:
    """Why POD (NAME with -n NAMESPACE, or NAMESPACE/NAME; NAME alone is in namespace
    default) went where it went, or nowhere: the simulation runs as `simulate` runs
    it, and each of the pod's scheduling attempts is explained as that attempt saw
    the cluster: every node's filter verdict, each score plugin's raw, normalized
    and weighted score, the tie-break, and PostFilter (preemption)."""
    state = load_manifests(manifests)
    err = Console(stderr=True)
    for problem in state.problems:
        err.print(Text(f"error: {problem}"), soft_wrap=True)
    running = running_pods(state)
    pending = pending_pods(state)
    keys: list[str] = []
    for name in pods:
        key, note = resolve_pod(pod_key(name, namespace), pending, running)
        keys.append(key)
        if note:
            state.notes.append(note)
    result = simulate_world(
        world_of(state, setup, pods=[*running, *pending]),
        seed=setup.seed,
        percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score,
        explain=keys,
    )
    for key in keys:
        victims = victims_of(result, key)
        for explanation in result.explanations.get(key, []):
            if explanation.post_filter is not None and explanation.post_filter.nominated_node:
                explanation.post_filter.victims = victims
    notes = [*state.notes, *setup.notes, seed_note(setup)]
    if html is not None:
        page = simulation_page(
            result,
            title="kubesched explain " + " ".join(keys),
            nodes=state.nodes,
            running={p.key for p in running},
            zones=node_zones(state.nodes),
            notes=notes,
            problems=[str(p) for p in state.problems],
            dra=state.dra,
            explained=keys,
            seed=setup.seed,
        )
        write_page(page, html)
    if output == "text":
        print_text(Console(), result, keys, notes, all_attempts, top, examples)
        return
    document = explain_document(result, keys, notes, all_attempts, setup.seed)
    if output == "json":
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(document, sys.stdout, sort_keys=False)


def explain_document(
    result: SimulationResult, keys: list[str], notes: list[str], all_attempts: bool, seed: int
) -> dict[str, Any]:
    """The machine-readable explanations: per pod, where it ended up and its attempts."""
    found: list[dict[str, Any]] = []
    for key in keys:
        attempts = result.explanations.get(key, [])
        shown = attempts if all_attempts else attempts[-1:]
        gang = gang_of(result, key)
        found.append(
            {
                "pod": key,
                "node": result.placements.get(key),
                "reason": result.reasons.get(key, ""),
                "attempts": len(attempts),
                **(
                    {"notAttempted": {"plugin": gate.plugin, "message": gate.message}}
                    if (gate := result.not_attempted.get(key)) is not None
                    else {}
                ),
                # The pod's PodGroup (Coscheduling): the group's placement as a whole.
                **({"gang": {"group": gang.key, **gang.as_dict()}} if gang else {}),
                "explanations": [msgspec.to_builtins(e) for e in shown],
            }
        )
    return {"pods": found, "seed": seed, "notes": notes}


def print_text(
    console: Console,
    result: SimulationResult,
    keys: list[str],
    notes: list[str],
    all_attempts: bool,
    top: int,
    examples: int,
) -> None:
    for note in notes:
        console.print(f"[dim]note: {note}[/dim]", highlight=False)
    for key in keys:
        gang = gang_of(result, key)
        if gang is not None:
            console.print(Text(gang_line(gang)))
        attempts: list[Explanation] = result.explanations.get(key, [])
        if not attempts:
            gate = result.not_attempted.get(key)
            why = (
                f"held at PreEnqueue by {gate.plugin}: {gate.message}"
                if gate is not None
                else result.reasons.get(key, "never attempted")
            )
            console.print(Text.assemble((f"Pod {key}", "bold"), f": not attempted: {why}"))
            continue
        for profile in result.profiles:
            if profile.profile == attempts[-1].plugins.profile:
                console.print(profile_line(profile), highlight=False, markup=False)
        for explanation in attempts if all_attempts else attempts[-1:]:
            print_explanation(
                console,
                explanation,
                final_node=result.placements.get(key),
                total_attempts=len(attempts),
                examples=examples,
                top=top,
            )
            console.print()
