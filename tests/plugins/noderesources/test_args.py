"""NodeResourcesFitArgs and NodeResourcesBalancedAllocationArgs: decoding, v1 defaults,
validation texts (validation_pluginargs.go), and the typed args reaching the plugins."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.plugins.noderesources.args import (
    DEFAULT_RESOURCES,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
    balanced_allocation_args,
    node_resources_fit_args,
)

ARGS = "profiles[0].pluginConfig[2].args"


def fit_errors(raw: dict[str, Any], path: str = ARGS) -> list[str]:
    with pytest.raises(ArgsError) as err:
        node_resources_fit_args(raw, path)
    return list(err.value.errors)


def balanced_errors(raw: dict[str, Any], path: str = ARGS) -> list[str]:
    with pytest.raises(ArgsError) as err:
        balanced_allocation_args(raw, path)
    return list(err.value.errors)


# --- NodeResourcesFitArgs ---------------------------------------------------------------


def test_fit_defaults() -> None:
    for raw in (None, {}, {"scoringStrategy": None}):
        args = node_resources_fit_args(raw)
        assert args == NodeResourcesFitArgs(
            scoring_strategy=ScoringStrategy(type="LeastAllocated", resources=DEFAULT_RESOURCES)
        )
    # resources not given: cpu and memory; a weight not given (or 0, or null): 1
    args = node_resources_fit_args({"scoringStrategy": {"type": "MostAllocated"}})
    assert args.scoring_strategy.resources == DEFAULT_RESOURCES
    args = node_resources_fit_args(
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [
                    {"name": "cpu", "weight": 0},
                    {"name": "memory"},
                    {"name": "example.com/gpu", "weight": None},
                ],
            }
        }
    )
    assert args.scoring_strategy.resources == (
        ResourceSpec("cpu", 1),
        ResourceSpec("memory", 1),
        ResourceSpec("example.com/gpu", 1),
    )


def test_unknown_fields_and_other_kinds_are_refused() -> None:
    # Upstream decodes pluginConfig args strictly.
    with pytest.raises(ArgsError, match="args: Object contains unknown field `somethingElse`"):
        node_resources_fit_args({"somethingElse": 1}, "args")
    with pytest.raises(ArgsError, match=r"args.scoringStrategy: Object contains unknown field `x`"):
        node_resources_fit_args({"scoringStrategy": {"type": "MostAllocated", "x": 1}}, "args")
    # The optional TypeMeta must name these args.
    assert node_resources_fit_args(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs"}
    ) == node_resources_fit_args(None)
    with pytest.raises(ArgsError, match=r'args\.kind: Unsupported value: "InterPodAffinityArgs"'):
        node_resources_fit_args({"kind": "InterPodAffinityArgs"}, "args")
    with pytest.raises(ArgsError, match=r'args\.apiVersion: Unsupported value: "v1beta9"'):
        node_resources_fit_args({"apiVersion": "v1beta9"}, "args")


def test_fit_decodes_camel_case_and_numbers_in_strings() -> None:
    args = node_resources_fit_args(
        {
            "ignoredResources": ["example.com/a"],
            "ignoredResourceGroups": ["example.org"],
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": "3"}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": "100", "score": 0}]
                },
            },
        }
    )
    assert args.ignored_resources == ("example.com/a",)
    assert args.ignored_resource_groups == ("example.org",)
    assert args.scoring_strategy == ScoringStrategy(
        type="RequestedToCapacityRatio",
        resources=(ResourceSpec("cpu", 3),),
        requested_to_capacity_ratio=RequestedToCapacityRatioParam(
            shape=(UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))
        ),
    )


def test_fit_wrong_types_name_the_field() -> None:
    assert fit_errors({"scoringStrategy": 5}) == [
        f"{ARGS}.scoringStrategy: Expected `object`, got `int`"
    ]
    assert fit_errors({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 2.5}]}}) == [
        f"{ARGS}.scoringStrategy.resources[0].weight: Expected `int`, got `float`"
    ]
    assert fit_errors({"ignoredResources": "nvidia.com/gpu"}) == [
        f"{ARGS}.ignoredResources: Expected `array`, got `str`"
    ]
    with pytest.raises(ArgsError, match=r"^Expected `object`, got `array`$"):
        node_resources_fit_args([], "")  # type: ignore[arg-type]


def test_fit_weight_range() -> None:
    for weight in (101, -1):
        assert fit_errors(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": weight}],
                }
            }
        ) == [
            f"{ARGS}.scoringStrategy.resources[0].weight: Invalid value: {weight}: "
            "resource weight of cpu not in valid range (0, 100]"
        ]


def test_fit_strategy_type() -> None:
    supported = '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
    assert fit_errors({"scoringStrategy": {"type": "Bogus"}}) == [
        f'{ARGS}.scoringStrategy.type: Unsupported value: "Bogus": supported values: {supported}'
    ]
    # A strategy without a type is not defaulted (only a missing strategy is).
    assert fit_errors({"scoringStrategy": {}}) == [
        f'{ARGS}.scoringStrategy.type: Unsupported value: "": supported values: {supported}'
    ]


def test_fit_requested_to_capacity_ratio() -> None:
    ratio = f"{ARGS}.scoringStrategy.requestedToCapacityRatio"
    assert fit_errors({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}) == [
        f"{ratio}: Required value: must be specified when type is RequestedToCapacityRatio"
    ]
    assert fit_errors(
        {"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": {}}}
    ) == [f"{ratio}: Forbidden: must be nil when type is not RequestedToCapacityRatio"]
    assert fit_errors(
        {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {}}}
    ) == [f"{ratio}.shape: Required value: at least one point must be specified"]
    shape = [
        {"utilization": 50, "score": 1},
        {"utilization": 50, "score": 11},
        {"utilization": 101, "score": -1},
    ]
    assert fit_errors(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": shape},
            }
        }
    ) == [
        f"{ratio}.shape[1].utilization: Invalid value: 50: "
        "values must be sorted in increasing order",
        f"{ratio}.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
        f"{ratio}.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]",
        f"{ratio}.shape[2].score: Invalid value: -1: not in valid range [0, 10]",
    ]


def test_fit_ignored_resources() -> None:
    assert fit_errors(
        {"ignoredResources": ["ok.io/gpu", "bad name"], "ignoredResourceGroups": ["a/b", "c d"]}
    ) == [
        f'{ARGS}.ignoredResources[1]: Invalid value: "bad name": '
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        f'{ARGS}.ignoredResourceGroups[0]: Invalid value: "a/b": resource group name can\'t '
        "contain '/'",
        f'{ARGS}.ignoredResourceGroups[1]: Invalid value: "c d": '
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]


def test_fit_errors_without_a_path_name_the_field_alone() -> None:
    with pytest.raises(ArgsError) as err:
        NodeResourcesFit({"scoringStrategy": {"type": "Bogus"}, "ignoredResources": ["a b"]})
    assert str(err.value).startswith('[ignoredResources[0]: Invalid value: "a b": ')
    assert "scoringStrategy.type: Unsupported value" in str(err.value)


def test_fit_plugin_takes_typed_args() -> None:
    typed = NodeResourcesFitArgs(
        ignored_resource_groups=("example.com",),
        scoring_strategy=ScoringStrategy(
            type="RequestedToCapacityRatio",
            resources=(ResourceSpec("cpu"),),
            requested_to_capacity_ratio=RequestedToCapacityRatioParam(
                shape=(UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10))
            ),
        ),
    )
    fit = NodeResourcesFit(typed)
    # defaulted (weight 0 -> 1), the shape's scores stretched to 0..100 for scoring
    assert fit.resources == (ResourceSpec("cpu", 1),)
    assert [(p.utilization, p.score) for p in fit.shape] == [(0, 0), (100, 100)]
    assert fit.ignored_resource_groups == frozenset({"example.com"})
    # Plugin.args stays the mapping in API spelling
    assert fit.args["scoringStrategy"]["type"] == "RequestedToCapacityRatio"
    assert NodeResourcesFit(fit.args).fit_args == fit.fit_args
    with pytest.raises(ArgsError, match=r"^scoringStrategy.resources\[0\].weight"):
        NodeResourcesFit(
            NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(
                    type="LeastAllocated", resources=(ResourceSpec("cpu", 200),)
                )
            )
        )


def test_fit_args_are_frozen() -> None:
    args = node_resources_fit_args({})
    with pytest.raises(AttributeError):
        args.ignored_resources = ("x",)  # type: ignore[misc]


# --- NodeResourcesBalancedAllocationArgs ------------------------------------------------


def test_balanced_allocation_defaults() -> None:
    assert balanced_allocation_args(None).resources == DEFAULT_RESOURCES
    assert balanced_allocation_args({"resources": []}).resources == DEFAULT_RESOURCES
    args = balanced_allocation_args({"resources": [{"name": "cpu"}, {"name": "example.com/x"}]})
    assert args == NodeResourcesBalancedAllocationArgs(
        resources=(ResourceSpec("cpu", 1), ResourceSpec("example.com/x", 1))
    )


def test_balanced_allocation_validation() -> None:
    assert balanced_errors({"resources": [{"name": "cpu", "weight": 2}, {"name": "cpu"}]}) == [
        f"{ARGS}.resources[0].weight: Invalid value: 2: must be 1",
        f'{ARGS}.resources[1].name: Duplicate value: "cpu"',
    ]
    assert balanced_errors({"resources": [{"name": 7}]}) == [
        f"{ARGS}.resources[0].name: Expected `str`, got `int`"
    ]


def test_balanced_allocation_plugin_takes_typed_args() -> None:
    plugin = NodeResourcesBalancedAllocation(
        NodeResourcesBalancedAllocationArgs(resources=(ResourceSpec("memory", 1),))
    )
    assert plugin.resources == (ResourceSpec("memory", 1),)
    assert plugin.args == {"resources": ({"name": "memory", "weight": 1},)}


# --- both plugins, built from raw args --------------------------------------------------


def test_args_defaults_and_validation() -> None:
    fit = NodeResourcesFit()
    assert fit.strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 1), ("memory", 1)]
    fit = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated"}})
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 1), ("memory", 1)]
    fit = NodeResourcesFit(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}
    )
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 1)]
    with pytest.raises(ArgsError, match='Unsupported value: "Bogus"'):
        NodeResourcesFit({"scoringStrategy": {"type": "Bogus"}})
    with pytest.raises(ArgsError, match=r"not in valid range \(0, 100\]"):
        NodeResourcesFit(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            }
        )
    with pytest.raises(ArgsError, match="must be specified when type is RequestedToCapacityRatio"):
        NodeResourcesFit({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})
    with pytest.raises(ArgsError, match="sorted in increasing order"):
        NodeResourcesFit(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            }
        )
    with pytest.raises(ArgsError, match="can't contain '/'"):
        NodeResourcesFit({"ignoredResourceGroups": ["example.com/x"]})
    with pytest.raises(ArgsError, match="must be 1"):
        NodeResourcesBalancedAllocation({"resources": [{"name": "cpu", "weight": 2}]})
    with pytest.raises(ArgsError, match="Duplicate value"):
        NodeResourcesBalancedAllocation({"resources": [{"name": "cpu"}, {"name": "cpu"}]})
