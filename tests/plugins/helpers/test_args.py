"""The args helpers: field.Error texts, Go quoting, decoding errors with their path."""

from __future__ import annotations

import msgspec
import pytest

from kubesched.plugins.helpers.args import (
    ArgsError,
    aggregate,
    child,
    decode_args,
    duplicate,
    forbidden,
    go_quote,
    go_value,
    index,
    invalid,
    not_supported,
    raw_args,
    required,
)


class _Point(msgspec.Struct, frozen=True, rename="camel"):
    max_value: int = 0


class _Args(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    some_count: int = 3
    points: tuple[_Point, ...] = ()


def test_paths() -> None:
    assert child("", "a") == "a"
    assert child("profiles[0].pluginConfig[1].args", "a") == "profiles[0].pluginConfig[1].args.a"
    assert index(child("", "points"), 2) == "points[2]"


def test_field_error_texts() -> None:
    assert invalid("a", 5, "too big") == "a: Invalid value: 5: too big"
    assert invalid("a", "x", "bad") == 'a: Invalid value: "x": bad'
    assert invalid("a", True, "bad") == "a: Invalid value: true: bad"
    assert invalid("a", [_Point(1)], "bad") == 'a: Invalid value: [{"maxValue":1}]: bad'
    assert required("a", "needed") == "a: Required value: needed"
    assert required("a", "") == "a: Required value"
    assert forbidden("a", "no") == "a: Forbidden: no"
    assert duplicate("a", "x") == 'a: Duplicate value: "x"'
    assert not_supported("a", "z", ("x", "y")) == (
        'a: Unsupported value: "z": supported values: "x", "y"'
    )


def test_go_quote() -> None:
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("tab\there\n") == '"tab\\there\\n"'
    assert go_quote("zoné\x00") == '"zoné\\x00"'
    assert go_value(1.5) == "1.5"


def test_aggregate() -> None:
    assert aggregate(["one"]) == "one"
    assert aggregate(["one", "two"]) == "[one, two]"
    err = ArgsError(["one", "two"])
    assert isinstance(err, ValueError)
    assert err.errors == ("one", "two")
    assert str(err) == "[one, two]"


def test_decode_args() -> None:
    assert decode_args(None, _Args, strict=True) == _Args()
    # nulls are unset fields; unknown fields are ignored
    assert decode_args({"someCount": None, "other": 1}, _Args, strict=True) == _Args()
    assert decode_args({"points": [{"maxValue": None}]}, _Args, strict=True) == _Args(
        points=(_Point(0),)
    )
    # lax: numbers in strings
    assert decode_args({"someCount": "4"}, _Args, strict=False) == _Args(some_count=4)
    with pytest.raises(ArgsError) as err:
        decode_args({"someCount": "4"}, _Args, strict=True, path="p.args")
    assert err.value.errors == ("p.args.someCount: Expected `int`, got `str`",)
    with pytest.raises(ArgsError) as err:
        decode_args({"points": [{}, {"maxValue": []}]}, _Args, strict=True)
    assert str(err.value) == "points[1].maxValue: Expected `int`, got `array`"
    with pytest.raises(ArgsError) as err:
        decode_args([1], _Args, strict=True, path="p.args")  # type: ignore[arg-type]
    assert str(err.value) == "p.args: Expected `object`, got `array`"


def test_aliases() -> None:
    aliases = {"some_count": "someCount"}
    assert decode_args({"some_count": 7}, _Args, strict=True, aliases=aliases).some_count == 7
    both = {"some_count": 7, "someCount": 8}
    assert decode_args(both, _Args, strict=True, aliases=aliases).some_count == 8


def test_raw_args() -> None:
    assert raw_args(None) is None
    assert raw_args({"a": 1}) == {"a": 1}
    assert raw_args(_Args(some_count=2)) == {"someCount": 2, "points": ()}
