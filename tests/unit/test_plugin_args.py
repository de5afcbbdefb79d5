"""pluginConfig args in a KubeSchedulerConfiguration: each built-in plugin's args are
decoded and validated when the file is read, errors naming the profile, the
pluginConfig entry and the field (validatePluginConfig upstream)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.config import ConfigError, load_config
from kubesched.config.file import parse_config
from kubesched.config.plugin_args import plugin_args_errors
from kubesched.plugins.helpers import args as helpers_args
from kubesched.plugins.registry import in_tree_registry
from kubesched.simulation.simulator import simulate
from kubesched.testing import make_node, make_pod

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def config(*plugin_config: dict[str, Any], profiles: int = 1) -> dict[str, Any]:
    """`profiles` profiles; the last one has `plugin_config`."""
    listed: list[dict[str, Any]] = [{"schedulerName": f"s{i}"} for i in range(profiles - 1)]
    listed.append({"schedulerName": "last", "pluginConfig": list(plugin_config)})
    return {**HEAD, "profiles": listed}


def error(cfg: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config(cfg, "sched.yaml")
    return str(err.value)


GOOD_ARGS: dict[str, dict[str, Any]] = {
    "Coscheduling": {"permitWaitingTimeSeconds": 10, "podGroupBackoffSeconds": 5},
    "DefaultPreemption": {"minCandidateNodesPercentage": 5, "minCandidateNodesAbsolute": 10},
    "InterPodAffinity": {"hardPodAffinityWeight": 10, "ignorePreferredTermsOfExistingPods": True},
    "NodeAffinity": {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    },
    "NodeResourcesBalancedAllocation": {"resources": [{"name": "cpu"}, {"name": "memory"}]},
    "NodeResourcesFit": {
        "ignoredResources": ["example.com/ignored"],
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        },
    },
    "PodTopologySpread": {
        "defaultingType": "List",
        "defaultConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ],
    },
    "VolumeBinding": {"bindTimeoutSeconds": 30},
    "DynamicResources": {"filterTimeout": "5s", "bindingTimeout": "5m0s"},
}

# One bad field per plugin, and the text kube-scheduler gives for it.
BAD_ARGS: list[tuple[str, dict[str, Any], str]] = [
    (
        "Coscheduling",
        {"podGroupRejectPercentage": 101},
        "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100",
    ),
    (
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 101},
        "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
    ),
    (
        "InterPodAffinity",
        {"hardPodAffinityWeight": 101},
        "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
    ),
    (
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]
                }
            }
        },
        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator: Unsupported value: 'Near'",
    ),
    (
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 2}]},
        "resources[0].weight: Invalid value: 2: must be 1",
    ),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 101}],
            }
        },
        "scoringStrategy.resources[0].weight: Invalid value: 101: "
        "resource weight of cpu not in valid range (0, 100]",
    ),
    (
        "PodTopologySpread",
        {"defaultingType": "Sometimes"},
        'defaultingType: Unsupported value: "Sometimes": supported values: "System", "List"',
    ),
    (
        "VolumeBinding",
        {"bindTimeoutSeconds": -5},
        "bindTimeoutSeconds: Invalid value: -5: "
        "invalid BindTimeoutSeconds, should not be a negative value",
    ),
    (
        "DynamicResources",
        {"bindingTimeout": "500ms"},
        "bindingTimeout: Invalid value: 500ms: must be at least 1 second",
    ),
]


def builtins_with_args() -> list[str]:
    """The in-tree plugins that name an args decoder: those whose args the file checks."""
    registry = in_tree_registry()
    return sorted(name for name in registry if registry[name].args_decoder is not None)


def test_every_builtin_with_args_is_checked() -> None:
    assert builtins_with_args() == sorted(GOOD_ARGS)
    assert sorted(name for name, _, _ in BAD_ARGS) == sorted(GOOD_ARGS)
    for name in builtins_with_args():
        assert in_tree_registry()[name].name == name  # a built-in plugin of that name


def test_good_args_pass_and_reach_the_profile_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [{"name": name, "args": args} for name, args in GOOD_ARGS.items()]
    cfg = parse_config(config(*entries))
    profile = cfg.profiles[0]
    registry = in_tree_registry()
    assert sorted(profile.plugin_config) == sorted(GOOD_ARGS)
    for name, args in GOOD_ARGS.items():
        decode = registry[name].args_decoder
        assert decode is not None
        typed = profile.plugin_config[name]
        assert not isinstance(typed, Mapping)  # the typed args, not the mapping
        assert typed == decode(args, "")
    # and the plugins build from them without decoding them again
    monkeypatch.setattr(helpers_args, "decode_args", _no_second_decoding)
    nodes = [make_node("n1", labels={"pool": "b"}), make_node("n2", labels={"pool": "a"})]
    pod = make_pod("p", cpu="1", spec={"schedulerName": "last"})
    result = simulate(nodes, [pod], cfg.profiles, seed=1)
    assert result.placements == {"default/p": "n2"}  # addedAffinity: pool a


def _no_second_decoding(*args: object, **kwargs: object) -> NoReturn:
    raise AssertionError("a plugin decoded args the config file had decoded")


@pytest.mark.parametrize(("name", "args", "message"), BAD_ARGS, ids=[b[0] for b in BAD_ARGS])
def test_bad_args_name_profile_plugin_and_field(
    name: str, args: dict[str, Any], message: str
) -> None:
    # the bad entry is the second pluginConfig entry of the third profile
    text = error(config({"name": "ImageLocality"}, {"name": name, "args": args}, profiles=3))
    assert text == (
        f"sched.yaml: profile 'last', plugin {name}: profiles[2].pluginConfig[1].args.{message}"
    )


def test_wrong_types_name_the_field() -> None:
    text = error(
        config({"name": "VolumeBinding", "args": {"bindTimeoutSeconds": "soon"}}, profiles=2)
    )
    assert text == (
        "sched.yaml: profile 'last', plugin VolumeBinding: "
        "profiles[1].pluginConfig[0].args.bindTimeoutSeconds: Expected `int`, got `str`"
    )


def test_all_errors_of_a_profile_together() -> None:
    text = error(
        config(
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": -1}},
            {"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": -1}},
        )
    )
    assert text == (
        "sched.yaml: profile 'last', plugins InterPodAffinity, DefaultPreemption: "
        "[profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: -1: "
        "not in valid range [0, 100], profiles[0].pluginConfig[1].args.minCandidateNodesAbsolute: "
        "Invalid value: -1: not in valid range [0, inf)]"
    )


def test_args_of_a_disabled_plugin_are_checked_too() -> None:
    cfg = config({"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 200}})
    cfg["profiles"][0]["plugins"] = {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}}
    assert "hardPodAffinityWeight: Invalid value: 200" in error(cfg)


def test_other_plugins_args_are_theirs() -> None:
    assert plugin_args_errors("SomeoneElsesPlugin", {"anything": [1, 2]}, "p") == []
    assert plugin_args_errors("ImageLocality", {"x": 1}, "p") == []
    cfg = parse_config(config({"name": "SomeoneElsesPlugin", "args": {"weird": True}}))
    assert cfg.profiles[0].plugin_config["SomeoneElsesPlugin"] == {"weird": True}


def test_load_config_reads_args_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    bad = config({"name": "NodeResourcesFit", "args": {"ignoredResourceGroups": ["a/b"]}})
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == (
        f"{path}: profile 'last', plugin NodeResourcesFit: "
        "profiles[0].pluginConfig[0].args.ignoredResourceGroups[0]: "
        "Invalid value: \"a/b\": resource group name can't contain '/'"
    )


def test_run_reports_bad_args_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    bad = config({"name": "PodTopologySpread", "args": {"defaultConstraints": [{"maxSkew": 0}]}})
    path.write_text(yaml.safe_dump(bad))
    result = CliRunner().invoke(main, ["run", "--config", str(path)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "profiles[0].pluginConfig[0].args.defaultConstraints[0]" in result.output
