"""PodTopologySpreadArgs: type, v1 defaults, validation.

Upstream: config.PodTopologySpreadArgs, SetDefaults_PodTopologySpreadArgs and
ValidatePodTopologySpreadArgs (which repeats the API's checks of a pod's
constraints and forbids a labelSelector: it is deduced for each pod). Decoding
is strict (strict=True), as the plugin's msgspec.convert of the constraints
always was; `defaulting_type` and `default_constraints` are still accepted for
the API spellings, and so are TopologySpreadConstraint objects given in code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.names import qualified_name_errors
from kubesched.api.objects import TopologySpreadConstraint
from kubesched.plugins.helpers.args import (
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    load_args,
    not_supported,
    required,
)

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
# v1.UnsatisfiableConstraintAction values, sorted as sets.List gives them.
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")

_ALIASES = {"defaulting_type": "defaultingType", "default_constraints": "defaultConstraints"}


class PodTopologySpreadArgs(
    msgspec.Struct, frozen=True, rename="camel", kw_only=True, forbid_unknown_fields=True
):
    """`defaulting_type`: "System" (the system's default constraints) or "List"
    (`default_constraints`), for pods that set no constraints of their own."""

    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = ""


def default_pod_topology_spread_args(args: PodTopologySpreadArgs) -> PodTopologySpreadArgs:
    """SetDefaults_PodTopologySpreadArgs: no defaultingType means System."""
    if args.defaulting_type:
        return args
    return msgspec.structs.replace(args, defaulting_type=SYSTEM_DEFAULTING)


def _validate_defaulting_type(
    path: str, value: str, constraints: Sequence[TopologySpreadConstraint]
) -> list[str]:
    """validateDefaultingType."""
    if value not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        return [not_supported(path, value, (SYSTEM_DEFAULTING, LIST_DEFAULTING))]
    if value == SYSTEM_DEFAULTING and constraints:
        return [invalid(path, value, "when .defaultConstraints are not empty")]
    return []


def validate_pod_topology_spread_args(args: PodTopologySpreadArgs, path: str = "") -> list[str]:
    """ValidatePodTopologySpreadArgs."""
    constraints = args.default_constraints
    errors = _validate_defaulting_type(
        child(path, "defaultingType"), args.defaulting_type, constraints
    )
    constraints_path = child(path, "defaultConstraints")
    for i, c in enumerate(constraints):
        where = index(constraints_path, i)
        if c.max_skew <= 0:
            errors.append(
                invalid(child(where, "maxSkew"), c.max_skew, "not in valid range (0, inf)")
            )
        key_path = child(where, "topologyKey")
        if not c.topology_key:
            errors.append(required(key_path, "can not be empty"))
        else:
            errors.extend(
                invalid(key_path, c.topology_key, e) for e in qualified_name_errors(c.topology_key)
            )
        when_path = child(where, "whenUnsatisfiable")
        if not c.when_unsatisfiable:
            errors.append(required(when_path, "can not be empty"))
        elif c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            errors.append(not_supported(when_path, c.when_unsatisfiable, WHEN_UNSATISFIABLE))
        if c.label_selector is not None:
            errors.append(
                forbidden(
                    child(where, "labelSelector"),
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        # validateConstraintNotRepeat: one error, at the first earlier twin.
        for other in constraints[:i]:
            if (other.topology_key, other.when_unsatisfiable) == (
                c.topology_key,
                c.when_unsatisfiable,
            ):
                errors.append(duplicate(where, f"{{{c.topology_key}, {c.when_unsatisfiable}}}"))
                break
    return errors


def pod_topology_spread_args(
    args: PodTopologySpreadArgs | Mapping[str, Any] | None, path: str = ""
) -> PodTopologySpreadArgs:
    """The args PodTopologySpread runs with; raises ArgsError naming the field under `path`."""
    return load_args(
        args,
        PodTopologySpreadArgs,
        validate_pod_topology_spread_args,
        strict=True,
        path=path,
        aliases=_ALIASES,
        default=default_pod_topology_spread_args,
    )
