"""Resource-name classes as the scheduler sees them (v1helper and scheduler util upstream).

- native: no "/" in the name, or a name in the kubernetes.io/ domain;
- extended: not native, not "requests."-prefixed, and a qualified name once
  "requests." is put in front of it (what quota would call it);
- scalar: extended, hugepages-*, kubernetes.io/-prefixed or attachable-volumes-*;
  these are the resources NodeInfo keeps in ScalarResources. Anything else
  besides cpu, memory, ephemeral-storage and pods is invisible to the scheduler.
"""

from __future__ import annotations

import re
from functools import lru_cache

DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_MAX = 63
_DNS1123_SUBDOMAIN_MAX = 253


def is_qualified_name(value: str) -> bool:
    """validation.IsQualifiedName: an optional DNS-subdomain prefix and a short name."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if (
            not prefix
            or len(prefix) > _DNS1123_SUBDOMAIN_MAX
            or _DNS1123_SUBDOMAIN.fullmatch(prefix) is None
        ):
            return False
    else:
        return False
    return (
        bool(name)
        and len(name) <= _QUALIFIED_NAME_MAX
        and _QUALIFIED_NAME.fullmatch(name) is not None
    )


def is_prefixed_native_resource(name: str) -> bool:
    return DEFAULT_NAMESPACE_PREFIX in name


def is_native_resource(name: str) -> bool:
    return "/" not in name or is_prefixed_native_resource(name)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_attachable_volume_resource_name(name: str) -> bool:
    return name.startswith(ATTACHABLE_VOLUMES_PREFIX)


@lru_cache(maxsize=1024)
def is_extended_resource_name(name: str) -> bool:
    if is_native_resource(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return is_qualified_name(REQUESTS_PREFIX + name)


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    return (
        is_extended_resource_name(name)
        or is_hugepage_resource_name(name)
        or is_prefixed_native_resource(name)
        or is_attachable_volume_resource_name(name)
    )
