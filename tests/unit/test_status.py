"""Status.success() and Status.skip() are shared: naming a plugin copies them."""

from __future__ import annotations

from kubesched.framework.status import Code, Status


def test_with_plugin_names_a_copy_of_the_shared_statuses() -> None:
    for make, code in ((Status.success, Code.SUCCESS), (Status.skip, Code.SKIP)):
        named = make().with_plugin("A")
        assert (named.code, named.plugin, named.reasons) == (code, "A", [])
        assert make().plugin == ""
        assert make().with_plugin("B").plugin == "B"


def test_with_plugin_keeps_the_first_plugin_of_a_status_of_its_own() -> None:
    status = Status.unschedulable("full")
    assert status.with_plugin("A") is status
    assert status.with_plugin("B").plugin == "A"
