"""PodGroups (scheduler-plugins' scheduling.x-k8s.io/v1alpha1) read from manifests: the
checks the CRD's schema makes, and a warning for each field it does not have."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.pod_groups import (
    POD_GROUP_API_VERSION,
    POD_GROUP_GROUP,
    PodGroup,
    unknown_fields,
    validate_pod_group,
)

POD_GROUP_KIND = "PodGroup"
POD_GROUP_GROUPS: Mapping[str, tuple[str, ...]] = {POD_GROUP_KIND: (POD_GROUP_GROUP,)}


def pod_group_problem(api_version: str, group: PodGroup) -> tuple[str, str] | None:
    """The (field, message) that keeps the PodGroup out, or None."""
    if api_version and api_version != POD_GROUP_API_VERSION:
        return (
            "apiVersion",
            f'unsupported version "{api_version}": kubesched reads {POD_GROUP_API_VERSION}',
        )
    if not group.metadata.name:
        return ("metadata.name", "name is required")
    errors = validate_pod_group(group)
    return errors[0] if errors else None


def pod_group_warnings(raw: Mapping[str, Any], where: str, key: str) -> list[str]:
    """One note per field the CRD's schema does not have (kube-apiserver prunes them)."""
    return [
        f"PodGroup {key} at {where}: field {path} is not in scheduling.x-k8s.io/v1alpha1 "
        "and was ignored"
        for path in unknown_fields(raw)
    ]
