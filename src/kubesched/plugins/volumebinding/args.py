"""VolumeBindingArgs: type, v1 defaults, validation.

Upstream: config.VolumeBindingArgs, SetDefaults_VolumeBindingArgs and
ValidateVolumeBindingArgs with the StorageCapacityScoring feature gate off
(its default in 1.36): a shape is refused, and none is defaulted. Decoding is
strict (strict=True): the plugin always refused a timeout that was not an
integer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.plugins.helpers.args import child, invalid, load_args

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class UtilizationShapePoint(
    msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True
):
    """config.UtilizationShapePoint: the score (0..10) at a utilization (0..100)."""

    utilization: int = 0
    score: int = 0


class VolumeBindingArgs(
    msgspec.Struct, frozen=True, rename="camel", kw_only=True, forbid_unknown_fields=True
):
    """`bind_timeout_seconds`: how long PreBind waits for the PV controller to
    complete the binding; `shape`: StorageCapacityScoring's, refused while the
    feature is off."""

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[UtilizationShapePoint, ...] = ()


def validate_volume_binding_args(args: VolumeBindingArgs, path: str = "") -> list[str]:
    """ValidateVolumeBindingArgsWithOptions, AllowStorageCapacityScoring false."""
    errors: list[str] = []
    if args.bind_timeout_seconds < 0:
        errors.append(
            invalid(
                child(path, "bindTimeoutSeconds"),
                args.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    # Upstream refuses any shape that is not nil, `shape: []` too; kubesched always
    # let an empty one pass.
    if args.shape:
        errors.append(
            invalid(
                child(path, "shape"),
                args.shape,
                "unexpected field `shape`, remove it or turn on the feature gate "
                "StorageCapacityScoring",
            )
        )
    return errors


def volume_binding_args(
    args: VolumeBindingArgs | Mapping[str, Any] | None, path: str = ""
) -> VolumeBindingArgs:
    """The args VolumeBinding runs with; raises ArgsError naming the field under `path`."""
    return load_args(args, VolumeBindingArgs, validate_volume_binding_args, strict=True, path=path)
