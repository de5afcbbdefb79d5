"""kubesched simulate | run."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from kubesched.cli.report import as_document, print_report
from kubesched.cluster.manifests import DEFAULT_MAX_PODS, load_paths, pending_pods, running_pods
from kubesched.framework.interfaces import Plugin
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.registry import Registry, load_plugin_path
from kubesched.plugins.registry import default_registry
from kubesched.simulator import simulate

# Pods for the default scheduler, and for kubesched by name, are both simulated.
SIMULATED_SCHEDULER_NAMES = ("default-scheduler", "kubesched")
PROGRESS_THRESHOLD = 2000
# Score weights are int32 upstream; 0 means the plugin's default weight.
MAX_PLUGIN_WEIGHT = 2**31 - 1


@click.group()
@click.version_option(package_name="kubesched")
def main() -> None:
    """kubesched: a Kubernetes scheduler in Python with kube-scheduler's framework."""


@main.command("simulate")
@click.option(
    "-f",
    "--filename",
    "paths",
    multiple=True,
    type=click.Path(exists=True, allow_dash=True, path_type=Path),
    help="Manifest file or folder (YAML or JSON), - for stdin; may be repeated.",
)
@click.option(
    "--from-cluster",
    is_flag=True,
    help="Start from a live cluster's nodes and pods (read only), then add the -f manifests.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="kubeconfig for --from-cluster.",
)
@click.option("--context", default=None, help="kubeconfig context for --from-cluster.")
@click.option("--seed", type=int, default=None, help="Seed for tie-breaks between best nodes.")
@click.option(
    "-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True
)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    metavar="MODULE:CLASS",
    help="Register a custom plugin class; enable it with --enable.",
)
@click.option(
    "--enable",
    "enabled",
    multiple=True,
    metavar="NAME[:WEIGHT]",
    help="Enable a registered plugin at every extension point it implements.",
)
@click.option(
    "--percentage-of-nodes-to-score", type=click.IntRange(0, 100), default=0, show_default=True
)
@click.option(
    "--max-pods",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_PODS,
    show_default=True,
    help="The most pods the simulation holds; a workload whose pods would go past it "
    "is an error and is skipped.",
)
def simulate_command(
    paths: tuple[Path, ...],
    from_cluster: bool,
    kubeconfig: str | None,
    context: str | None,
    seed: int | None,
    output: str,
    plugins: tuple[str, ...],
    enabled: tuple[str, ...],
    percentage_of_nodes_to_score: int,
    max_pods: int,
) -> None:
    """Schedule the pods of a cluster described in manifests, touching nothing."""
    err = Console(stderr=True)
    loaded: list[type[Plugin]] = []
    for target in plugins:
        try:
            loaded.append(load_plugin_path(target))
        except Exception as exc:
            raise click.BadParameter(f"{target}: {exc}", param_hint="--plugin") from None
    try:
        registry = default_registry(loaded)
    except ValueError as exc:  # two plugins of one name
        raise click.BadParameter(str(exc), param_hint="--plugin") from None
    profiles = [_profile(name, enabled, registry) for name in SIMULATED_SCHEDULER_NAMES]

    if not paths and not from_cluster:
        raise click.UsageError("give manifests with -f, or --from-cluster, or both")
    before: list[tuple[str, int, object]] = []
    if from_cluster:
        import asyncio

        from kubesched.kube.snapshot import read_cluster

        try:
            before = asyncio.run(read_cluster(kubeconfig, context))
        except Exception as exc:
            raise click.ClickException(f"cannot read the cluster: {exc}") from None
    state = load_paths(paths, before, max_pods)
    problems = [str(p) for p in state.problems]
    if output != "text":
        for problem in problems:
            err.print(f"error: {problem}", highlight=False, markup=False, soft_wrap=True)
    pods = [*running_pods(state), *pending_pods(state)]
    pending = len(pods) - len(running_pods(state))

    show_progress = output == "text" and pending >= PROGRESS_THRESHOLD and err.is_terminal
    bar = Progress(
        "scheduling", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )
    with bar if show_progress else contextlib.nullcontext():
        task = bar.add_task("pods", total=pending)
        result = simulate(
            state.nodes,
            pods,
            profiles,
            seed=seed,
            percentage_of_nodes_to_score=percentage_of_nodes_to_score,
            progress=(
                (lambda done, total: bar.update(task, completed=done, total=total))
                if show_progress
                else None
            ),
            pdbs=state.pdbs,
            namespaces=state.namespaces,
            storage=state.storage,
            dra=state.dra,
            registry=registry,
        )

    if output == "json":
        json.dump(as_document(result, problems, state.notes), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif output == "yaml":
        yaml.safe_dump(as_document(result, problems, state.notes), sys.stdout, sort_keys=False)
    else:
        print_report(Console(), result, problems, state.notes)
    if problems:
        sys.exit(1)


class _KlogFlags(click.Command):
    """kube-scheduler's flags are pflag's, where `-v=4` is the shorthand with its
    value; click would read `=4` as the value. Rewritten to `-v4` before parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = [f"-v{arg[3:]}" if arg.startswith("-v=") else arg for arg in args]
        return super().parse_args(ctx, args)


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
@click.option(
    "--tls-cert-file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Serving certificate (chain) PEM; without it a self-signed one is made in memory.",
)
@click.option(
    "--tls-private-key-file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The private key of --tls-cert-file.",
)
@click.option(
    "--authentication-kubeconfig",
    type=click.Path(dir_okay=False),
    default=None,
    help="kubeconfig for TokenReviews (default: the scheduler's own connection).",
)
@click.option(
    "--authorization-kubeconfig",
    type=click.Path(dir_okay=False),
    default=None,
    help="kubeconfig for SubjectAccessReviews (default: the scheduler's own connection).",
)
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
@click.option("--seed", type=int, default=None, help="Seed for tie-breaks between best nodes.")
@click.option(
    "--logging-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("-v", "--v", "verbosity", type=int, default=0, help="Log verbosity, as klog's -v.")
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
    seed: int | None,
    logging_format: str,
    verbosity: int,
) -> None:
    """Schedule the pods of a real cluster (those whose schedulerName is ours)."""
    import asyncio

    from kubesched.config import ConfigError
    from kubesched.framework.registry import UnknownPluginError
    from kubesched.kube.config import KubeConfigError
    from kubesched.kube.runner import RunOptions, run
    from kubesched.logs import configure_logging
    from kubesched.plugins.helpers.args import ArgsError
    from kubesched.server.auth import always_allow_path_matcher

    if bool(tls_cert_file) != bool(tls_private_key_file):
        raise click.BadParameter(
            "--tls-cert-file and --tls-private-key-file go together",
            param_hint="--tls-cert-file",
        )
    always_allow = tuple(
        p.strip() for p in authorization_always_allow_paths.split(",") if p.strip()
    )
    try:
        always_allow_path_matcher(always_allow)
    except ValueError as exc:
        raise click.BadParameter(
            str(exc), param_hint="--authorization-always-allow-paths"
        ) from None
    configure_logging("json" if logging_format == "json" else "text", verbosity)
    options = RunOptions(
        kubeconfig=kubeconfig,
        context=context,
        config=config_path,
        health_host=health_address,
        health_port=health_port,
        seed=seed,
        leader_elect=leader_elect,
        bind_address=bind_address,
        secure_port=secure_port,
        tls_cert_file=tls_cert_file,
        tls_private_key_file=tls_private_key_file,
        authentication_kubeconfig=authentication_kubeconfig,
        authorization_kubeconfig=authorization_kubeconfig,
        authorization_always_allow_paths=always_allow,
    )
    try:
        code = asyncio.run(run(options))
    except (ConfigError, KubeConfigError, UnknownPluginError, ArgsError) as exc:
        # A plugin's args are checked again when it is built (out-of-tree plugins
        # only then): still the operator's mistake, one line.
        raise click.ClickException(str(exc)) from None
    sys.exit(code)


def _profile(name: str, enabled: tuple[str, ...], registry: Registry) -> ProfileConfig:
    """The default profile plus the --enable'd plugins at multiPoint. A plugin that
    is not registered, or a weight that is not an int32 (PluginConfig's Weight) of
    at least 0, is a usage error (exit code 2), never a traceback."""
    from kubesched.framework.profile import PluginRef

    profile = ProfileConfig.default(name)
    for spec in enabled:
        plugin, _, weight_text = spec.partition(":")
        if plugin not in registry:
            known = ", ".join(sorted(registry))
            raise click.BadParameter(
                f"{spec}: unknown plugin {plugin!r} (known: {known}; "
                f"register others with --plugin)",
                param_hint="--enable",
            )
        try:
            weight = int(weight_text or 0)
        except ValueError:
            weight = -1
        if not 0 <= weight <= MAX_PLUGIN_WEIGHT:
            raise click.BadParameter(
                f"{spec}: the weight must be an integer from 0 to {MAX_PLUGIN_WEIGHT}, "
                f"got {weight_text!r}",
                param_hint="--enable",
            )
        profile.plugins["multiPoint"].enabled.append(PluginRef(plugin, weight))
    return profile


if __name__ == "__main__":
    main()
