"""The options `simulate`, `explain` and `capacity` share: which scheduler configuration
runs (a KubeSchedulerConfiguration, plugins registered, enabled and disabled), which
manifests it runs on, and the seed of its tie-breaks. `run` takes the plugin options
(--plugin, --enable, --disable) from here too, with the same meaning and errors."""

from __future__ import annotations

import difflib
import functools
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from kubesched.api.objects import Node, Pod
from kubesched.cluster.manifests import DEFAULT_MAX_PODS, ClusterState, load_paths
from kubesched.config import ConfigError, load_config
from kubesched.framework.extender import ExtenderConfig
from kubesched.framework.features import (
    DEFAULT_GATES,
    FeatureGateError,
    FeatureGates,
    parse_feature_gates,
)
from kubesched.framework.interfaces import EXTENSION_POINTS, Plugin, ScorePlugin
from kubesched.framework.profile import PluginRef, ProfileConfig, resolve
from kubesched.framework.registry import Registry, load_plugin_path
from kubesched.logs import configure_logging
from kubesched.plugins.registry import default_registry
from kubesched.simulation.simulator import World

# Without --config, pods for the default scheduler and for kubesched by name are both
# simulated, each by a default profile.
SIMULATED_SCHEDULER_NAMES = ("default-scheduler", "kubesched")
# Tie-breaks are seeded with this unless --seed says otherwise: two runs on one input
# give the same placements.
DEFAULT_SEED = 0
# Score weights are int32 upstream; 0 means the plugin's default weight.
MAX_PLUGIN_WEIGHT = 2**31 - 1

F = TypeVar("F", bound=Callable[..., Any])


def html_option(fn: F) -> F:
    """--html FILE: also write the self-contained HTML report there."""
    return click.option(
        "--html",
        type=click.Path(dir_okay=False, writable=True, path_type=Path),
        default=None,
        metavar="FILE",
        help="Also write a self-contained HTML report (no network needed to open it).",
    )(fn)


@dataclass(frozen=True, slots=True)
class ManifestInput:
    """What a command reads: -f, --from-cluster, --kubeconfig, --context, --max-pods."""

    paths: tuple[Path, ...] = ()
    from_cluster: bool = False
    kubeconfig: str | None = None
    context: str | None = None
    max_pods: int = DEFAULT_MAX_PODS
    validate: str = "strict"


def manifest_options(fn: F) -> F:
    """-f, --from-cluster, --kubeconfig, --context, --max-pods, --validate, handed to
    the command as one `manifests: ManifestInput`."""

    @functools.wraps(fn)
    def command(
        *args: Any,
        paths: tuple[Path, ...],
        from_cluster: bool,
        kubeconfig: str | None,
        context: str | None,
        max_pods: int,
        validate: str,
        **kwargs: Any,
    ) -> Any:
        manifests = ManifestInput(paths, from_cluster, kubeconfig, context, max_pods, validate)
        return fn(*args, manifests=manifests, **kwargs)

    wrapped: Any = command
    for option in reversed(
        [
            click.option(
                "-f",
                "--filename",
                "paths",
                multiple=True,
                type=click.Path(exists=True, allow_dash=True, path_type=Path),
                help="Manifest file or folder (YAML or JSON), - for stdin; may be repeated.",
            ),
            click.option(
                "--from-cluster",
                is_flag=True,
                help="Start from a live cluster's nodes and pods (read only), "
                "then add the -f manifests.",
            ),
            click.option(
                "--kubeconfig",
                type=click.Path(exists=True, dir_okay=False),
                default=None,
                help="kubeconfig for --from-cluster.",
            ),
            click.option("--context", default=None, help="kubeconfig context for --from-cluster."),
            click.option(
                "--max-pods",
                type=click.IntRange(min=0),
                default=DEFAULT_MAX_PODS,
                show_default=True,
                help="The most pods the simulation holds; a workload whose pods would go "
                "past it is an error and is skipped.",
            ),
            click.option(
                "--validate",
                type=click.Choice(["strict", "warn", "ignore"]),
                default="strict",
                show_default=True,
                help="Field validation of the -f manifests, as kubectl's: strict refuses an "
                "object with an unknown or duplicate field, warn reports the field and "
                "keeps the object, ignore drops unknown fields; a value of the wrong type "
                "or out of range is refused in every mode, as the API server refuses it.",
            ),
        ]
    ):
        wrapped = option(wrapped)
    return cast(F, wrapped)


def plugin_options(fn: F) -> F:
    """--plugin, --enable and --disable, the same on `simulate`, `explain`, `capacity`
    and `run` (the command gets `plugins`, `enabled` and `disabled`; plugin_registry
    and apply_plugin_options give them their meaning)."""
    for option in reversed(
        [
            click.option(
                "--plugin",
                "plugins",
                multiple=True,
                metavar="MODULE:CLASS",
                help="Register a custom plugin class; enable it with --enable or --config.",
            ),
            click.option(
                "--enable",
                "enabled",
                multiple=True,
                metavar="NAME[:WEIGHT]",
                help="Enable a registered plugin at every extension point it implements, "
                "in every profile.",
            ),
            click.option(
                "--disable",
                "disabled",
                multiple=True,
                metavar="NAME",
                help="Disable a plugin at every extension point, in every profile.",
            ),
        ]
    ):
        fn = option(fn)
    return fn


def secure_serving_options(fn: F) -> F:
    """The secure port's certificate and delegated authentication, the same on
    `run` and `extender` (kube-scheduler's SecureServing and Authentication flags)."""
    for option in reversed(
        [
            click.option(
                "--tls-cert-file",
                type=click.Path(exists=True, dir_okay=False),
                default=None,
                help="Serving certificate (chain) PEM; without it a self-signed one is made "
                "in memory.",
            ),
            click.option(
                "--tls-private-key-file",
                type=click.Path(exists=True, dir_okay=False),
                default=None,
                help="The private key of --tls-cert-file.",
            ),
            click.option(
                "--authentication-kubeconfig",
                type=click.Path(dir_okay=False),
                default=None,
                help="kubeconfig for TokenReviews (default: the command's own connection).",
            ),
            click.option(
                "--authorization-kubeconfig",
                type=click.Path(dir_okay=False),
                default=None,
                help="kubeconfig for SubjectAccessReviews (default: the command's own connection).",
            ),
        ]
    ):
        fn = option(fn)
    return fn


def checked_secure_serving(
    tls_cert_file: str | None, tls_private_key_file: str | None, always_allow_paths: str
) -> tuple[str, ...]:
    """The secure port's options checked as `run` and `extender` both check them: the
    certificate and its key together, and --authorization-always-allow-paths as
    patterns (returned split)."""
    from kubesched.server.auth import always_allow_path_matcher

    if bool(tls_cert_file) != bool(tls_private_key_file):
        raise click.BadParameter(
            "--tls-cert-file and --tls-private-key-file go together",
            param_hint="--tls-cert-file",
        )
    always_allow = tuple(p.strip() for p in always_allow_paths.split(",") if p.strip())
    try:
        always_allow_path_matcher(always_allow)
    except ValueError as exc:
        raise click.BadParameter(
            str(exc), param_hint="--authorization-always-allow-paths"
        ) from None
    return always_allow


def scheduler_options(fn: F) -> F:
    """--config, --plugin, --enable, --disable, --seed, --percentage-of-nodes-to-score
    and --feature-gates, handed to the command as one `setup: SchedulerSetup` (built
    before the command runs: a bad value is a usage error naming its option)."""

    @functools.wraps(fn)
    def command(
        *args: Any,
        config_path: str | None,
        plugins: tuple[str, ...],
        enabled: tuple[str, ...],
        disabled: tuple[str, ...],
        seed: str,
        percentage_of_nodes_to_score: int | None,
        feature_gates: str,
        verbosity: int,
        no_extenders: bool,
        **kwargs: Any,
    ) -> Any:
        if verbosity:
            # The scheduler's own log lines (klog's levels), on stderr as `run`'s.
            configure_logging("text", verbosity)
        setup = scheduler_setup(
            config_path,
            plugins,
            enabled,
            disabled,
            seed,
            percentage_of_nodes_to_score,
            feature_gates,
            no_extenders,
        )
        return fn(*args, setup=setup, **kwargs)

    wrapped: Any = command
    for option in reversed(
        [
            click.option(
                "--config",
                "config_path",
                type=click.Path(exists=True, dir_okay=False),
                default=None,
                help="KubeSchedulerConfiguration file: its profiles schedule the pods "
                "whose schedulerName they have (default: the default profile, for "
                "default-scheduler and kubesched).",
            ),
            plugin_options,
            click.option(
                "--seed",
                default=str(DEFAULT_SEED),
                show_default=True,
                metavar="N|random",
                help="Seed for tie-breaks between best nodes; 'random' picks one "
                "(and the report says which).",
            ),
            click.option(
                "--percentage-of-nodes-to-score",
                type=click.IntRange(0, 100),
                default=None,
                help="Override percentageOfNodesToScore (default: the configuration's, or 0).",
            ),
            feature_gates_option,
            click.option(
                "--no-extenders",
                is_flag=True,
                default=False,
                help="Leave out the configuration's extenders (otherwise they are called "
                "over HTTP as `run` calls them, except their bind verb); the report says so.",
            ),
            click.option(
                "-v",
                "--v",
                "verbosity",
                type=click.IntRange(0),
                default=0,
                help="Log verbosity of the scheduler's log lines on stderr, as klog's -v.",
            ),
        ]
    ):
        wrapped = option(wrapped)
    return cast(F, wrapped)


def feature_gates_option(fn: F) -> F:
    """--feature-gates, as kube-scheduler's (the gates kubesched can set)."""
    return click.option(
        "--feature-gates",
        "feature_gates",
        default="",
        metavar="NAME=BOOL,...",
        help="Feature gates to turn on or off, as kube-scheduler's --feature-gates: "
        "OpportunisticBatching (beta, on by default), GenericWorkload and GangScheduling "
        "(alpha, off by default; GangScheduling needs GenericWorkload), as in v1.36.3.",
    )(fn)


def feature_gates_from_option(text: str) -> FeatureGates:
    """The --feature-gates value as the effective gates; a BadParameter naming the
    option."""
    try:
        return parse_feature_gates(text)
    except FeatureGateError as exc:
        raise click.BadParameter(str(exc), param_hint="--feature-gates") from None


@dataclass(slots=True)
class SchedulerSetup:
    """The scheduler configuration a command runs, from its options."""

    profiles: list[ProfileConfig]
    registry: Registry
    seed: int
    seed_given: bool  # False: the seed was picked at random (--seed random)
    percentage_of_nodes_to_score: int
    config_path: str | None
    gates: FeatureGates = DEFAULT_GATES
    notes: list[str] = field(default_factory=list)  # what the options did not do
    # The configuration file's HTTP extenders, called as `run` calls them.
    extenders: list[ExtenderConfig] = field(default_factory=list)


def scheduler_setup(
    config_path: str | None,
    plugins: tuple[str, ...],
    enabled: tuple[str, ...],
    disabled: tuple[str, ...],
    seed: str,
    percentage: int | None,
    feature_gates: str = "",
    no_extenders: bool = False,
) -> SchedulerSetup:
    """The profiles, registry and seed the options ask for; a UsageError / BadParameter
    naming the option for anything wrong, before anything runs."""
    gates = feature_gates_from_option(feature_gates)
    registry = plugin_registry(plugins)
    config_percentage = 0
    extenders: list[ExtenderConfig] = []
    warnings: list[str] = []
    if config_path is not None:
        try:
            config = load_config(config_path, gates)
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--config") from None
        profiles = config.profiles
        config_percentage = config.percentage_of_nodes_to_score
        extenders = config.extenders
        warnings = config.warnings
    else:
        profiles = [ProfileConfig.default(name, gates) for name in SIMULATED_SCHEDULER_NAMES]
    notes = [*warnings, *apply_plugin_options(profiles, registry, enabled, disabled, config_path)]
    notes += extender_notes(extenders, no_extenders, config_path)
    if no_extenders:
        extenders = []
    seeded = seed_value(seed)
    chosen, given = (secrets.randbelow(2**31), False) if seeded is None else (seeded, True)
    return SchedulerSetup(
        profiles,
        registry,
        chosen,
        given,
        config_percentage if percentage is None else percentage,
        config_path,
        gates,
        notes,
        extenders,
    )


def extender_notes(
    extenders: Sequence[ExtenderConfig], left_out: bool, config_path: str | None
) -> list[str]:
    """What the report says of the configuration's extenders: left out with
    --no-extenders, or called, with the verbs a simulation does not call."""
    if not extenders:
        return []
    if left_out:
        return [
            f"--no-extenders: the {len(extenders)} extender(s) of {config_path} are left out: "
            "their filters, scores and preemption verdicts are not applied"
        ]
    notes = []
    for ext in extenders:
        verbs = [
            verb
            for verb, name in (
                ("filter", ext.filter_verb),
                ("prioritize", ext.prioritize_verb),
                ("preempt", ext.preempt_verb),
            )
            if name
        ]
        line = f"extender {ext.url_prefix} called ({', '.join(verbs) or 'no verb'})"
        if ext.bind_verb:
            line += "; its bind verb is not: a simulation binds in memory and writes nothing"
        notes.append(line)
    return notes


def plugin_registry(plugins: Sequence[str]) -> Registry:
    """The default plugins and the --plugin classes; a BadParameter naming --plugin
    for a class that does not load or a name registered twice."""
    loaded: list[type[Plugin]] = []
    for target in plugins:
        try:
            loaded.append(load_plugin_path(target))
        except Exception as exc:
            raise click.BadParameter(f"{target}: {exc}", param_hint="--plugin") from None
    try:
        return default_registry(loaded)
    except ValueError as exc:  # two plugins of one name
        raise click.BadParameter(str(exc), param_hint="--plugin") from None


def apply_plugin_options(
    profiles: Sequence[ProfileConfig],
    registry: Registry,
    enabled: Sequence[str],
    disabled: Sequence[str],
    config_path: str | None,
) -> list[str]:
    """--enable and --disable on every profile, then each profile checked as the
    framework would (check_profile); what the options did not do, as notes. A
    BadParameter naming the option (or --config, for a profile the file broke)."""
    notes: list[str] = []
    for spec in enabled:
        # A plugin that is not registered, or a weight that is not an int32
        # (PluginConfig's Weight) of at least 0, is a usage error, never a traceback.
        name, _, weight_text = spec.partition(":")
        if name not in registry:
            raise click.BadParameter(
                f"{spec}: {unknown_plugin(name, registry)}; register others with --plugin",
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
        if weight and not issubclass(registry[name], ScorePlugin):
            # getValidScoreWeights skips a plugin without Score: its weight does nothing.
            notes.append(f"--enable {spec}: {name} has no Score, its weight is ignored")
        for profile in profiles:
            profile.plugins["multiPoint"].enabled.append(PluginRef(name, weight))
    for name in disabled:
        if name not in registry:
            raise click.BadParameter(unknown_plugin(name, registry), param_hint="--disable")
        for profile in profiles:
            disable(profile, name)
    # A profile the options broke is the options' fault; one the file broke, the file's.
    changed = [
        option for option, given in (("--enable", enabled), ("--disable", disabled)) if given
    ]
    hint = " / ".join(changed) if changed else "--config"
    for profile in profiles:
        check_profile(profile, registry, hint, config_path)
    return notes


def seed_value(text: str) -> int | None:
    """--seed N|random, the same on every command: None for random."""
    if text == "random":
        return None
    try:
        return int(text)
    except ValueError:
        raise click.BadParameter(f"{text!r}: an integer or 'random'", param_hint="--seed") from None


def unknown_plugin(name: str, registry: Registry) -> str:
    """No plugin of that name: the closest names first, then every known one."""
    close = difflib.get_close_matches(name, list(registry), n=3)
    guess = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown plugin {name!r}{guess} (known: {', '.join(sorted(registry))})"


def disable(profile: ProfileConfig, name: str) -> None:
    """Take `name` out of every extension point of the profile, as a `disabled` entry
    of multiPoint and of each point would."""
    for point, plugins in profile.plugins.items():
        plugins.enabled = [ref for ref in plugins.enabled if ref.name != name]
        if point == "multiPoint":
            plugins.disabled.append(PluginRef(name))


def check_profile(
    profile: ProfileConfig, registry: Registry, hint: str, config_path: str | None = None
) -> None:
    """What the framework would refuse (frameworkImpl's NewFramework): unknown plugins,
    not exactly one QueueSort, no Bind plugin."""
    where = f"profile {profile.scheduler_name!r}"
    if config_path is not None:
        where = f"{config_path}: {where}"
    for plugins in profile.plugins.values():
        for ref in plugins.enabled:
            if ref.name not in registry:
                close = difflib.get_close_matches(ref.name, list(registry), n=3)
                guess = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                raise click.BadParameter(
                    f"{where}: {ref.name!r} does not exist{guess}", param_hint=hint
                )
    resolved = resolve(profile, EXTENSION_POINTS, registry)
    if len(resolved.points["queueSort"]) != 1:
        raise click.BadParameter(
            f"{where}: exactly one queueSort plugin must be enabled, "
            f"found {len(resolved.points['queueSort'])}",
            param_hint=hint,
        )
    if not resolved.points["bind"]:
        raise click.BadParameter(f"{where}: at least one bind plugin is needed", param_hint=hint)


def load_manifests(manifests: ManifestInput) -> ClusterState:
    """The -f manifests, on top of the live cluster with --from-cluster."""
    paths, from_cluster = manifests.paths, manifests.from_cluster
    if not paths and not from_cluster:
        raise click.UsageError("give manifests with -f, or --from-cluster, or both")
    before: list[tuple[str, int, object]] = []
    notes: list[str] = []
    if from_cluster:
        import asyncio

        from kubesched.kube.snapshot import read_cluster

        try:
            snapshot = asyncio.run(read_cluster(manifests.kubeconfig, manifests.context))
        except Exception as exc:
            raise click.ClickException(f"cannot read the cluster: {exc}") from None
        before, notes = snapshot.documents, snapshot.notes
    state = load_paths(paths, before, manifests.max_pods, manifests.validate)
    state.notes[:0] = notes
    return state


def world_of(
    state: ClusterState,
    setup: SchedulerSetup,
    nodes: Sequence[Node] | None = None,
    pods: Sequence[Pod] | None = None,
) -> World:
    """What a simulation starts from: the manifests' objects with the command's
    configuration; `nodes` and `pods` replace the manifests' where given (capacity
    leaves excluded nodes out, simulate puts running pods first)."""
    return World.of_state(
        state,
        setup.profiles,
        registry=setup.registry,
        gates=setup.gates,
        extenders=setup.extenders,
        nodes=nodes,
        pods=pods,
    )


def seed_note(setup: SchedulerSetup) -> str:
    """How to repeat the run: the seed of its tie-breaks."""
    if setup.seed_given:
        return f"tie-breaks seeded with {setup.seed}"
    return f"tie-breaks seeded at random with {setup.seed}: repeat with --seed {setup.seed}"
