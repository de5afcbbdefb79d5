"""DynamicResourcesArgs: type, v1 defaults, validation.

Upstream: config.DynamicResourcesArgs (filterTimeout, bindingTimeout, both
metav1.Duration), SetDefaults_DynamicResourcesArgs (10s and 600s) and
ValidateDynamicResourcesArgs with the feature gates of v1.36.3's defaults
(DRASchedulerFilterTimeout, DRADeviceBindingConditions and
DRAResourceClaimDeviceStatus on): filterTimeout must be zero or positive (zero
turns the timeout off), bindingTimeout at least one second.

The durations are Go duration strings on the wire ("10s", "1m30s", "500ms");
here they are float seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.api.durations import DurationError, format_go_duration, parse_go_duration
from kubesched.plugins.helpers.args import ArgsError, child, decode_error, load_args

DEFAULT_FILTER_TIMEOUT_SECONDS = 10.0
DEFAULT_BINDING_TIMEOUT_SECONDS = 600.0


class DynamicResourcesArgs(
    msgspec.Struct, frozen=True, rename="camel", kw_only=True, forbid_unknown_fields=True
):
    """`filter_timeout`: how long Filter may search for devices on one node (0: no
    limit); `binding_timeout`: how long PreBind waits for binding conditions."""

    filter_timeout: float = DEFAULT_FILTER_TIMEOUT_SECONDS
    binding_timeout: float = DEFAULT_BINDING_TIMEOUT_SECONDS


def validate_dynamic_resources_args(args: DynamicResourcesArgs, path: str = "") -> list[str]:
    """ValidateDynamicResourcesArgs with v1.36.3's default feature gates. The bad value
    prints as metav1.Duration's String (field.Error prints a Stringer bare)."""
    errors: list[str] = []
    if args.filter_timeout < 0:
        errors.append(
            f"{child(path, 'filterTimeout')}: Invalid value: "
            f"{format_go_duration(args.filter_timeout)}: must be zero or positive"
        )
    if args.binding_timeout < 1.0:
        errors.append(
            f"{child(path, 'bindingTimeout')}: Invalid value: "
            f"{format_go_duration(args.binding_timeout)}: must be at least 1 second"
        )
    return errors


def _durations(raw: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The args with their Go duration strings turned into seconds."""
    out = dict(raw)
    for name in ("filterTimeout", "bindingTimeout"):
        value = out.get(name)
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            continue
        if not isinstance(value, str):
            # Let msgspec word the type error, with the field's path.
            try:
                msgspec.convert({name: value}, DynamicResourcesArgs)
            except msgspec.ValidationError as exc:
                raise ArgsError([decode_error(exc, path)]) from None
        try:
            out[name] = parse_go_duration(value)
        except DurationError as exc:
            raise ArgsError([f"{child(path, name)}: {exc}"]) from None
    return out


def dynamic_resources_args(
    args: DynamicResourcesArgs | Mapping[str, Any] | None, path: str = ""
) -> DynamicResourcesArgs:
    """The args DynamicResources runs with; raises ArgsError naming the field under
    `path`."""
    if isinstance(args, Mapping):
        args = _durations(args, path)
    return load_args(
        args, DynamicResourcesArgs, validate_dynamic_resources_args, strict=True, path=path
    )
