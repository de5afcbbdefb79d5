"""kubesched simulate | explain | capacity | run."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.text import Text

from kubesched import KUBERNETES_VERSION, __version__
from kubesched.cli.capacity import capacity_command
from kubesched.cli.explain import explain_command
from kubesched.cli.gangs import gang_note, workload_gang_note
from kubesched.cli.html import simulation_page, write_page
from kubesched.cli.optimize_report import comparison_document, parse_timeout, print_comparison
from kubesched.cli.options import (
    ManifestInput,
    SchedulerSetup,
    apply_plugin_options,
    checked_secure_serving,
    feature_gates_from_option,
    feature_gates_option,
    html_option,
    load_manifests,
    manifest_options,
    plugin_options,
    plugin_registry,
    scheduler_options,
    secure_serving_options,
    seed_note,
    seed_value,
    world_of,
)
from kubesched.cli.plan import plan_command
from kubesched.cli.report import as_document, print_report
from kubesched.cli.sweep import sweep_command
from kubesched.cli.workloads import explained_pods_of, node_zones
from kubesched.cluster.manifests import pending_pods, running_pods
from kubesched.simulation.simulator import simulate_world

if TYPE_CHECKING:
    from kubesched.batch import Objective

PROGRESS_THRESHOLD = 2000
# Pods explained for the HTML report's drill-down unless --html-explain says otherwise:
# explaining costs per attempt (docs/develop/benchmarks-log.md), a few dozen stay cheap
# at 5,000 nodes.
DEFAULT_HTML_EXPLAINED = 40


# `-h` as kubectl and kube-scheduler take it, on every command (child contexts
# inherit the group's help option names).
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kubesched")
def main() -> None:
    """kubesched: a Kubernetes scheduler in Python with kube-scheduler's framework."""


@main.command("version")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
def version_command(output: str) -> None:
    """Print kubesched's version and the Kubernetes version it follows."""
    if output == "json":
        click.echo(
            json.dumps({"kubeschedVersion": __version__, "kubernetesVersion": KUBERNETES_VERSION})
        )
        return
    click.echo(f"kubesched {__version__}")
    # The kube-scheduler release whose behaviour, messages and metric names it follows.
    click.echo(f"Kubernetes {KUBERNETES_VERSION}")


@main.command("simulate")
@manifest_options
@scheduler_options
@click.option(
    "-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True
)
@html_option
@click.option(
    "--html-explain",
    type=click.IntRange(0),
    default=DEFAULT_HTML_EXPLAINED,
    show_default=True,
    help="With --html: pods explained in the page's drill-down (the first and the last "
    "pending pod of each workload, up to this many).",
)
@click.option(
    "--optimize",
    is_flag=True,
    help="Also place the pending pods jointly with the batch engine, and show both.",
)
@click.option(
    "--optimize-timeout",
    default="1s",
    show_default=True,
    help="The engine's time limit (e.g. 1s, 500ms).",
)
@click.option(
    "--optimize-objective",
    type=click.Choice(["pods", "nodes", "score"]),
    default="pods",
    show_default=True,
    help="After the most pods by priority: nothing more (pods), the fewest nodes, "
    "or the highest total score.",
)
def simulate_command(
    manifests: ManifestInput,
    setup: SchedulerSetup,
    output: str,
    html: Path | None,
    html_explain: int,
    optimize: bool,
    optimize_timeout: str,
    optimize_objective: str,
) -> None:
    """Schedule the pods of a cluster described in manifests, touching nothing."""
    err = Console(stderr=True)
    timeout = parse_timeout(optimize_timeout)
    state = load_manifests(manifests)
    problems = [str(p) for p in state.problems]
    # One line each on stderr, in every output format (the report on stdout stays
    # the report; JSON and YAML list them under `problems` too).
    for problem in problems:
        err.print(Text(f"error: {problem}"), soft_wrap=True)
    pods = [*running_pods(state), *pending_pods(state)]
    pending = len(pods) - len(running_pods(state))
    # The HTML report's drill-down needs its pods explained while they are scheduled.
    explained = explained_pods_of(pending_pods(state), html_explain) if html is not None else []

    show_progress = output == "text" and pending >= PROGRESS_THRESHOLD and err.is_terminal
    bar = Progress(
        "scheduling", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )
    with bar if show_progress else contextlib.nullcontext():
        task = bar.add_task("pods", total=pending)
        result = simulate_world(
            world_of(state, setup, pods=pods),
            seed=setup.seed,
            percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score,
            progress=(
                (lambda done, total: bar.update(task, completed=done, total=total))
                if show_progress
                else None
            ),
            explain=explained,
        )

    comparison = None
    if optimize:
        from kubesched.simulation.optimize import optimize as optimize_batch

        world = world_of(state, setup, pods=pods)
        comparison = optimize_batch(
            world,
            result,
            objective=cast("Objective", optimize_objective),
            timeout=timeout,
            seed=setup.seed,
        )

    notes = [*state.notes, *setup.notes, seed_note(setup)]
    for unsupported in (
        gang_note(result),
        workload_gang_note(len(state.workload_pod_groups), setup.gates),
    ):
        if unsupported is not None:
            notes.append(unsupported)
    running = {p.key for p in running_pods(state)}
    zones = node_zones(state.nodes)
    if html is not None:
        page = simulation_page(
            result,
            title="kubesched simulate",
            nodes=state.nodes,
            running=running,
            zones=zones,
            notes=notes,
            problems=problems,
            dra=state.dra,
            explained=explained,
            seed=setup.seed,
        )
        write_page(page, html)
    if output in ("json", "yaml"):
        document = as_document(result, problems, notes, setup.seed)
        if optimize:
            document["optimize"] = None if comparison is None else comparison_document(comparison)
        if output == "json":
            json.dump(document, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            yaml.safe_dump(document, sys.stdout, sort_keys=False)
    else:
        console = Console()
        print_report(console, result, notes, running, zones)
        if optimize:
            if comparison is None:
                console.print("optimize: no pending pods")
            else:
                print_comparison(console, comparison)
    failed = [o for o in result.outcomes.values() if o.reason == "SchedulerError" and not o.node]
    if failed:
        # A plugin (or the framework) failed on these pods: the run is not a good
        # answer, whatever else it placed (the log lines above say where it raised).
        err.print(
            Text(
                f"error: {len(failed)} pods failed with an error: {failed[0].key}: "
                f"{failed[0].message}"
            ),
            soft_wrap=True,
        )
    if problems or failed:
        sys.exit(1)


class _KlogFlags(click.Command):
    """kube-scheduler's flags are pflag's, where `-v=4` is the shorthand with its
    value; click would read `=4` as the value. Rewritten to `-v4` before parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = [f"-v{arg[3:]}" if arg.startswith("-v=") else arg for arg in args]
        return super().parse_args(ctx, args)


def _duration(text: str, flag: str) -> float:
    try:
        return parse_timeout(text)
    except click.BadParameter as exc:
        exc.param_hint = flag
        raise


@main.command("run", cls=_KlogFlags)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
)
@click.option("--context", default=None, help="kubeconfig context to use.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="KubeSchedulerConfiguration file.",
)
@click.option(
    "--bind-address",
    default="0.0.0.0",
    show_default=True,
    help="The address the secure port listens on.",
)
@click.option(
    "--secure-port",
    type=click.IntRange(0, 65535),
    default=10259,
    show_default=True,
    help="HTTPS port of /healthz, /livez, /readyz and /metrics (0: none).",
)
@secure_serving_options
@click.option(
    "--authorization-always-allow-paths",
    default="/healthz,/readyz,/livez",
    show_default=True,
    help="Comma-separated paths served without authorization ('*' at the end: a prefix).",
)
@click.option(
    "--health-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Plain-HTTP port of /healthz, /livez and /readyz only, no authentication "
    "(0: any free port). Off unless given.",
)
@click.option(
    "--health-address", default="0.0.0.0", show_default=True, help="Address of --health-port."
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=None,
    help="Override leaderElection.leaderElect of the configuration.",
)
@click.option(
    "--seed",
    default="random",
    show_default=True,
    metavar="N|random",
    help="Seed for tie-breaks between best nodes (random, as kube-scheduler's, by default).",
)
@feature_gates_option
@click.option(
    "--logging-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("-v", "--v", "verbosity", type=int, default=0, help="Log verbosity, as klog's -v.")
@plugin_options
@click.option(
    "--explain",
    is_flag=True,
    help="Explain every scheduling attempt and serve each pod's last explanation at "
    "/debug/explain/NAMESPACE/NAME on the secure port (off by default: it costs time "
    "per attempt).",
)
@click.option(
    "--explain-keep",
    type=click.IntRange(1),
    default=1000,
    show_default=True,
    help="With --explain: how many pods' last explanations are kept.",
)
@click.option(
    "--batch-window",
    default=None,
    metavar="DURATION",
    help="Batch placement (off by default): for this long (e.g. 1s) pods the cycle "
    "places wait at Permit and pods it leaves unschedulable are gathered; then the "
    "batch engine places them jointly and the cycle binds its answer.",
)
@click.option(
    "--batch-timeout",
    default=None,
    metavar="DURATION",
    help="With --batch-window: the engine's time limit per batch (default 1s).",
)
@click.option(
    "--api-worker/--no-api-worker",
    default=True,
    show_default=True,
    help="Write binds, events and pod conditions from a worker process of their own, "
    "off the scheduling thread's core (--no-api-worker: from the scheduling process).",
)
def run_command(
    kubeconfig: str | None,
    context: str | None,
    config_path: str | None,
    bind_address: str,
    secure_port: int,
    tls_cert_file: str | None,
    tls_private_key_file: str | None,
    authentication_kubeconfig: str | None,
    authorization_kubeconfig: str | None,
    authorization_always_allow_paths: str,
    health_port: int | None,
    health_address: str,
    leader_elect: bool | None,
    seed: str,
    feature_gates: str,
    logging_format: str,
    verbosity: int,
    plugins: tuple[str, ...],
    enabled: tuple[str, ...],
    disabled: tuple[str, ...],
    explain: bool,
    explain_keep: int,
    batch_window: str | None,
    batch_timeout: str | None,
    api_worker: bool,
) -> None:
    """Schedule the pods of a real cluster (those whose schedulerName is ours)."""
    import asyncio

    from kubesched.kube.api_worker.spawn import worker_started_ahead

    # The API worker's process starts first: its interpreter and imports run on
    # another core while this one imports the scheduler (it waits for its Start
    # frame). One event loop for it and the run.
    with asyncio.Runner() as loop, worker_started_ahead(loop, api_worker) as spawned:
        from kubesched.config import ConfigError
        from kubesched.framework.registry import UnknownPluginError
        from kubesched.kube.config import KubeConfigError
        from kubesched.kube.runner import RunOptions, run, scheduler_config
        from kubesched.kube.startup_checks import StartupError
        from kubesched.logs import configure_logging
        from kubesched.plugins.helpers.args import ArgsError

        gates = feature_gates_from_option(feature_gates)
        always_allow = checked_secure_serving(
            tls_cert_file, tls_private_key_file, authorization_always_allow_paths
        )
        if batch_timeout is not None and batch_window is None:
            raise click.BadParameter("needs --batch-window", param_hint="--batch-timeout")
        configure_logging("json" if logging_format == "json" else "text", verbosity)
        registry = plugin_registry(plugins)
        try:
            config = scheduler_config(config_path, gates, registry)
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from None
        # As simulate applies them: on every profile of the file (or the default one).
        for note in apply_plugin_options(config.profiles, registry, enabled, disabled, config_path):
            logging.getLogger("kubesched.run").warning("%s", note)
        options = RunOptions(
            kubeconfig=kubeconfig,
            context=context,
            config=config_path,
            health_host=health_address,
            health_port=health_port,
            seed=seed_value(seed),
            leader_elect=leader_elect,
            bind_address=bind_address,
            secure_port=secure_port,
            tls_cert_file=tls_cert_file,
            tls_private_key_file=tls_private_key_file,
            authentication_kubeconfig=authentication_kubeconfig,
            authorization_kubeconfig=authorization_kubeconfig,
            authorization_always_allow_paths=always_allow,
            explain=explain,
            explain_keep=explain_keep,
            registry=registry,
            scheduler_config=config,
            gates=gates,
            batch_window=(
                None if batch_window is None else _duration(batch_window, "--batch-window")
            ),
            batch_timeout=(
                1.0 if batch_timeout is None else _duration(batch_timeout, "--batch-timeout")
            ),
            api_worker=api_worker,
            api_worker_process=spawned,
            logging_format=logging_format,
            verbosity=verbosity,
        )
        try:
            code = loop.run(run(options))
        except (ConfigError, KubeConfigError, UnknownPluginError, ArgsError, StartupError) as exc:
            # A plugin's args are checked again when it is built (out-of-tree plugins
            # only then): still the operator's mistake, one line. A port in use or a
            # kind the API server does not serve: one line too, exit 1 (as
            # kube-scheduler's "command failed").
            raise click.ClickException(str(exc)) from None
    sys.exit(code)


@main.command("extender", cls=_KlogFlags)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).",
)
@click.option("--context", default=None, help="kubeconfig context to use.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="KubeSchedulerConfiguration file (its profiles' plugins answer the verbs).",
)
@click.option(
    "--bind-address",
    default="127.0.0.1",
    show_default=True,
    help="The address the secure port listens on (default: kube-scheduler in the same pod).",
)
@click.option(
    "--secure-port",
    type=click.IntRange(1, 65535),
    # Not kube-scheduler's 10259: both may run in one pod.
    default=10260,
    show_default=True,
    help="HTTPS port of /scheduler/filter, /scheduler/prioritize, /scheduler/preempt, "
    "the health endpoints and /metrics.",
)
@secure_serving_options
@click.option(
    "--authorization-always-allow-paths",
    default="/healthz,/readyz,/livez,/scheduler/*",
    show_default=True,
    help="Comma-separated paths served without authorization ('*' at the end: a "
    "prefix); kube-scheduler calls the verbs without credentials.",
)
@feature_gates_option
@click.option(
    "--logging-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("-v", "--v", "verbosity", type=int, default=0, help="Log verbosity, as klog's -v.")
@plugin_options
def extender_command(
    kubeconfig: str | None,
    context: str | None,
    config_path: str | None,
    bind_address: str,
    secure_port: int,
    tls_cert_file: str | None,
    tls_private_key_file: str | None,
    authentication_kubeconfig: str | None,
    authorization_kubeconfig: str | None,
    authorization_always_allow_paths: str,
    feature_gates: str,
    logging_format: str,
    verbosity: int,
    plugins: tuple[str, ...],
    enabled: tuple[str, ...],
    disabled: tuple[str, ...],
) -> None:
    """Serve the profile's Filter and Score plugins to a stock kube-scheduler, over
    the scheduler extender protocol (filter, prioritize and preempt verbs)."""
    import asyncio

    from kubesched.config import ConfigError
    from kubesched.framework.registry import UnknownPluginError
    from kubesched.kube.config import KubeConfigError
    from kubesched.kube.extender_server import serve
    from kubesched.kube.runner import RunOptions, scheduler_config
    from kubesched.kube.startup_checks import StartupError
    from kubesched.logs import configure_logging
    from kubesched.plugins.helpers.args import ArgsError

    gates = feature_gates_from_option(feature_gates)
    always_allow = checked_secure_serving(
        tls_cert_file, tls_private_key_file, authorization_always_allow_paths
    )
    configure_logging("json" if logging_format == "json" else "text", verbosity)
    registry = plugin_registry(plugins)
    try:
        config = scheduler_config(config_path, gates, registry)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    for note in apply_plugin_options(config.profiles, registry, enabled, disabled, config_path):
        logging.getLogger("kubesched.extender").warning("%s", note)
    options = RunOptions(
        kubeconfig=kubeconfig,
        context=context,
        config=config_path,
        leader_elect=False,
        bind_address=bind_address,
        secure_port=secure_port,
        tls_cert_file=tls_cert_file,
        tls_private_key_file=tls_private_key_file,
        authentication_kubeconfig=authentication_kubeconfig,
        authorization_kubeconfig=authorization_kubeconfig,
        authorization_always_allow_paths=always_allow,
        registry=registry,
        scheduler_config=config,
        gates=gates,
        api_worker=False,
        logging_format=logging_format,
        verbosity=verbosity,
    )
    try:
        code = asyncio.run(serve(options))
    except (ConfigError, KubeConfigError, UnknownPluginError, ArgsError, StartupError) as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)


main.add_command(explain_command)
main.add_command(capacity_command)
main.add_command(plan_command)
main.add_command(sweep_command)

if __name__ == "__main__":
    main()
