"""docs/reference/config.md, generated from the code that reads a KubeSchedulerConfiguration
(kubesched.config.file's msgspec types, the built-in plugins' args decoders), so that the
page cannot go stale: `make reference` rewrites it, tests/docs/test_reference_config.py
checks it.

    python -m tests.docs.reference_config [--write]

What the types cannot tell is probed through the loader itself: a field "has no effect"
when changing it leaves the loaded configuration as it was, and each refusal is shown with
the error the loader gives. Only the sentences describing each field are written here.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import yaml

from kubesched import KUBERNETES_VERSION
from kubesched.config.extenders import (
    ExtenderManagedResourceV1,
    ExtenderTLSConfigV1,
    ExtenderV1,
)
from kubesched.config.file import (
    API_VERSION,
    JSON_CONTENT,
    KIND,
    ConfigError,
    KubeSchedulerConfigurationV1,
    PluginConfigV1,
    PluginSetV1,
    PluginsV1,
    PluginV1,
    ProfileV1,
    SchedulerConfig,
    parse_config,
)
from kubesched.plugins.registry import in_tree_registry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "config.md"

# What each field is for, by its path in the file ("[]" for a list's items). The test
# checks that these are exactly the fields the decoder's types declare.
FIELDS: dict[str, str] = {
    "apiVersion": f"Must be `{API_VERSION}`.",
    "kind": f"Must be `{KIND}`.",
    # Loaded, but nothing reads SchedulerConfig.parallelism: the probe cannot tell.
    "parallelism": "Checked as kube-scheduler checks it (greater than 0), but kubesched "
    "runs a cycle on one thread, so the value changes nothing.",
    "leaderElection.leaderElect": "`run` takes part in leader election before it schedules "
    "(`--leader-elect` overrides it).",
    "leaderElection.leaseDuration": "How long a lease is held without renewal (a Go "
    'duration, "15s").',
    "leaderElection.renewDeadline": "How long the leader tries to renew before it gives up.",
    "leaderElection.retryPeriod": "How long to wait between tries to acquire or renew.",
    "leaderElection.resourceLock": "The kind of lock object.",
    "leaderElection.resourceName": "The name of the Lease.",
    "leaderElection.resourceNamespace": "The namespace of the Lease.",
    "clientConnection.kubeconfig": "kubeconfig file of `run` when `--kubeconfig` is not given.",
    "clientConnection.acceptContentTypes": "Formats lists and watches are read in, first "
    "choice first; empty: `contentType`.",
    "clientConnection.contentType": "Format of the requests kubesched sends: JSON or protobuf.",
    "clientConnection.qps": "Requests per second to the API server.",
    "clientConnection.burst": "Requests allowed above `qps` in a burst.",
    "percentageOfNodesToScore": "Share of the nodes to find feasible before scoring (0-100; "
    "unset or 0: kube-scheduler's adaptive share). A profile's own value wins.",
    "podInitialBackoffSeconds": "Backoff of a pod after its first failed attempt; greater than 0.",
    "podMaxBackoffSeconds": "Longest backoff; at least `podInitialBackoffSeconds`.",
    "profiles": "Scheduling profiles, one per scheduler name (see [Profiles](#profiles)); "
    "none: one default profile named `default-scheduler`.",
    "extenders": "HTTP scheduler extenders, called in every command (see [Extenders](#extenders)).",
    "extenders[].urlPrefix": "The extender's URL; a verb is POSTed to `urlPrefix/verb`.",
    "extenders[].filterVerb": "Verb that filters the nodes the Filter plugins found feasible.",
    "extenders[].preemptVerb": "Verb that narrows preemption's candidate nodes and victims.",
    "extenders[].prioritizeVerb": "Verb that scores the feasible nodes, 0 to 10.",
    "extenders[].weight": "Multiplies the extender's scores (scaled to 0-100); required "
    "above 0 with `prioritizeVerb`.",
    "extenders[].bindVerb": "Verb that binds the pod instead of the bind plugins (`run` "
    "only; at most one extender).",
    "extenders[].enableHTTPS": "Call the extender over HTTPS (without a CA, the certificate "
    "is not verified, as kube-scheduler does).",
    "extenders[].tlsConfig": "Client certificate, CA and server name for HTTPS (see below).",
    "extenders[].httpTimeout": 'Timeout of each call, a Go duration; unset: "5s".',
    "extenders[].nodeCacheCapable": "Send node names only (the extender keeps its own "
    "node cache), not whole Node objects.",
    "extenders[].managedResources": "Extended resources the extender manages: only pods "
    "that request one are sent to it.",
    "extenders[].managedResources[].name": "An extended resource name.",
    "extenders[].managedResources[].ignoredByScheduler": "NodeResourcesFit leaves this "
    "resource to the extender (it becomes every profile's `ignoredResources`).",
    "extenders[].ignorable": "A failure of this extender skips it instead of failing the pod.",
    "extenders[].tlsConfig.insecure": "Do not verify the server's certificate.",
    "extenders[].tlsConfig.serverName": "Name sent for SNI and checked in the certificate.",
    "extenders[].tlsConfig.certFile": "Client certificate file.",
    "extenders[].tlsConfig.keyFile": "Client key file.",
    "extenders[].tlsConfig.caFile": "CA bundle the server's certificate is checked against.",
    "extenders[].tlsConfig.certData": "Client certificate, PEM, base64; wins over `certFile`.",
    "extenders[].tlsConfig.keyData": "Client key, PEM, base64; wins over `keyFile`.",
    "extenders[].tlsConfig.caData": "CA bundle, PEM, base64; wins over `caFile`.",
    "delayCacheUntilActive": "Fill the cache only once leader (kube-scheduler); see "
    "[No effect](#no-effect).",
    "profiles[].schedulerName": "Pods whose `spec.schedulerName` is this are scheduled by "
    "this profile.",
    "profiles[].percentageOfNodesToScore": "This profile's `percentageOfNodesToScore` (0-100).",
    "profiles[].plugins": "Plugins enabled and disabled at each extension point (see "
    "[Plugins](#plugins)).",
    "profiles[].pluginConfig": "Arguments of plugins, one entry per plugin.",
    "profiles[].pluginConfig[].name": "The plugin.",
    "profiles[].pluginConfig[].args": "Its arguments: for a built-in plugin, those of "
    "[Plugin args](#plugin-args); an out-of-tree plugin reads them itself.",
    "profiles[].plugins.<point>.enabled": "Plugins to add, in order.",
    "profiles[].plugins.<point>.disabled": "Default plugins to remove; `*` removes them all.",
    "profiles[].plugins.<point>.enabled[].name": "The plugin's name.",
    "profiles[].plugins.<point>.enabled[].weight": "Score weight (score and multiPoint only; "
    "unset or 0: the plugin's default weight).",
}

# What the args types cannot say, by "Plugin.field".
ARG_NOTES: dict[str, str] = {
    "DynamicResources.filterTimeout": 'A Go duration ("10s"); shown here in seconds.',
    "DynamicResources.bindingTimeout": 'A Go duration ("10m0s"); shown here in seconds.',
}

# kube-scheduler fields kubesched may refuse, each with a file that has it; the page
# lists those the loader refuses, with its error (one it comes to accept drops out).
REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("enableProfiling", {"enableProfiling": True}),
    ("enableContentionProfiling", {"enableContentionProfiling": True}),
    (
        "profiles[].plugins.placementGenerate",
        {"profiles": [{"plugins": {"placementGenerate": {}}}]},
    ),
    ("profiles[].plugins.placementScore", {"profiles": [{"plugins": {"placementScore": {}}}]}),
]

_BASE: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}


# --- the decoder's types -----------------------------------------------------------------


def type_name(info: mi.Type) -> str:
    """A field's type as the page words it."""
    if isinstance(info, mi.IntType):
        return "int32" if info.ge == -(2**31) and info.le == 2**31 - 1 else "integer"
    if isinstance(info, mi.UnionType):
        kinds = [t for t in info.types if not isinstance(t, mi.NoneType)]
        return " or ".join(type_name(t) for t in kinds)
    if isinstance(info, mi.ListType | mi.VarTupleType):
        return f"list of {type_name(info.item_type)}"
    simple: dict[type[mi.Type], str] = {
        mi.StrType: "string",
        mi.BoolType: "boolean",
        mi.FloatType: "number",
        mi.DictType: "object",
        mi.StructType: "object",
        mi.AnyType: "any",
    }
    return simple.get(type(info), type(info).__name__)


def _struct_fields(cls: type[msgspec.Struct]) -> list[mi.Field]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return list(info.fields)


def _default(field: mi.Field) -> object:
    if field.default is not msgspec.NODEFAULT:
        return field.default
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return msgspec.NODEFAULT


def _shown(value: object) -> str:
    if value is msgspec.NODEFAULT:
        return "required"
    if value is None:
        return "unset"
    if isinstance(value, msgspec.Struct):
        return "see below"
    return f"`{msgspec.json.encode(value).decode()}`"


def walk(cls: type[msgspec.Struct], prefix: str = "") -> Iterator[tuple[str, mi.Field]]:
    """Each field of `cls` by its path, a nested struct's fields in its place (a list
    of structs, or the optional `plugins`, is described in a section of its own)."""
    for field in _struct_fields(cls):
        path = f"{prefix}{field.encode_name}"
        if isinstance(field.type, mi.StructType):
            yield from walk(field.type.cls, f"{path}.")
        else:
            yield path, field


def documented_fields() -> list[str]:
    """Every field path the page describes, in page order."""
    paths = [path for path, _ in walk(KubeSchedulerConfigurationV1)]
    paths += [f"profiles[].{path}" for path, _ in walk(ProfileV1)]
    paths += [f"profiles[].pluginConfig[].{path}" for path, _ in walk(PluginConfigV1)]
    paths += [f"profiles[].plugins.<point>.{path}" for path, _ in walk(PluginSetV1)]
    paths += [f"profiles[].plugins.<point>.enabled[].{path}" for path, _ in walk(PluginV1)]
    paths += [f"extenders[].{path}" for path, _ in walk(ExtenderV1)]
    paths += [f"extenders[].managedResources[].{p}" for p, _ in walk(ExtenderManagedResourceV1)]
    paths += [f"extenders[].tlsConfig.{path}" for path, _ in walk(ExtenderTLSConfigV1)]
    return paths


def _table(cls: type[msgspec.Struct], prefix: str) -> list[str]:
    rows = ["| field | type | default | |", "| --- | --- | --- | --- |"]
    for path, field in walk(cls):
        full = f"{prefix}{path}"
        shown = _shown(_default(field))
        rows.append(f"| `{path}` | {type_name(field.type)} | {shown} | {FIELDS[full]} |")
    return rows


# --- probes through the loader -----------------------------------------------------------


def _set(data: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    out = copy.deepcopy(data)
    *parents, last = path.split(".")
    here = out
    for name in parents:
        here = here.setdefault(name, {})
    here[last] = value
    return out


def _loaded(data: dict[str, Any]) -> SchedulerConfig:
    return dataclasses.replace(parse_config(data, "probe"), raw={}, warnings=[])


def no_effect_warning(path: str) -> str:
    """What the loader warns when the field is set other than to its default, if
    anything ("probe: " taken off)."""
    for value in _other_values(
        dict(walk(KubeSchedulerConfigurationV1))[path],
        _default(dict(walk(KubeSchedulerConfigurationV1))[path]),
    ):
        data = _set(_BASE, path, value)
        if _accepted(data):
            warnings = parse_config(data, "probe").warnings
            if warnings:
                return warnings[0].removeprefix("probe: ")
    return ""


def _other_values(field: mi.Field, default: object) -> list[object]:
    """Values of the field's type other than its default, for the loader to try."""
    info = field.type
    if isinstance(info, mi.UnionType):
        info = next(t for t in info.types if not isinstance(t, mi.NoneType))
    if isinstance(info, mi.BoolType):
        return [not default]
    if isinstance(info, mi.IntType):
        return [default + 1 if isinstance(default, int) else 50]
    if isinstance(info, mi.FloatType):
        return [float(default) + 1 if isinstance(default, float | int) else 1.0]
    if isinstance(info, mi.StrType):
        return [s for s in ("30s", JSON_CONTENT, "other") if s != default]
    return []


def no_effect_fields() -> list[str]:
    """The top-level fields kubesched accepts but does not use: no value of theirs the
    loader accepts changes the configuration it loads."""
    baseline = _loaded(_BASE)
    found = []
    for path, field in walk(KubeSchedulerConfigurationV1):
        default = _default(field)
        tried = [
            value for value in _other_values(field, default) if _accepted(_set(_BASE, path, value))
        ]
        if tried and all(_loaded(_set(_BASE, path, value)) == baseline for value in tried):
            found.append(path)
    return found


def _accepted(data: dict[str, Any]) -> bool:
    try:
        parse_config(data, "probe")
    except ConfigError:
        return False
    return True


def refusals() -> list[tuple[str, str]]:
    """Each REFUSED field the loader refuses, with the loader's error."""
    out = []
    for path, data in REFUSED:
        try:
            parse_config({**_BASE, **data}, "config.yaml")
        except ConfigError as err:
            out.append((path, str(err)))
    return out


# --- plugin args -------------------------------------------------------------------------


def _camel(text: str, cls: type[msgspec.Struct]) -> str:
    """A docstring's `snake_name`s as the file spells them."""
    names = {f.name: f.encode_name for f in _struct_fields(cls)}
    return re.sub(r"`(\w+)`", lambda m: f"`{names.get(m.group(1), m.group(1))}`", text)


def _args_section(name: str, args: msgspec.Struct) -> list[str]:
    cls = type(args)
    doc = " ".join((cls.__doc__ or "").split())
    defaults = msgspec.json.decode(msgspec.json.encode(args))
    lines = [f"### {name}", "", f"Args type `{cls.__name__}`."]
    if doc:
        lines[-1] += f" {_camel(doc, cls)}"
    lines += ["", "| field | type | default | |", "| --- | --- | --- | --- |"]
    for field in _struct_fields(cls):
        note = ARG_NOTES.get(f"{name}.{field.encode_name}", "")
        value = _shown(defaults[field.encode_name])
        lines.append(f"| `{field.encode_name}` | {type_name(field.type)} | {value} | {note} |")
    entry = [{"name": name, "args": defaults}]
    block = yaml.safe_dump({"pluginConfig": entry}, sort_keys=False, default_flow_style=False)
    lines += ["", "What the plugin runs with when the file gives no args:", ""]
    lines += ["```yaml", block.rstrip(), "```"]
    return lines


def plugin_args() -> list[tuple[str, msgspec.Struct]]:
    """Each built-in plugin with args, and the args it runs with when given none."""
    out = []
    for name, cls in sorted(in_tree_registry().items()):
        if cls.args_decoder is not None:
            args = cls.args_decoder({}, "")
            assert isinstance(args, msgspec.Struct)
            out.append((name, args))
    return out


# --- the page ----------------------------------------------------------------------------


def render() -> str:
    no_effect = no_effect_fields()
    points = [f.encode_name for f in _struct_fields(PluginsV1)]
    lines = [
        "<!-- generated by `make reference` from kubesched.config; do not edit -->",
        "# Configuration",
        "",
        "`kubesched simulate`, `explain`, `capacity` and `run` take kube-scheduler's "
        f"configuration file, a `{KIND}` of `{API_VERSION}`, with `--config`. It is read as "
        f"kube-scheduler {KUBERNETES_VERSION} reads it: unknown fields and values of the "
        "wrong type are errors naming the field, the defaults are kube-scheduler's, and "
        "the plugins a profile names are merged into the default plugins. This page is "
        "generated from the code that reads the file.",
        "",
        "## Top-level fields",
        "",
        *_table(KubeSchedulerConfigurationV1, ""),
        "",
        "## Profiles",
        "",
        "Each item of `profiles`:",
        "",
        *_table(ProfileV1, "profiles[]."),
        "",
        "Each item of `pluginConfig`:",
        "",
        *_table(PluginConfigV1, "profiles[].pluginConfig[]."),
        "",
        "### Plugins",
        "",
        "`plugins` has one plugin set per extension point: "
        + ", ".join(f"`{p}`" for p in points)
        + ". `multiPoint` enables a plugin at every extension point it implements and is "
        "merged into the default plugins, which kube-scheduler declares there; the other "
        "sets enable or disable a plugin at one point. A plugin set:",
        "",
        *_table(PluginSetV1, "profiles[].plugins.<point>."),
        "",
        "Each item of `enabled` and `disabled`:",
        "",
        *_table(PluginV1, "profiles[].plugins.<point>.enabled[]."),
        "",
        "## Plugin args",
        "",
        "The built-in plugins that take args, with their defaults. Args are checked when "
        "the file is read, in every profile, whether the profile enables the plugin or not.",
    ]
    for name, args in plugin_args():
        lines += ["", *_args_section(name, args)]
    lines += [
        "",
        "## Extenders",
        "",
        "Each item of `extenders` is an HTTP service kubesched calls as kube-scheduler "
        "does: after the Filter plugins on the feasible nodes, after the Score plugins' "
        "normalisation (score × weight × 10), in preemption and, in `run`, to bind. "
        "`simulate`, `explain` and `capacity` call them too, except the bind verb. "
        "The file is checked as kube-scheduler checks it (a positive weight with "
        "`prioritizeVerb`, one binder at most, valid and distinct managed resource names).",
        "",
        *_table(ExtenderV1, "extenders[]."),
        "",
        "Each item of `managedResources`:",
        "",
        *_table(ExtenderManagedResourceV1, "extenders[].managedResources[]."),
        "",
        "`tlsConfig`:",
        "",
        *_table(ExtenderTLSConfigV1, "extenders[].tlsConfig."),
    ]
    lines += [
        "",
        "## No effect",
        "",
        "Accepted, so that a kube-scheduler file loads as it is, but not used by kubesched "
        "(where a value other than the default could mislead, the commands say so):",
        "",
        *[
            f"- `{path}`" + (f": `{w}`" if (w := no_effect_warning(path)) else "")
            for path in no_effect
        ],
        "",
        "## Refused",
        "",
        "kube-scheduler accepts these, kubesched refuses the file:",
        "",
        "| field | kubesched says |",
        "| --- | --- |",
    ]
    for path, error in refusals():
        # A double-backtick span: the messages quote field names in backticks.
        message = error.replace("|", "\\|")
        lines.append(f"| `{path}` | `` {message} `` |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if "--write" in argv:
        PAGE.write_text(render())
        return 0
    print(render(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
