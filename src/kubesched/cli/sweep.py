"""`kubesched sweep SPEC`: many simulations of one cluster, one per variation, as a table.

Everything the SPEC names is read and checked before the first run (the
manifests, the pools, each config file and feature-gate string, each pool count
against the pool's max): a bad one is one line naming the file and the field.
The rows go to a results file as they finish (`--results`), so a stopped sweep
resumes (`--resume`) without running a finished variation again.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click
import msgspec
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kubesched.cli.html.sweep import sweep_page
from kubesched.cli.options import feature_gates_from_option, scheduler_setup
from kubesched.cluster.manifests import ClusterState, load_paths
from kubesched.plan.pools import NodePool, PoolsError, load_pools
from kubesched.sweep.engines import DEFAULT_RETRIES, Engine, LocalEngine, RayEngine, RayError
from kubesched.sweep.spec import SpecError, SweepSpec, Variation, load_spec
from kubesched.sweep.store import ResultsStore, StoreError
from kubesched.sweep.task import SweepBase, VariationResult, VariationSetup


@click.command("sweep")
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=2,
    show_default=True,
    help="Local worker processes (1: run in this process).",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="ADDRESS",
    help="Run the variations on this Ray cluster (ray://HOST:10001, HOST:6379 or auto) "
    "instead of local workers; needs kubesched[ray].",
)
@click.option(
    "--retries",
    type=click.IntRange(0),
    default=DEFAULT_RETRIES,
    show_default=True,
    help="Runs again a variation that failed or whose worker died, this many times.",
)
@click.option(
    "--results",
    "results_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The results file, one line per finished variation [default: SPEC's name "
    "with .results.jsonl].",
)
@click.option("--resume", is_flag=True, help="Go on with the results file: run only what it lacks.")
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--html",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the table and its plots as one HTML page.",
)
def sweep_command(
    spec_path: Path,
    workers: int,
    ray_address: str | None,
    retries: int,
    results_path: Path | None,
    resume: bool,
    output: str,
    html: Path | None,
) -> None:
    """Simulate the SPEC's cluster once per variation (node pools, scheduler configs,
    workload scale, feature gates) and compare them in one table."""
    err = Console(stderr=True)
    try:
        spec = load_spec(spec_path)
        base = _base(spec)
        setups = _setups(spec, base)
    except (SpecError, PoolsError) as exc:
        raise click.ClickException(str(exc)) from None
    results_path = results_path or spec_path.with_suffix(".results.jsonl")
    try:
        store = ResultsStore(results_path, str(spec_path), spec.digest, resume=resume)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    done = store.done()
    todo = [s for s in setups if s.variation.id not in done]
    engine: Engine = (
        RayEngine(ray_address, retries) if ray_address else LocalEngine(workers, retries)
    )
    show_progress = err.is_terminal and output == "text"
    bar = Progress("sweep", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err)
    task = bar.add_task("variations", total=len(setups), completed=len(setups) - len(todo))

    def finished(row: VariationResult) -> None:
        store.add(row)
        bar.advance(task)

    try:
        with bar if show_progress else contextlib.nullcontext():
            engine.run(base, todo, finished)
    except RayError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    rows = store.ordered()
    document = {
        "spec": str(spec_path),
        "engine": engine.name,
        "seed": spec.seed,
        "results": str(results_path),
        "variations": [msgspec.to_builtins(r) for r in rows],
    }
    if html is not None:
        html.write_text(sweep_page(str(spec_path), rows), encoding="utf-8")
    if output == "json":
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_table(Console(), rows)
        err.print(
            Text(f"{len(rows)} variations ({engine.name}); results in {results_path}"),
            soft_wrap=True,
        )
    failed = [r for r in rows if r.error]
    if failed:
        err.print(
            Text(f"error: {len(failed)} variations failed: {failed[0].id}: {failed[0].error}")
        )
        sys.exit(1)


def _base(spec: SweepSpec) -> SweepBase:
    """The manifests and the pools, loaded once for every variation."""
    state: ClusterState = load_paths(spec.cluster)
    if state.problems:
        first = state.problems[0]
        more = f" (and {len(state.problems) - 1} more)" if len(state.problems) > 1 else ""
        raise SpecError(f"{spec.path}: cluster: {first}{more}")
    pools: dict[str, NodePool] = {}
    if spec.node_pools is not None:
        pools = {p.name: p for p in load_pools(spec.node_pools)}
    return SweepBase(state, pools)


def _setups(spec: SweepSpec, base: SweepBase) -> list[VariationSetup]:
    """Each variation with its scheduler configuration resolved, as `simulate --config
    FILE --feature-gates G --seed S` would resolve it; a SpecError for anything refused."""
    resolved: dict[tuple[str, str], VariationSetup] = {}
    setups: list[VariationSetup] = []
    for variation in spec.variations:
        _check_nodes(spec, base, variation)
        key = (variation.config, variation.feature_gates)
        known = resolved.get(key)
        if known is None:
            known = resolved[key] = _resolve(spec, variation)
        setups.append(
            VariationSetup(
                variation,
                known.profiles,
                known.registry,
                known.gates,
                known.percentage_of_nodes_to_score,
                spec.seed,
                known.extenders,
            )
        )
    return setups


def _check_nodes(spec: SweepSpec, base: SweepBase, variation: Variation) -> None:
    for pool_name, count in variation.nodes.items():
        pool = base.pools.get(pool_name)
        where = f"{spec.path}: {variation.where}.nodes.{pool_name}"
        if pool is None:
            known = ", ".join(sorted(base.pools)) or "none"
            raise SpecError(f"{where}: no such pool in {spec.node_pools} (pools: {known})")
        if pool.max is not None and count > pool.max:
            raise SpecError(f"{where}: {count} nodes, but the pool's max is {pool.max}")


def _resolve(spec: SweepSpec, variation: Variation) -> VariationSetup:
    where = f"{spec.path}: {variation.where}"
    try:
        feature_gates_from_option(variation.feature_gates)
    except click.BadParameter as exc:
        raise SpecError(f"{where}.featureGates: {exc.message}") from None
    config = spec.config_path(variation.config)
    if config is not None and not config.is_file():
        raise SpecError(f"{where}.config: {config}: no such file")
    try:
        setup = scheduler_setup(
            None if config is None else str(config),
            (),
            (),
            (),
            str(spec.seed),
            None,
            variation.feature_gates,
        )
    except click.ClickException as exc:
        raise SpecError(f"{where}.config: {exc.message}") from None
    return VariationSetup(
        variation,
        setup.profiles,
        setup.registry,
        setup.gates,
        setup.percentage_of_nodes_to_score,
        spec.seed,
        setup.extenders,
    )


_AXES = (
    ("nodes", "nodes added"),
    ("config", "config"),
    ("scale", "scale"),
    ("featureGates", "gates"),
)


def print_table(console: Console, rows: list[VariationResult]) -> None:
    """One row per variation: the axes that vary (the others are said once above
    the table), what was placed, and the first reason of the pending pods."""
    varying = [(k, h) for k, h in _AXES if len({r.params[k] for r in rows}) > 1]
    fixed = [f"{h} {rows[0].params[k]}" for k, h in _AXES if rows and (k, h) not in varying]
    if fixed:
        console.print(Text("every variation: " + ", ".join(fixed)), soft_wrap=True)
    table = Table()
    table.add_column("#", justify="right")
    for _, header in varying:
        table.add_column(header)
    for header in ("placed", "pending", "nodes used", "cpu", "memory", "cost"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("first pending reason")
    for row in rows:
        axes = [row.params[k] for k, _ in varying]
        if row.error:
            table.add_row(str(row.index), *axes, "error", "", "", "", "", "", row.error)
            continue
        top = next(iter(row.pending_by_reason.items()), None)
        table.add_row(
            str(row.index),
            *axes,
            f"{row.placed}/{row.pods}",
            str(row.pending),
            f"{row.nodes_used}/{row.nodes}",
            f"{row.cpu_utilisation:.0%}",
            f"{row.memory_utilisation:.0%}",
            "" if row.cost is None else f"{row.cost:g}",
            "" if top is None else f"{top[1]} {top[0]}",
        )
    console.print(table)
