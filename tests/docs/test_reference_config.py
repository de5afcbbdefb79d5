"""docs/reference/config.md is the page tests/docs/reference_config.py generates from the
configuration loader, and what the page claims about fields holds for the loader."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from kubesched.config.file import API_VERSION, KIND, ConfigError, parse_config
from tests.docs.reference_config import (
    FIELDS,
    PAGE,
    REFUSED,
    documented_fields,
    no_effect_fields,
    plugin_args,
    refusals,
    render,
)

BASE: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}


def test_config_page_is_generated() -> None:
    assert PAGE.read_text() == render(), f"{PAGE} is stale: run `make reference`"


def test_every_field_the_loader_reads_is_described() -> None:
    """FIELDS names exactly the fields of the decoder's types: a field added to
    kubesched.config.file without a sentence here, or one removed, fails."""
    paths = documented_fields()
    assert len(paths) == len(set(paths))
    assert set(paths) == set(FIELDS)


def test_no_effect_fields_really_change_nothing() -> None:
    fields = no_effect_fields()
    assert "delayCacheUntilActive" in fields
    # A field the scheduler uses is not listed.
    assert "podMaxBackoffSeconds" not in fields
    assert "leaderElection.leaderElect" not in fields
    base = parse_config(BASE)
    changed = parse_config({**BASE, "delayCacheUntilActive": True})
    # All that differs is the file as written, and the warning that says so.
    assert dataclasses.replace(changed, raw={}, warnings=[]) == dataclasses.replace(base, raw={})
    assert changed.raw != base.raw
    assert changed.warnings == [
        "config: delayCacheUntilActive: true has no effect: kubesched fills its cache before "
        "it becomes the leader, so a new leader schedules at once"
    ]


def test_refused_fields_are_refused_naming_the_field() -> None:
    refused = refusals()
    # kube-scheduler's profiling switches have no counterpart: refused as unknown.
    assert "enableProfiling" in {path for path, _ in refused}
    for path, error in refused:
        assert path.rsplit(".", 1)[-1] in error
        data = dict(REFUSED)[path]
        with pytest.raises(ConfigError):
            parse_config({**BASE, **data}, "config.yaml")


def test_documented_plugin_defaults_are_what_plugins_run_with() -> None:
    """The defaults on the page load back: a file giving each plugin the args the page
    shows is accepted and yields the same typed args."""
    args = plugin_args()
    assert {name for name, _ in args} >= {"NodeResourcesFit", "DefaultPreemption"}
    config = [
        {"name": name, "args": msgspec.json.decode(msgspec.json.encode(value))}
        for name, value in args
    ]
    loaded = parse_config({**BASE, "profiles": [{"pluginConfig": config}]})
    profile_args = loaded.profiles[0].plugin_config
    for name, value in args:
        assert profile_args[name] == value, name
