"""VolumeBindingArgs: decoding (strict), v1 defaults, validation with
StorageCapacityScoring off (1.36's default)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.plugins.volumebinding.args import (
    UtilizationShapePoint,
    VolumeBindingArgs,
    volume_binding_args,
)

ARGS = "profiles[0].pluginConfig[4].args"


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ArgsError) as err:
        volume_binding_args(raw, ARGS)
    return list(err.value.errors)


def test_defaults_and_decoding() -> None:
    assert volume_binding_args(None) == VolumeBindingArgs(bind_timeout_seconds=600)
    assert volume_binding_args({"bindTimeoutSeconds": 0}).bind_timeout_seconds == 0
    # An empty shape always passed.
    assert volume_binding_args({"shape": []}) == VolumeBindingArgs()


def test_wrong_types_name_the_field() -> None:
    assert errors({"bindTimeoutSeconds": "30"}) == [
        f"{ARGS}.bindTimeoutSeconds: Expected `int`, got `str`"
    ]
    assert errors({"bindTimeoutSeconds": False}) == [
        f"{ARGS}.bindTimeoutSeconds: Expected `int`, got `bool`"
    ]


def test_validation() -> None:
    assert errors({"bindTimeoutSeconds": -1, "shape": [{"utilization": 0, "score": 1}]}) == [
        f"{ARGS}.bindTimeoutSeconds: Invalid value: -1: "
        "invalid BindTimeoutSeconds, should not be a negative value",
        f'{ARGS}.shape: Invalid value: [{{"utilization":0,"score":1}}]: '
        "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
    ]


def test_plugin_takes_typed_args() -> None:
    assert VolumeBinding(VolumeBindingArgs(bind_timeout_seconds=5)).bind_timeout == 5.0
    with pytest.raises(ArgsError, match=r"^shape: Invalid value"):
        VolumeBinding(VolumeBindingArgs(shape=(UtilizationShapePoint(0, 0),)))
