"""PodTopologySpreadArgs: decoding (strict, older spellings kept), v1 defaults,
ValidatePodTopologySpreadArgs' texts, and what the plugin makes of the args."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import LabelSelector, TopologySpreadConstraint
from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.podtopologyspread.args import (
    PodTopologySpreadArgs,
    pod_topology_spread_args,
)
from kubesched.plugins.podtopologyspread.common import SYSTEM_DEFAULT_CONSTRAINTS

ARGS = "profiles[0].pluginConfig[1].args"
ZONE = "topology.kubernetes.io/zone"
CONSTRAINTS = f"{ARGS}.defaultConstraints"


def constraint(
    skew: int | str = 1, key: str = ZONE, when: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ArgsError) as err:
        pod_topology_spread_args(raw, ARGS)
    return list(err.value.errors)


def test_defaults() -> None:
    for raw in (None, {}, {"defaultingType": None, "defaultConstraints": None}):
        assert pod_topology_spread_args(raw) == PodTopologySpreadArgs(defaulting_type="System")


def test_decoding() -> None:
    args = pod_topology_spread_args(
        {"defaultingType": "List", "defaultConstraints": [constraint(2)]}
    )
    assert args == PodTopologySpreadArgs(
        defaulting_type="List",
        default_constraints=(
            TopologySpreadConstraint(
                max_skew=2, topology_key=ZONE, when_unsatisfiable="DoNotSchedule"
            ),
        ),
    )
    # the older spellings, and constraint objects given in code
    assert (
        pod_topology_spread_args(
            {"defaulting_type": "List", "default_constraints": list(args.default_constraints)}
        )
        == args
    )


def test_wrong_types_name_the_field() -> None:
    assert errors({"defaultingType": "List", "defaultConstraints": [constraint("1")]}) == [
        f"{CONSTRAINTS}[0].maxSkew: Expected `int`, got `str`"
    ]
    assert errors({"defaultConstraints": {}}) == [f"{CONSTRAINTS}: Expected `array`, got `object`"]


def test_defaulting_type() -> None:
    assert errors({"defaultingType": "Other"}) == [
        f'{ARGS}.defaultingType: Unsupported value: "Other": supported values: "System", "List"'
    ]
    assert errors({"defaultConstraints": [constraint()]}) == [
        f'{ARGS}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'
    ]


def test_constraints() -> None:
    assert errors(
        {
            "defaultingType": "List",
            "defaultConstraints": [
                constraint(0, "", "Sometimes", labelSelector={}),
                constraint(1, "a b", ""),
                constraint(1, ZONE),
                constraint(3, ZONE),
            ],
        }
    ) == [
        f"{CONSTRAINTS}[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        f"{CONSTRAINTS}[0].topologyKey: Required value: can not be empty",
        f'{CONSTRAINTS}[0].whenUnsatisfiable: Unsupported value: "Sometimes": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"',
        f"{CONSTRAINTS}[0].labelSelector: Forbidden: constraint must not define a selector, "
        "as they deduced for each pod",
        f'{CONSTRAINTS}[1].topologyKey: Invalid value: "a b": '
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        f"{CONSTRAINTS}[1].whenUnsatisfiable: Required value: can not be empty",
        f'{CONSTRAINTS}[3]: Duplicate value: "{{{ZONE}, DoNotSchedule}}"',
    ]


def test_plugin_takes_typed_args() -> None:
    plugin = PodTopologySpread(PodTopologySpreadArgs())
    assert plugin.system_defaulted
    assert plugin.default_constraints == list(SYSTEM_DEFAULT_CONSTRAINTS)
    listed = TopologySpreadConstraint(max_skew=1, topology_key=ZONE, when_unsatisfiable="X")
    with pytest.raises(ArgsError, match=r"^defaultConstraints\[0\]\.whenUnsatisfiable"):
        PodTopologySpread(
            PodTopologySpreadArgs(defaulting_type="List", default_constraints=(listed,))
        )
    ok = TopologySpreadConstraint(max_skew=1, topology_key=ZONE, when_unsatisfiable="DoNotSchedule")
    plugin = PodTopologySpread(
        PodTopologySpreadArgs(defaulting_type="List", default_constraints=(ok,))
    )
    assert not plugin.system_defaulted
    assert plugin.default_constraints == [ok]
    with pytest.raises(ArgsError, match="Forbidden"):
        PodTopologySpread(
            PodTopologySpreadArgs(
                defaulting_type="List",
                default_constraints=(
                    TopologySpreadConstraint(
                        max_skew=1,
                        topology_key=ZONE,
                        when_unsatisfiable="DoNotSchedule",
                        label_selector=LabelSelector(),
                    ),
                ),
            )
        )
