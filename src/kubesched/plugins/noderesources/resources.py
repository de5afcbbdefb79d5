"""Resource-name classes as the scheduler sees them (v1helper and scheduler util upstream).

- native: no "/" in the name, or a name in the kubernetes.io/ domain;
- extended: not native, not "requests."-prefixed, and a qualified name once
  "requests." is put in front of it (what quota would call it);
- scalar: extended, hugepages-*, kubernetes.io/-prefixed or attachable-volumes-*;
  these are the resources NodeInfo keeps in ScalarResources. Anything else
  besides cpu, memory, ephemeral-storage and pods is invisible to the scheduler.
"""

from __future__ import annotations

from functools import lru_cache

from kubesched.api.names import is_extended_resource_name

__all__ = ["is_extended_resource_name", "is_scalar_resource_name"]

DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"


def is_prefixed_native_resource(name: str) -> bool:
    return DEFAULT_NAMESPACE_PREFIX in name


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_attachable_volume_resource_name(name: str) -> bool:
    return name.startswith(ATTACHABLE_VOLUMES_PREFIX)


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    return (
        is_extended_resource_name(name)
        or is_hugepage_resource_name(name)
        or is_prefixed_native_resource(name)
        or is_attachable_volume_resource_name(name)
    )
