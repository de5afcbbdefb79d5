"""NodeAffinityArgs: decoding (strict), ValidateNodeAffinityArgs (the terms must parse)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import (
    NodeAffinity as NodeAffinitySpec,
)
from kubesched.api.objects import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
)
from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.nodeaffinity.args import NodeAffinityArgs, node_affinity_args

ARGS = "profiles[0].pluginConfig[0].args"
REQUIRED = f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = f"{ARGS}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ArgsError) as err:
        node_affinity_args(raw, ARGS)
    return list(err.value.errors)


def test_decoding() -> None:
    assert node_affinity_args(None) == NodeAffinityArgs()
    raw = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "a")]}]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 2, "preference": {"matchExpressions": [expr("disk", "Exists")]}}
        ],
    }
    expected = NodeAffinityArgs(
        added_affinity=NodeAffinitySpec(
            required_during_scheduling_ignored_during_execution=NodeSelector(
                node_selector_terms=[
                    NodeSelectorTerm(
                        match_expressions=[
                            NodeSelectorRequirement(key="zone", operator="In", values=["a"])
                        ]
                    )
                ]
            ),
            preferred_during_scheduling_ignored_during_execution=[
                PreferredSchedulingTerm(
                    weight=2,
                    preference=NodeSelectorTerm(
                        match_expressions=[NodeSelectorRequirement(key="disk", operator="Exists")]
                    ),
                )
            ],
        )
    )
    assert node_affinity_args({"addedAffinity": raw}) == expected
    assert node_affinity_args({"added_affinity": raw}) == expected  # the older spelling
    assert node_affinity_args({"addedAffinity": expected.added_affinity}) == expected


def test_wrong_types_name_the_field() -> None:
    assert errors({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": {}}}) == [
        f"{PREFERRED}: Expected `array`, got `object`"
    ]
    # strict, as the plugin's msgspec.convert was
    assert errors(
        {
            "addedAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": "2", "preference": {}}
                ]
            }
        }
    ) == [f"{PREFERRED}[0].weight: Expected `int`, got `str`"]


def test_terms_must_parse() -> None:
    assert errors(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [expr("zone", "In", "a")]},
                        {"matchExpressions": [expr("zone", "Near", "a")]},
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    # weight 0: never parsed, never scored
                    {"weight": 0, "preference": {"matchExpressions": [expr("z", "Bad")]}},
                    {"weight": 1, "preference": {"matchExpressions": [expr("a b", "Exists")]}},
                ],
            }
        }
    ) == [
        f"{REQUIRED}.nodeSelectorTerms[1].matchExpressions[0].operator: Unsupported value: 'Near'",
        f"{PREFERRED}[1].matchExpressions[0].key: Invalid value: 'a b': "
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]


def test_plugin_takes_typed_args() -> None:
    added = NodeAffinitySpec(
        required_during_scheduling_ignored_during_execution=NodeSelector(
            node_selector_terms=[
                NodeSelectorTerm(
                    match_expressions=[NodeSelectorRequirement(key="zone", operator="Exists")]
                )
            ]
        )
    )
    plugin = NodeAffinity(NodeAffinityArgs(added_affinity=added))
    assert plugin.added_node_selector is not None and len(plugin.added_node_selector) == 1
    assert plugin.added_preferred is None
    with pytest.raises(ArgsError, match=r"^addedAffinity\.requiredDuring.*'Near'$"):
        NodeAffinity(
            NodeAffinityArgs(
                added_affinity=NodeAffinitySpec(
                    required_during_scheduling_ignored_during_execution=NodeSelector(
                        node_selector_terms=[
                            NodeSelectorTerm(
                                match_expressions=[
                                    NodeSelectorRequirement(key="zone", operator="Near")
                                ]
                            )
                        ]
                    )
                )
            )
        )
