"""NodeAffinityArgs: type and validation (there are no v1 defaults).

Upstream: config.NodeAffinityArgs and ValidateNodeAffinityArgs, which parse
addedAffinity's terms as the plugin will (nodeaffinity.NewNodeSelector,
NewPreferredSchedulingTerms) and report what does not parse under the
field's path. Decoding is strict (strict=True), as the plugin's
msgspec.convert of addedAffinity always was; `added_affinity` is still
accepted for addedAffinity, and so is a NodeAffinity object given in code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.api.node_affinity import is_empty_term, parse_term, parse_terms
from kubesched.api.objects import NodeAffinity
from kubesched.plugins.helpers.args import child, load_args

_ALIASES = {"added_affinity": "addedAffinity"}

REQUIRED_FIELD = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_FIELD = "preferredDuringSchedulingIgnoredDuringExecution"


class NodeAffinityArgs(
    msgspec.Struct, frozen=True, rename="camel", kw_only=True, forbid_unknown_fields=True
):
    """`added_affinity`: node affinity every pod of the profile must also satisfy
    (required terms) or is scored by (preferred terms)."""

    added_affinity: NodeAffinity | None = None


def validate_node_affinity_args(args: NodeAffinityArgs, path: str = "") -> list[str]:
    """ValidateNodeAffinityArgs: every term of addedAffinity parses."""
    affinity = args.added_affinity
    if affinity is None:
        return []
    errors: list[str] = []
    added_path = child(path, "addedAffinity")
    required = affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        # parse_terms names each term's fields from "nodeSelectorTerms[i]." on.
        where = child(added_path, REQUIRED_FIELD)
        for term in parse_terms(required.node_selector_terms):
            errors.extend(f"{where}.{e}" for e in term.errors)
    for i, preferred in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        # NewPreferredSchedulingTerms skips what it would not score.
        if preferred.weight == 0 or is_empty_term(preferred.preference):
            continue
        where = f"{child(added_path, PREFERRED_FIELD)}[{i}]."
        errors.extend(where + e for e in parse_term(preferred.preference).errors)
    return errors


def node_affinity_args(
    args: NodeAffinityArgs | Mapping[str, Any] | None, path: str = ""
) -> NodeAffinityArgs:
    """The args NodeAffinity runs with; raises ArgsError naming the field under `path`."""
    return load_args(
        args,
        NodeAffinityArgs,
        validate_node_affinity_args,
        strict=True,
        path=path,
        aliases=_ALIASES,
    )
