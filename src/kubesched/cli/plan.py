"""`kubesched plan`: which new nodes the pending pods need (`--add-nodes POOLS`), or
which nodes can go without leaving a pod homeless (`--remove-nodes`).

The command has one mode per question, the two exclusive, each with the same
outputs: text, `-o json` and `--html FILE`.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubesched.cli.optimize_report import parse_timeout
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
from kubesched.cluster.manifests import ClusterState, pending_pods, running_pods
from kubesched.plan import (
    PlanResult,
    PoolsError,
    RemovalResult,
    load_pools,
    plan_add_nodes,
    plan_remove_nodes,
)
from kubesched.plan.planner import Answer

if TYPE_CHECKING:
    import jinja2

    from kubesched.simulation.simulator import World


@click.command("plan")
@click.option(
    "--add-nodes",
    "pools_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    metavar="POOLS",
    help="A NodePools file (kubesched.io/v1alpha1): the node templates new nodes may "
    "be made from, with their price and maximum count.",
)
@click.option(
    "--remove-nodes",
    is_flag=True,
    default=False,
    help="Which existing nodes can be removed without leaving a pod homeless: the "
    "largest set (the most expensive one with --pools), in drain order, verified by "
    "simulation. Exclusive with --add-nodes.",
)
@click.option(
    "--pools",
    "price_pools",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    metavar="POOLS",
    help="With --remove-nodes: a NodePools file whose prices price the existing nodes "
    "(a node costs the price of the first pool whose template's labels it all has).",
)
@manifest_options
@scheduler_options
@click.option(
    "--timeout",
    default="5s",
    show_default=True,
    help="The solver's time limit (e.g. 5s, 500ms); the estimator's answer is kept "
    "when the solver finds nothing better in time.",
)
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@html_option
def plan_command(
    pools_path: Path | None,
    remove_nodes: bool,
    price_pools: Path | None,
    manifests: ManifestInput,
    setup: SchedulerSetup,
    timeout: str,
    output: str,
    html: Path | None,
) -> None:
    """With --add-nodes POOLS: how many new nodes, of which pools, the pending pods
    need: the cheapest set (the fewest nodes when no pool has a price) with which
    every pending pod schedules, solved with CP-SAT beside cluster-autoscaler's
    estimate, then verified by simulating the cluster with those nodes.

    With --remove-nodes: which nodes can go, cluster-autoscaler's drain rules
    deciding which pods block a node and the profile's filters where the others
    go, in drain order, then verified by simulating the cluster without them."""
    if pools_path is not None and remove_nodes:
        raise click.UsageError("--add-nodes and --remove-nodes are exclusive: give one of them")
    if remove_nodes:
        _remove_nodes(price_pools, manifests, setup, output, html)
        return
    if pools_path is None:
        raise click.UsageError(
            "give --add-nodes POOLS (which new nodes the pending pods need) or "
            "--remove-nodes (which nodes can go)"
        )
    if price_pools is not None:
        raise click.UsageError(
            "--pools prices the nodes of --remove-nodes; --add-nodes takes POOLS"
        )
    try:
        seconds = parse_timeout(timeout)
    except click.BadParameter as exc:
        raise click.BadParameter(exc.message, param_hint="--timeout") from None
    try:
        pools = load_pools(pools_path)
    except PoolsError as exc:
        raise click.BadParameter(str(exc), param_hint="--add-nodes") from None
    state, world = _load(manifests, setup)
    result = plan_add_nodes(
        world,
        pools,
        timeout=seconds,
        seed=setup.seed,
        percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score,
    )
    notes = [*state.notes, *setup.notes, seed_note(setup), *plan_notes(state, result)]
    if html is not None:
        html.write_text(plan_page(result, notes, _bound(result)), encoding="utf-8")
    if not _json(output, result, notes):
        print_plan(Console(), result, notes)


def _remove_nodes(
    price_pools: Path | None,
    manifests: ManifestInput,
    setup: SchedulerSetup,
    output: str,
    html: Path | None,
) -> None:
    """`plan --remove-nodes`: the search, then the report in the asked-for forms."""
    pools = None
    if price_pools is not None:
        try:
            pools = load_pools(price_pools)
        except PoolsError as exc:
            raise click.BadParameter(str(exc), param_hint="--pools") from None
    state, world = _load(manifests, setup)
    result = plan_remove_nodes(
        world,
        pools,
        seed=setup.seed,
        percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score,
    )
    notes = [*state.notes, *setup.notes, seed_note(setup), *removal_notes(result)]
    if html is not None:
        html.write_text(removal_page(result, notes), encoding="utf-8")
    if not _json(output, result, notes):
        print_removal(Console(), result, notes)


def _load(manifests: ManifestInput, setup: SchedulerSetup) -> tuple[ClusterState, World]:
    """The manifests (their problems printed, as simulate prints them) and the world
    of their running and pending pods."""
    state = load_manifests(manifests)
    err = Console(stderr=True)
    for problem in state.problems:
        err.print(Text(f"error: {problem}"), soft_wrap=True)
    pods = [*running_pods(state), *pending_pods(state)]
    return state, world_of(state, setup, pods=pods)


def _json(output: str, result: PlanResult | RemovalResult, notes: list[str]) -> bool:
    """With `-o json`: the result and its notes as one document on stdout (True)."""
    if output != "json":
        return False
    json.dump({**msgspec.to_builtins(result), "notes": notes}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return True


def removal_notes(result: RemovalResult) -> list[str]:
    """What the removal plan does not cover, said plainly."""
    notes: list[str] = []
    if result.pending:
        notes.append(
            f"{len(result.pending)} pending pod(s) fit nowhere before any removal: "
            "they are not planned for"
        )
    if result.preempted:
        notes.append(
            f"the pending pods preempted {len(result.preempted)} running pod(s) "
            f"({', '.join(result.preempted)}) before the removal was planned"
        )
    if not result.priced:
        notes.append("no prices: every node costs 1, and the plan removes the most nodes")
    return notes


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def _moved(moved: dict[str, str]) -> str:
    return ", ".join(f"{pod} -> {node}" for pod, node in moved.items()) or "-"


def print_removal(console: Console, result: RemovalResult, notes: list[str]) -> None:
    for note in notes:
        console.print(f"[dim]note: {note}[/dim]", highlight=False)
    check = result.verification
    savings = "" if result.savings is None else f", savings {result.savings}"
    console.print(
        f"{result.nodes} node(s): {check.verified} can be removed{savings}, "
        f"{len(result.blocked)} blocked",
        highlight=False,
    )
    if result.removed:
        table = Table(title="Drain order", title_justify="left")
        table.add_column("#", justify="right")
        table.add_column("node")
        if result.priced:
            table.add_column("pool")
            table.add_column("price", justify="right")
        table.add_column("used", justify="right")
        table.add_column("pods moved (pod -> node)")
        # DaemonSet and mirror pods go with the node (their names are in the JSON).
        table.add_column("leaving", justify="right")
        for node in result.removed:
            gone = node.node in check.given_back
            cells = [str(node.step), node.node + (" (given back)" if gone else "")]
            if result.priced:
                cells += [node.pool or "-", node.price or "-"]
            cells += [_percent(node.utilization), _moved(node.moved), str(len(node.leaving))]
            table.add_row(*cells, style="dim" if gone else None)
        console.print(table)
    if result.blocked:
        blocked = Table(title="Blocked nodes", title_justify="left")
        blocked.add_column("node")
        blocked.add_column("reason")
        blocked.add_column("why")
        for stays in result.blocked:
            # BlockedByPod's own reason (the rule) says more than BlockedByPod.
            blocked.add_row(stays.node, stays.rule or stays.reason, Text(stays.message))
        console.print(blocked)
    if check.scheduled and not check.given_back:
        line = (
            f"verified: every pod of the {check.verified} removed node(s) scheduled "
            f"elsewhere ({check.rounds} simulation(s))"
        )
    elif check.scheduled:
        line = (
            f"verified: {check.verified} of the {check.planned} planned node(s) can go; "
            f"the simulation left pods pending until {', '.join(check.given_back)} "
            f"was given back ({check.rounds} simulation(s))"
        )
    else:
        line = f"verified: {len(check.pending)} pod(s) still pending: {_pods(check.pending)}"
    console.print(line, highlight=False, markup=False)


def plan_notes(state: ClusterState, result: PlanResult) -> list[str]:
    """What the answer does not cover, said plainly."""
    notes: list[str] = []
    if result.not_packed:
        notes.append(
            f"{len(result.not_packed)} pod(s) are not in the packing (a constraint it does "
            "not model); the verification schedules them and adds nodes for them"
        )
    if result.preempted:
        notes.append(
            f"the pending pods preempted {len(result.preempted)} running pod(s) on the "
            f"existing nodes ({', '.join(result.preempted)}); no node is planned for them"
        )
    if result.gated:
        notes.append(f"{len(result.gated)} pod(s) wait for scheduling gates: no node is planned")
    known = {(ds.metadata.namespace, ds.metadata.name) for ds in state.daemon_sets}
    unknown = sorted(
        {
            f"{p.metadata.namespace}/{o.name}"
            for p in state.pods
            for o in p.metadata.owner_references
            if o.kind == "DaemonSet" and (p.metadata.namespace, o.name) not in known
        }
    )
    if unknown:
        notes.append(
            f"the DaemonSets of {len(unknown)} DaemonSet pod owner(s) are not in the input "
            f"({', '.join(unknown[:3])}{' ...' if len(unknown) > 3 else ''}): their pods "
            "are not added to the new nodes; give the DaemonSets, or leave their requests "
            "out of the pools' allocatable"
        )
    if state.daemon_sets:
        notes.append(
            f"the pods of {len(state.daemon_sets)} DaemonSet(s) go on the new nodes whose "
            "labels and taints they accept, and take their room"
        )
    return notes


def _answer_line(name: str, answer: Answer) -> str:
    cost = "" if answer.total_cost is None else f", cost {answer.total_cost}"
    left = f", {len(answer.left_out)} pod(s) left out" if answer.left_out else ""
    return f"{name}: {answer.total_nodes} node(s){cost}{left}"


def print_plan(console: Console, result: PlanResult, notes: list[str]) -> None:
    for note in notes:
        console.print(f"[dim]note: {note}[/dim]", highlight=False)
    need = result.demand - len(result.unplaceable) - len(result.gated)
    console.print(
        f"{result.pending} pending pod(s): {len(result.placed_on_existing)} fit on the "
        f"existing nodes, {need} need new nodes, {len(result.unplaceable)} fit no pool",
        highlight=False,
    )
    answer = result.solver
    bound = _bound(result)
    console.print(f"New nodes: solver {result.solver_status}{bound}", highlight=False)
    table = Table()
    table.add_column("pool")
    table.add_column("nodes", justify="right")
    table.add_column("price", justify="right")
    table.add_column("cost", justify="right")
    for use in answer.pools:
        table.add_row(use.pool, str(use.nodes), use.price or "-", use.cost or "-")
    table.add_row("total", str(answer.total_nodes), "", answer.total_cost or "-", style="bold")
    console.print(table)
    console.print(_answer_line("solver", answer), highlight=False)
    console.print(
        _answer_line("cluster-autoscaler's estimator (first-fit decreasing)", result.estimator),
        highlight=False,
    )
    if answer.left_out:
        console.print(
            f"left out (the pools' maximums): {', '.join(answer.left_out)}", highlight=False
        )
    if answer.nodes:
        pods = Table(title="Pods per new node", title_justify="left")
        pods.add_column("node")
        pods.add_column("pods")
        for node in answer.nodes:
            pods.add_row(node.name, ", ".join(node.pods))
        console.print(pods)
    check = result.verification
    if check.plan != "solver":
        console.print(
            "the scheduler strayed from the solver's plan until it cost more than "
            "cluster-autoscaler's estimate, which verified cheaper: it is verified below",
            highlight=False,
        )
    if check.scheduled:
        on = "planned" if check.plan == "solver" else "estimated"
        line = f"verified: every pod scheduled on the {on} nodes ({check.rounds} simulation(s))"
    else:
        line = f"verified: {len(check.pending)} pod(s) still pending: {', '.join(check.pending)}"
    console.print(line, highlight=False)
    if check.added or check.plan != "solver":
        added = f"the verification added {', '.join(check.added)}: " if check.added else ""
        console.print(added + _answer_line("verified answer", result.verified), highlight=False)
    # Identical pods have identical reasons: one paragraph per reason.
    groups: dict[str, list[str]] = {}
    reasons: dict[str, dict[str, list[str]]] = {}
    for pod in result.unplaceable:
        key = json.dumps([pod.message, pod.reasons])
        groups.setdefault(key, []).append(pod.pod)
        reasons[key] = pod.reasons
    for key, names in groups.items():
        message = json.loads(key)[0]
        verb = "fits" if len(names) == 1 else "fit"
        console.print(f"{_pods(names)} {verb} no pool: {message}", highlight=False, markup=False)
        for pool, why in reasons[key].items():
            console.print(f"  {pool}: {', '.join(why)}", highlight=False, markup=False)
    held: dict[str, list[str]] = {}
    for left in result.not_packed:
        held.setdefault(left.reason, []).append(left.pod)
    for reason, names in held.items():
        console.print(f"not packed: {_pods(names)}: {reason}", highlight=False, markup=False)


def _bound(result: PlanResult) -> str:
    """The better of the two lower bounds, with those known."""
    if result.lower_bound is None:
        return ""
    known = (("CP-SAT", result.cp_sat_bound), ("node patterns", result.pattern_bound))
    both = ", ".join(f"{name} {value}" for name, value in known if value is not None)
    return f"; lower bound {result.lower_bound} ({both})"


def _pods(names: Sequence[str], shown: int = 3) -> str:
    """The first few pod names, and how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


@functools.cache
def _environment() -> jinja2.Environment:
    # Lazy: jinja2 only for --html, not for every command that imports the CLI.
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("kubesched.cli.html", "templates"),
        autoescape=True,  # every name and reason from the input is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def plan_page(result: PlanResult, notes: Sequence[str], bound: str) -> str:
    """The self-contained page of `--html`."""
    answers = [
        ("solver", result.solver),
        ("cluster-autoscaler's estimator", result.estimator),
    ]
    if result.verification.added or result.verification.plan != "solver":
        answers.append(("verified", result.verified))
    template = _environment().get_template("plan-add.html.j2")
    return template.render(r=result, notes=notes, answers=answers, bound=bound)


def removal_page(result: RemovalResult, notes: Sequence[str]) -> str:
    """The self-contained page of `--remove-nodes --html`."""
    return _environment().get_template("plan-remove.html.j2").render(r=result, notes=notes)
