"""Unreserve and PostBind cannot fail the pod: a plugin that raises there is logged
(plugin, pod, node and the error, at error level) and the other plugins still run."""

from __future__ import annotations

import logging

import pytest

from kubesched.framework import interfaces as ifc
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.logs import JSONFormatter, TextFormatter
from kubesched.plugins.registry import default_registry
from kubesched.testing import make_node, make_pod, make_table

called: list[str] = []


@register
class UndoesFine(ifc.ReservePlugin, ifc.PostBindPlugin):
    name = "test-log-UndoesFine"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        called.append(f"unreserve {self.name}")

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        called.append(f"post_bind {self.name}")


@register
class Breaks(ifc.ReservePlugin, ifc.PostBindPlugin):
    name = "test-log-Breaks"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise RuntimeError("undo failed")

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise KeyError("no such thing")


def framework() -> Framework:
    # Breaks reserves last: it is the first to unreserve, and the first to PostBind.
    profile = ProfileConfig(
        "default-scheduler",
        {
            "multiPoint": PluginSet(
                [
                    PluginRef("PrioritySort"),
                    PluginRef("DefaultBinder"),
                    PluginRef(UndoesFine.name),
                    PluginRef(Breaks.name),
                ]
            ),
            "postBind": PluginSet([PluginRef(Breaks.name), PluginRef(UndoesFine.name)]),
        },
    )
    return Framework(profile, Handle(make_table([make_node("n1")])), default_registry())


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "kubesched.framework.runtime.framework"]


def test_a_failing_unreserve_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fw = framework()
    assert [p.name for p in fw.reserve] == [UndoesFine.name, Breaks.name]
    called.clear()
    with caplog.at_level(logging.ERROR, logger="kubesched.framework.runtime.framework"):
        fw.run_unreserve(CycleState(), PodInfo(make_pod("p")), "n1")
    assert called == [f"unreserve {UndoesFine.name}"]
    (record,) = errors(caplog)
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and str(record.exc_info[1]) == "undo failed"
    line = TextFormatter().format(record)
    assert line.startswith("E")
    assert line.endswith(
        '] "Unexpected error running Unreserve plugin" err="undo failed" '
        'pod="default/p" plugin="test-log-Breaks" node="n1"'
    )


def test_a_failing_post_bind_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fw = framework()
    assert [p.name for p in fw.post_bind] == [Breaks.name, UndoesFine.name]
    called.clear()
    with caplog.at_level(logging.ERROR, logger="kubesched.framework.runtime.framework"):
        fw.run_post_bind(CycleState(), PodInfo(make_pod("p", namespace="shop")), "n1")
    assert called == [f"post_bind {UndoesFine.name}"]
    (record,) = errors(caplog)
    line = TextFormatter().format(record)
    assert line.endswith(
        '] "Unexpected error running PostBind plugin" err="\'no such thing\'" '
        'pod="shop/p" plugin="test-log-Breaks" node="n1"'
    )
    json_line = JSONFormatter().format(record)
    assert '"msg":"Unexpected error running PostBind plugin"' in json_line
    assert json_line.endswith(
        '"pod":"shop/p","plugin":"test-log-Breaks","node":"n1","err":"\'no such thing\'"}'
    )
