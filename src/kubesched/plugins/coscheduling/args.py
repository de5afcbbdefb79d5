"""CoschedulingArgs: type, v1 defaults, validation, as scheduler-plugins v0.35.4-devel has
them (apis/config/types.go, apis/config/v1/defaults.go SetDefaults_CoschedulingArgs,
apis/config/validation ValidateCoschedulingArgs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.plugins.helpers.args import ArgsError, child, invalid, load_args

__all__ = ["ArgsError", "CoschedulingArgs", "coscheduling_args", "validate_coscheduling_args"]


class CoschedulingArgs(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    # How long a group's reserved pods wait at Permit for the rest (when the PodGroup
    # sets no scheduleTimeoutSeconds); 0 falls back to util.DefaultWaitTime (60s).
    permit_waiting_time_seconds: int = 60
    # How long a group rejected in PostFilter is refused at PreFilter; 0: not at all.
    pod_group_backoff_seconds: int = 0
    # PostFilter leaves the group's waiting pods alone while the share of minMember not
    # yet assigned is at most this percentage.
    pod_group_reject_percentage: int = 10


def validate_coscheduling_args(args: CoschedulingArgs, path: str = "") -> list[str]:
    """ValidateCoschedulingArgs (its texts: "must be greater than 0" for a negative)."""
    errors: list[str] = []
    if args.permit_waiting_time_seconds < 0:
        errors.append(
            invalid(
                child(path, "permitWaitingTimeSeconds"),
                args.permit_waiting_time_seconds,
                "must be greater than 0",
            )
        )
    if args.pod_group_backoff_seconds < 0:
        errors.append(
            invalid(
                child(path, "podGroupBackoffSeconds"),
                args.pod_group_backoff_seconds,
                "must be greater than 0",
            )
        )
    if not 0 <= args.pod_group_reject_percentage <= 100:
        errors.append(
            invalid(
                child(path, "podGroupRejectPercentage"),
                args.pod_group_reject_percentage,
                "must be between 0 and 100",
            )
        )
    return errors


def coscheduling_args(
    args: CoschedulingArgs | Mapping[str, Any] | None, path: str = ""
) -> CoschedulingArgs:
    """The args Coscheduling runs with; raises ArgsError naming the field under `path`."""
    return load_args(args, CoschedulingArgs, validate_coscheduling_args, strict=True, path=path)
