"""api/names.py, the one implementation of apimachinery's name and label rules:
lengths in bytes as Go's len() counts them, and upstream's texts, for the
manifest validator, label selectors and the plugins' args alike."""

from __future__ import annotations

import pytest

from kubesched.api.labels import SelectorError, label_selector_as_selector
from kubesched.api.names import label_value_errors, qualified_name_errors, regex_error
from kubesched.api.objects import LabelSelector, LabelSelectorRequirement

# 32 characters, 64 bytes in UTF-8: within a limit of 63 characters, over one of 63 bytes.
WIDE = "é" * 32


def test_label_values_are_measured_in_bytes() -> None:
    assert "must be no more than 63 bytes" in label_value_errors(WIDE)
    assert (
        qualified_name_errors("example.com/" + WIDE)[0] == "name part must be no more than 63 bytes"
    )
    assert label_value_errors("a" * 63) == ()


def test_a_selector_refuses_a_value_over_63_bytes() -> None:
    """The selector parser counted characters: a 64-byte value passed."""
    selector = LabelSelector(
        match_expressions=[LabelSelectorRequirement(key="k", operator="In", values=[WIDE])]
    )
    with pytest.raises(SelectorError, match="must be no more than 63 bytes"):
        label_selector_as_selector(selector)


def test_regex_errors_read_as_the_api_servers() -> None:
    # Checked against kube-apiserver v1.36.3 (a pod with label key "a b").
    assert regex_error("m", "f", "MyName", "my.name") == (
        "m (e.g. 'MyName',  or 'my.name', regex used for validation is 'f')"
    )
    assert regex_error("m", "f") == "m (regex used for validation is 'f')"
