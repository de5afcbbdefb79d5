"""`kubesched capacity`: how many more copies of a pod fit, as cluster-capacity says."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import msgspec
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubesched.api.objects import Pod
from kubesched.cli.html import capacity_page, write_page
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
from kubesched.cli.workloads import node_zones
from kubesched.cluster.admission import builtin_priority_classes
from kubesched.cluster.manifests import ClusterState, load_paths, pending_pods, running_pods
from kubesched.simulation.capacity import CapacityResult, capacity


@click.command("capacity")
@click.option(
    "--podspec",
    "specs",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A Pod, or a workload with a pod template (Deployment, ReplicaSet, StatefulSet, "
    "Job, ...), whose copies are counted; repeat it to place several specs in turn.",
)
@manifest_options
@scheduler_options
@click.option(
    "--max",
    "limit",
    type=click.IntRange(0),
    default=0,
    help="Stop each spec after this many copies (0: until one does not fit).",
)
@click.option(
    "--exclude-nodes",
    default="",
    metavar="NAME[,NAME...]",
    help="Leave these nodes (and the pods on them) out of the cluster.",
)
@click.option(
    "-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True
)
@html_option
def capacity_command(
    specs: tuple[Path, ...],
    manifests: ManifestInput,
    setup: SchedulerSetup,
    limit: int,
    exclude_nodes: str,
    output: str,
    html: Path | None,
) -> None:
    """How many more copies of each --podspec fit in the cluster of the manifests:
    copies are scheduled one after another until one does not fit (cluster-capacity's
    semantics); the count, the copies per node, and the stop reason (the
    FailedScheduling text of the first copy that did not fit)."""
    state = load_manifests(manifests)
    templates = [_template(state, spec) for spec in specs]
    names = {p.scheduler_name for p in setup.profiles}
    for template in templates:
        if template.spec.scheduler_name not in names:
            raise click.BadParameter(
                f'{template.key}: no profile for schedulerName "{template.spec.scheduler_name}"',
                param_hint="--podspec",
            )
    excluded = [n for n in exclude_nodes.split(",") if n]
    known = {n.metadata.name for n in state.nodes}
    for name in excluded:
        if name not in known:
            raise click.BadParameter(f"no node {name} in the input", param_hint="--exclude-nodes")
    err = Console(stderr=True)
    for problem in state.problems:
        err.print(Text(f"error: {problem}"), soft_wrap=True)
    gone = set(excluded)
    pods = [
        *(p for p in running_pods(state) if p.spec.node_name not in gone),
        *pending_pods(state),
    ]
    world = world_of(
        state, setup, nodes=[n for n in state.nodes if n.metadata.name not in gone], pods=pods
    )
    result = capacity(
        world,
        templates,
        limit=limit,
        seed=setup.seed,
        percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score,
    )
    result.excluded_nodes = excluded
    notes = [*state.notes, *setup.notes, seed_note(setup)]
    if html is not None:
        page = capacity_page(
            result, title="kubesched capacity", zones=node_zones(state.nodes), notes=notes
        )
        write_page(page, html)
    if output == "text":
        print_capacity(Console(), result, notes)
        return
    document = {**msgspec.to_builtins(result), "notes": notes}
    if output == "json":
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(document, sys.stdout, sort_keys=False)


def _template(state: ClusterState, spec: Path) -> Pod:
    """The pod a --podspec file describes, admitted as the input's pods are (priority
    from the input's PriorityClasses, defaults): its first pending pod is the model of
    the copies (a workload's first replica)."""
    builtin = builtin_priority_classes()
    classes = [
        (str(spec), 0, msgspec.to_builtins(pc))
        for name, pc in state.priority_classes.items()
        if name not in builtin
    ]
    alone = load_paths([spec], classes)
    if alone.problems:
        raise click.BadParameter(str(alone.problems[0]), param_hint="--podspec")
    pending = pending_pods(alone)
    if not pending:
        bound = [p.key for p in alone.pods if p.spec.node_name]
        why = f" ({bound[0]} has spec.nodeName)" if bound else ""
        raise click.BadParameter(
            f"{spec}: no pending pod or pod template{why}", param_hint="--podspec"
        )
    template = pending[0]
    if any(p.key == template.key for p in state.pods):
        raise click.BadParameter(
            f"{spec}: pod {template.key} is also in the cluster's manifests",
            param_hint="--podspec",
        )
    return template


def print_capacity(console: Console, result: CapacityResult, notes: list[str]) -> None:
    for note in notes:
        console.print(f"[dim]note: {note}[/dim]", highlight=False)
    for profile in result.profiles:
        console.print(profile_line(profile), highlight=False, markup=False)
    if result.excluded_nodes:
        console.print(f"excluded nodes: {', '.join(result.excluded_nodes)}", highlight=False)
    for spec in result.specs:
        console.print(
            f"[bold]{spec.name}[/bold]: the cluster can schedule "
            f"[bold]{spec.count}[/bold] more instance(s)",
            highlight=False,
        )
        stop = spec.stop_reason
        console.print(f"Termination reason: {stop.reason}: {stop.message}", highlight=False)
        if spec.nodes:
            table = Table(title="Instances per node", title_justify="left")
            table.add_column("node")
            table.add_column("instances", justify="right")
            for node, count in sorted(spec.nodes.items(), key=lambda kv: (-kv[1], kv[0])):
                table.add_row(node, str(count))
            console.print(table)
