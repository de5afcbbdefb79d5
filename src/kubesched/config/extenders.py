"""The configuration file's `extenders:` (Extender in kube-scheduler's
config/v1/types.go), checked as validateExtenders in
pkg/scheduler/apis/config/validation/validation.go checks it, and the
NodeResourcesFit args they change (buildExtenders in scheduler.go)."""

from __future__ import annotations

import base64
import binascii

import msgspec

from kubesched.api.durations import DurationError, parse_go_duration
from kubesched.api.names import is_extended_resource_name, qualified_name_errors
from kubesched.framework.extender import DEFAULT_EXTENDER_TIMEOUT, ExtenderConfig, ExtenderTLS
from kubesched.framework.profile import ProfileConfig


class _Strict(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    pass


class ExtenderTLSConfigV1(_Strict):
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    # []byte fields: base64 in JSON and YAML, as encoding/json reads them.
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""


class ExtenderManagedResourceV1(_Strict):
    name: str
    ignored_by_scheduler: bool = False


class ExtenderV1(_Strict):
    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = msgspec.field(default=False, name="enableHTTPS")
    tls_config: ExtenderTLSConfigV1 | None = None
    http_timeout: str = ""
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResourceV1] = []
    ignorable: bool = False


def _pem(text: str, where: str, errors: list[str]) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        errors.append(f"{where}: Invalid value: illegal base64 data")
        return b""


def _tls(tls: ExtenderTLSConfigV1, where: str, errors: list[str]) -> ExtenderTLS:
    return ExtenderTLS(
        insecure=tls.insecure,
        server_name=tls.server_name,
        cert_file=tls.cert_file,
        key_file=tls.key_file,
        ca_file=tls.ca_file,
        cert_data=_pem(tls.cert_data, f"{where}.certData", errors) if tls.cert_data else b"",
        key_data=_pem(tls.key_data, f"{where}.keyData", errors) if tls.key_data else b"",
        ca_data=_pem(tls.ca_data, f"{where}.caData", errors) if tls.ca_data else b"",
    )


def parse_extenders(raw: list[object], source: str) -> tuple[list[ExtenderConfig], list[str]]:
    """The extenders of a file, and the field errors kube-scheduler's validation
    reports for them (each "source: extenders[i].field: Invalid value: ...")."""
    errors: list[str] = []
    extenders: list[ExtenderConfig] = []
    binders = 0
    seen: set[str] = set()
    for i, item in enumerate(raw):
        path = f"extenders[{i}]"
        try:
            ext = msgspec.convert(item, ExtenderV1)
        except msgspec.ValidationError as exc:
            errors.append(f"{source}: {path}: {exc}")
            continue
        if ext.prioritize_verb and ext.weight <= 0:
            errors.append(
                f"{source}: {path}.weight: Invalid value: {ext.weight}: "
                "must have a positive weight applied to it"
            )
        if ext.bind_verb:
            binders += 1
        managed: dict[str, bool] = {}
        for j, resource in enumerate(ext.managed_resources):
            where = f"{source}: {path}.managedResources[{j}].name"
            problems = qualified_name_errors(resource.name)
            for problem in problems:
                errors.append(f'{where}: Invalid value: "{resource.name}": {problem}')
            if not problems and not is_extended_resource_name(resource.name):
                errors.append(
                    f'{where}: Invalid value: "{resource.name}": is an invalid extended '
                    "resource name"
                )
            if resource.name in seen:
                errors.append(
                    f'{where}: Invalid value: "{resource.name}": duplicate extender managed '
                    "resource name"
                )
            seen.add(resource.name)
            managed[resource.name] = resource.ignored_by_scheduler
        timeout = DEFAULT_EXTENDER_TIMEOUT
        if ext.http_timeout:
            try:
                timeout = parse_go_duration(ext.http_timeout) or DEFAULT_EXTENDER_TIMEOUT
            except DurationError:
                errors.append(
                    f"{source}: {path}.httpTimeout: invalid duration {ext.http_timeout!r}"
                )
        tls = (
            None
            if ext.tls_config is None
            else _tls(ext.tls_config, f"{source}: {path}.tlsConfig", errors)
        )
        extenders.append(
            ExtenderConfig(
                url_prefix=ext.url_prefix,
                filter_verb=ext.filter_verb,
                preempt_verb=ext.preempt_verb,
                prioritize_verb=ext.prioritize_verb,
                bind_verb=ext.bind_verb,
                weight=ext.weight,
                enable_https=ext.enable_https,
                tls=tls,
                http_timeout=timeout,
                node_cache_capable=ext.node_cache_capable,
                managed_resources=managed,
                ignorable=ext.ignorable,
            )
        )
    if binders > 1:
        errors.append(
            f'{source}: extenders: Invalid value: "found {binders} extenders implementing '
            'bind": only one extender can implement bind'
        )
    return extenders, errors


def apply_ignored_resources(
    profiles: list[ProfileConfig], extenders: list[ExtenderConfig], default_args: object
) -> None:
    """Every profile's NodeResourcesFit leaves the resources the extenders manage with
    ignoredByScheduler to them: its ignoredResources become that list, replacing what
    the file said (buildExtenders in scheduler.go). `default_args` are
    NodeResourcesFit's defaulted args, for a profile that configures none."""
    ignored = tuple(name for ext in extenders for name in ext.ignored_resources)
    if not ignored:
        return
    for profile in profiles:
        args = profile.plugin_config.get("NodeResourcesFit", default_args)
        # The file's args were decoded into NodeResourcesFitArgs (a msgspec struct).
        if isinstance(args, msgspec.Struct):
            profile.plugin_config["NodeResourcesFit"] = msgspec.structs.replace(
                args, ignored_resources=ignored
            )
