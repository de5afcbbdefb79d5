"""Reading KubeSchedulerConfiguration files with kube-scheduler's defaults.

Unknown fields and wrong types are errors naming the field's path, as
kube-scheduler's strict decoding makes them. Plugins a profile names are
merged into the default plugin set as upstream's mergePlugins does.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec
import yaml

from kubesched.api.bounded_yaml import YamlLimitError, load_bounded
from kubesched.api.durations import DurationError, parse_go_duration
from kubesched.config.extenders import apply_ignored_resources, parse_extenders
from kubesched.config.plugin_args import decode_plugin_args
from kubesched.framework.extender import ExtenderConfig
from kubesched.framework.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.profile import (
    PluginRef,
    PluginSet,
    ProfileConfig,
    default_multi_point,
)
from kubesched.plugins.helpers.args import ArgsError, aggregate

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


class ConfigError(ValueError):
    """A configuration file kube-scheduler would refuse too."""


# The fields kube-scheduler's v1 types declare as int32 (weight, parallelism,
# percentageOfNodesToScore, clientConnection.burst): a value past int32 fails its
# decoding, so it is an error here too rather than a weight that silently dominates.
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]


class _Strict(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    pass


class PluginV1(_Strict):
    name: str
    weight: Int32 | None = None


class PluginSetV1(_Strict):
    enabled: list[PluginV1] = []
    disabled: list[PluginV1] = []


class PluginsV1(_Strict):
    pre_enqueue: PluginSetV1 | None = None
    queue_sort: PluginSetV1 | None = None
    pre_filter: PluginSetV1 | None = None
    filter: PluginSetV1 | None = None
    post_filter: PluginSetV1 | None = None
    pre_score: PluginSetV1 | None = None
    score: PluginSetV1 | None = None
    reserve: PluginSetV1 | None = None
    permit: PluginSetV1 | None = None
    pre_bind: PluginSetV1 | None = None
    bind: PluginSetV1 | None = None
    post_bind: PluginSetV1 | None = None
    multi_point: PluginSetV1 | None = None


class PluginConfigV1(_Strict):
    name: str
    args: dict[str, Any] = {}


class ProfileV1(_Strict):
    scheduler_name: str = "default-scheduler"
    percentage_of_nodes_to_score: Int32 | None = None
    plugins: PluginsV1 | None = None
    plugin_config: list[PluginConfigV1] = []


class LeaderElectionV1(_Strict):
    leader_elect: bool = True
    lease_duration: str = "15s"
    renew_deadline: str = "10s"
    retry_period: str = "2s"
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


# The wire formats kubesched speaks to the API server (kube/protobuf for protobuf).
JSON_CONTENT = "application/json"
PROTOBUF_CONTENT = "application/vnd.kubernetes.protobuf"
WIRE_FORMATS = (JSON_CONTENT, PROTOBUF_CONTENT)


class ClientConnectionV1(_Strict):
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: Int32 = 100


class KubeSchedulerConfigurationV1(_Strict):
    api_version: str
    kind: str
    parallelism: Int32 = 16
    leader_election: LeaderElectionV1 = msgspec.field(default_factory=LeaderElectionV1)
    client_connection: ClientConnectionV1 = msgspec.field(default_factory=ClientConnectionV1)
    percentage_of_nodes_to_score: Int32 | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[ProfileV1] = []
    extenders: list[Any] = []
    delay_cache_until_active: bool = False


def parse_duration(text: str, where: str) -> float:
    """A metav1.Duration ("15s", "1m30s", "500ms"), in seconds."""
    try:
        return parse_go_duration(text)
    except DurationError:
        raise ConfigError(f"{where}: invalid duration {text!r}") from None


@dataclass
class SchedulerConfig:
    """The file, defaulted and checked, in the shapes the scheduler uses."""

    profiles: list[ProfileConfig]
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff: float = 1.0
    pod_max_backoff: float = 10.0
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    lease_name: str = "kube-scheduler"
    lease_namespace: str = "kube-system"
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100
    # clientConnection.contentType (writes) and the first of acceptContentTypes
    # (lists and watches; contentType when unset).
    content_type: str = PROTOBUF_CONTENT
    accept_content_type: str = PROTOBUF_CONTENT
    raw: dict[str, Any] = field(default_factory=dict)
    # The HTTP extenders every profile calls, ignorable ones last (buildExtenders).
    extenders: list[ExtenderConfig] = field(default_factory=list)
    # What the file asks for that kubesched accepts but does not do, one line each:
    # the commands show them (notes in simulate, warnings in run's log).
    warnings: list[str] = field(default_factory=list)


def _plugin_set(value: PluginSetV1 | None) -> PluginSet:
    if value is None:
        return PluginSet()
    return PluginSet(
        [PluginRef(p.name, p.weight or 0) for p in value.enabled],
        [PluginRef(p.name) for p in value.disabled],
    )


def merge_plugin_sets(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: defaults not disabled (a custom entry of the same name takes
    its place), then the custom ones that are new."""
    disabled = {p.name for p in custom.disabled}
    custom_by_name = {p.name: p for p in custom.enabled}
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for ref in default.enabled:
            if ref.name in disabled:
                continue
            enabled.append(custom_by_name.pop(ref.name, ref))
    enabled.extend(p for p in custom.enabled if p.name in custom_by_name)
    return PluginSet(enabled, list(custom.disabled))


_POINTS = {
    "pre_enqueue": "preEnqueue",
    "queue_sort": "queueSort",
    "pre_filter": "preFilter",
    "filter": "filter",
    "post_filter": "postFilter",
    "pre_score": "preScore",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "pre_bind": "preBind",
    "bind": "bind",
    "post_bind": "postBind",
    "multi_point": "multiPoint",
}


def _profile(
    profile: ProfileV1, index: int, source: str, gates: FeatureGates = DEFAULT_GATES
) -> ProfileConfig:
    where = f"profiles[{index}]"
    if not profile.scheduler_name:
        raise ConfigError(f"{where}.schedulerName: Required value")
    pct = profile.percentage_of_nodes_to_score
    if pct is not None and not 0 <= pct <= 100:
        raise ConfigError(
            f"{where}.percentageOfNodesToScore: Invalid value: {pct}: not in valid range [0-100]"
        )
    plugins: dict[str, PluginSet] = {"multiPoint": PluginSet(default_multi_point(gates))}
    if profile.plugins is not None:
        for attr, point in _POINTS.items():
            custom = _plugin_set(getattr(profile.plugins, attr))
            base = plugins.get(point, PluginSet())
            if point == "multiPoint":
                # multiPoint's disabled list only drops defaults (mergePluginSet);
                # upstream's framework then reads each point's own disabled list,
                # never multiPoint's (expandMultiPointPlugins), so what multiPoint
                # enables runs even beside `disabled: ["*"]`. Applied here, it is
                # not kept for resolve() to apply again.
                plugins[point] = PluginSet(merge_plugin_sets(base, custom).enabled)
            else:
                plugins[point] = custom
    args: dict[str, object] = {}
    errors: list[str] = []
    refused: list[str] = []
    for i, pc in enumerate(profile.plugin_config):
        if pc.name in args:
            raise ConfigError(f"{where}.pluginConfig[{i}]: Duplicate value: {pc.name!r}")
        # A built-in plugin with an args type gets its typed args, decoded once here;
        # the others get the args as written.
        try:
            args[pc.name] = decode_plugin_args(pc.name, pc.args, f"{where}.pluginConfig[{i}].args")
        except ArgsError as err:
            args[pc.name] = pc.args  # refused below; named for the duplicate check
            errors.extend(err.errors)
            refused.append(pc.name)
    if errors:
        # Upstream's text names the entries by index; the names tell an operator
        # which profile and plugins to look at.
        raise ConfigError(
            f"{source}: profile {profile.scheduler_name!r}, "
            f"{'plugin' if len(refused) == 1 else 'plugins'} {', '.join(refused)}: "
            f"{aggregate(errors)}"
        )
    return ProfileConfig(profile.scheduler_name, plugins, args, pct)


def parse_config(
    data: object, source: str = "config", gates: FeatureGates = DEFAULT_GATES
) -> SchedulerConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a KubeSchedulerConfiguration object")
    try:
        cfg = msgspec.convert(data, KubeSchedulerConfigurationV1)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = re.search(r" - at `\$\.?(.*)`$", text)
        path = match.group(1) if match else ""
        detail = text[: match.start()] if match else text
        raise ConfigError(f"{source}: {path + ': ' if path else ''}{detail}") from None
    extenders, extender_errors = parse_extenders(cfg.extenders, source)
    if extender_errors:
        raise ConfigError("; ".join(extender_errors))
    if cfg.api_version != API_VERSION or cfg.kind != KIND:
        raise ConfigError(
            f"{source}: apiVersion/kind must be {API_VERSION}/{KIND}, "
            f"got {cfg.api_version}/{cfg.kind}"
        )
    if (
        cfg.percentage_of_nodes_to_score is not None
        and not 0 <= cfg.percentage_of_nodes_to_score <= 100
    ):
        raise ConfigError(
            f"{source}: percentageOfNodesToScore: Invalid value: "
            f"{cfg.percentage_of_nodes_to_score}: not in valid range [0-100]"
        )
    if cfg.parallelism <= 0:
        raise ConfigError(
            f"{source}: parallelism: Invalid value: {cfg.parallelism}: "
            "should be an integer value greater than zero"
        )
    if cfg.pod_initial_backoff_seconds <= 0:
        raise ConfigError(
            f"{source}: podInitialBackoffSeconds: Invalid value: must be greater than 0"
        )
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        raise ConfigError(
            f"{source}: podMaxBackoffSeconds: Invalid value: "
            "must be greater than or equal to podInitialBackoffSeconds"
        )
    content_type, accept = _wire_formats(cfg.client_connection, source)
    if cfg.leader_election.resource_lock != "leases":
        # client-go's resourcelock.New knows no other lock since Kubernetes 1.29.
        raise ConfigError(
            f"{source}: leaderElection.resourceLock: Unsupported value: "
            f'{cfg.leader_election.resource_lock!r}: supported values: "leases"'
        )
    warnings = []
    if cfg.delay_cache_until_active:
        warnings.append(
            f"{source}: delayCacheUntilActive: true has no effect: kubesched fills its "
            "cache before it becomes the leader, so a new leader schedules at once"
        )
    profiles = [_profile(p, i, source, gates) for i, p in enumerate(cfg.profiles or [ProfileV1()])]
    names = [p.scheduler_name for p in profiles]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ConfigError(f"{source}: profiles[{i}].schedulerName: Duplicate value: {name!r}")
    apply_ignored_resources(
        profiles, extenders, decode_plugin_args("NodeResourcesFit", {}, "NodeResourcesFit")
    )
    le = cfg.leader_election
    return SchedulerConfig(
        profiles=profiles,
        parallelism=cfg.parallelism,
        percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score or 0,
        pod_initial_backoff=float(cfg.pod_initial_backoff_seconds),
        pod_max_backoff=float(cfg.pod_max_backoff_seconds),
        leader_elect=le.leader_elect,
        lease_duration=parse_duration(le.lease_duration, f"{source}: leaderElection.leaseDuration"),
        renew_deadline=parse_duration(le.renew_deadline, f"{source}: leaderElection.renewDeadline"),
        retry_period=parse_duration(le.retry_period, f"{source}: leaderElection.retryPeriod"),
        lease_name=le.resource_name,
        lease_namespace=le.resource_namespace,
        kubeconfig=cfg.client_connection.kubeconfig,
        qps=cfg.client_connection.qps,
        burst=cfg.client_connection.burst,
        content_type=content_type,
        accept_content_type=accept,
        raw=data,
        # Ignorable extenders go last, so a failure of theirs never hides another's
        # verdict (buildExtenders in scheduler.go).
        extenders=sorted(extenders, key=lambda e: e.ignorable),
        warnings=warnings,
    )


def _wire_formats(connection: ClientConnectionV1, source: str) -> tuple[str, str]:
    """clientConnection's contentType, and the format lists and watches are read in:
    the first of acceptContentTypes (client-go sends them as the Accept header, so
    the server answers in the first it can), else contentType."""
    supported = ", ".join(f'"{f}"' for f in WIRE_FORMATS)
    if connection.content_type not in WIRE_FORMATS:
        raise ConfigError(
            f"{source}: clientConnection.contentType: Unsupported value: "
            f"{connection.content_type!r}: supported values: {supported}"
        )
    if not connection.accept_content_types:
        return connection.content_type, connection.content_type
    accepted = [t.split(";")[0].strip() for t in connection.accept_content_types.split(",")]
    for given in accepted:
        if given not in (*WIRE_FORMATS, "*/*"):
            raise ConfigError(
                f"{source}: clientConnection.acceptContentTypes: Unsupported value: "
                f'{given!r}: supported values: {supported}, "*/*"'
            )
    first = accepted[0] if accepted[0] in WIRE_FORMATS else connection.content_type
    return connection.content_type, first


def load_config(path: str | Path, gates: FeatureGates = DEFAULT_GATES) -> SchedulerConfig:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = load_bounded(text)
    except YamlLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
    return parse_config(data, str(path), gates)


def check_plugin_names(config: SchedulerConfig, registered: Container[str], source: str) -> None:
    """Each plugin a profile enables exists: refused with the file, before the
    scheduler connects, as NewFramework refuses it when the profile is built
    ("%s %q does not exist")."""
    for profile in config.profiles:
        for point, plugin_set in profile.plugins.items():
            for ref in plugin_set.enabled:
                if ref.name not in registered:
                    raise ConfigError(
                        f"{source}: profile {profile.scheduler_name!r}: plugins.{point}: "
                        f"plugin {ref.name!r} does not exist"
                    )
