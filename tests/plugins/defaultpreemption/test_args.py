"""DefaultPreemptionArgs: decoding (strict), v1 defaults, ValidateDefaultPreemptionArgs' texts."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.plugins.defaultpreemption.args import (
    DefaultPreemptionArgs,
    default_preemption_args,
)
from kubesched.plugins.helpers.args import ArgsError

ARGS = "profiles[1].pluginConfig[0].args"


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ArgsError) as err:
        default_preemption_args(raw, ARGS)
    return list(err.value.errors)


def test_defaults() -> None:
    assert default_preemption_args(None) == DefaultPreemptionArgs(10, 100)
    assert default_preemption_args({"minCandidateNodesPercentage": None}) == (
        DefaultPreemptionArgs(10, 100)
    )
    assert default_preemption_args(
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5}
    ) == DefaultPreemptionArgs(0, 5)
    assert errors({"other": "refused"}) == [f"{ARGS}: Object contains unknown field `other`"]


def test_only_integers() -> None:
    # Strict decoding, as the plugin always refused these.
    assert errors({"minCandidateNodesPercentage": "10"}) == [
        f"{ARGS}.minCandidateNodesPercentage: Expected `int`, got `str`"
    ]
    assert errors({"minCandidateNodesAbsolute": True}) == [
        f"{ARGS}.minCandidateNodesAbsolute: Expected `int`, got `bool`"
    ]
    assert errors({"minCandidateNodesAbsolute": 1.0}) == [
        f"{ARGS}.minCandidateNodesAbsolute: Expected `int`, got `float`"
    ]


def test_ranges() -> None:
    assert errors({"minCandidateNodesPercentage": 101, "minCandidateNodesAbsolute": -1}) == [
        f"{ARGS}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
        f"{ARGS}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
    ]
    assert errors({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}) == [
        f"{ARGS}.minCandidateNodesPercentage: Invalid value: 0: "
        "cannot be zero at the same time as minCandidateNodesAbsolute",
        f"{ARGS}.minCandidateNodesAbsolute: Invalid value: 0: "
        "cannot be zero at the same time as minCandidateNodesPercentage",
    ]


def test_plugin_takes_typed_args() -> None:
    plugin = DefaultPreemption(DefaultPreemptionArgs(40, 3))
    assert plugin.preemption_args == DefaultPreemptionArgs(40, 3)
    assert plugin.calculate_num_candidates(10) == 4
    assert plugin.args == {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 3}
    with pytest.raises(ArgsError, match=r"^minCandidateNodesPercentage: Invalid value: 101"):
        DefaultPreemption(DefaultPreemptionArgs(101, 3))
