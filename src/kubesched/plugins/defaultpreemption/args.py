"""DefaultPreemptionArgs: type, v1 defaults, validation.

Upstream: config.DefaultPreemptionArgs, SetDefaults_DefaultPreemptionArgs and
ValidateDefaultPreemptionArgs. Decoding is strict (strict=True): the plugin
always refused anything but an integer here, booleans and "10" included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.plugins.helpers.args import ArgsError, child, invalid, load_args

__all__ = [
    "ArgsError",
    "DefaultPreemptionArgs",
    "default_preemption_args",
    "validate_default_preemption_args",
]


class DefaultPreemptionArgs(
    msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True
):
    """How many candidate nodes the dry run looks for: max(percentage of the nodes,
    absolute). The defaults are v1's (10%, 100); a null is a default too."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def parse(cls, args: Mapping[str, Any] | None) -> DefaultPreemptionArgs:
        """Decode, default and validate args in API spelling (raises ArgsError)."""
        return default_preemption_args(args)


def validate_default_preemption_args(args: DefaultPreemptionArgs, path: str = "") -> list[str]:
    """ValidateDefaultPreemptionArgs."""
    percentage_path = child(path, "minCandidateNodesPercentage")
    absolute_path = child(path, "minCandidateNodesAbsolute")
    percentage = args.min_candidate_nodes_percentage
    absolute = args.min_candidate_nodes_absolute
    errors: list[str] = []
    if not 0 <= percentage <= 100:
        errors.append(invalid(percentage_path, percentage, "not in valid range [0, 100]"))
    if absolute < 0:
        errors.append(invalid(absolute_path, absolute, "not in valid range [0, inf)"))
    if percentage == 0 and absolute == 0:
        errors.append(
            invalid(
                percentage_path,
                percentage,
                "cannot be zero at the same time as minCandidateNodesAbsolute",
            )
        )
        errors.append(
            invalid(
                absolute_path,
                absolute,
                "cannot be zero at the same time as minCandidateNodesPercentage",
            )
        )
    return errors


def default_preemption_args(
    args: DefaultPreemptionArgs | Mapping[str, Any] | None, path: str = ""
) -> DefaultPreemptionArgs:
    """The args DefaultPreemption runs with; raises ArgsError naming the field under `path`."""
    return load_args(
        args, DefaultPreemptionArgs, validate_default_preemption_args, strict=True, path=path
    )
