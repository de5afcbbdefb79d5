"""The fixed values scenarios draw from: zones and the well-known node labels, the
extended resource, app names, the PriorityClasses (the same in every scenario),
container images with their sizes, and the taints nodes may carry."""

from __future__ import annotations

from typing import Any

ZONES = ("zone-a", "zone-b", "zone-c")
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU = "example.com/gpu"
APPS = ("web", "db", "cache", "batch")

# Cluster-scoped and the same in every scenario (created once, shared by both runs).
PRIORITY_CLASSES: tuple[dict[str, Any], ...] = (
    {"name": "diff-low", "value": 100},
    {"name": "diff-mid", "value": 1000},
    {"name": "diff-high", "value": 10000},
    {"name": "diff-high-nonpreempting", "value": 10000, "preemptionPolicy": "Never"},
)

IMAGES: tuple[tuple[str, int], ...] = (
    ("registry.example/app:v1", 450 * 1024 * 1024),
    ("registry.example/db:v2", 900 * 1024 * 1024),
    ("registry.example/tool:v3", 60 * 1024 * 1024),
    ("registry.example/huge:v1", 2100 * 1024 * 1024),
)
DEFAULT_IMAGE = "registry.k8s.io/pause:3.10"

TAINTS: tuple[dict[str, str], ...] = (
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "flaky", "effect": "PreferNoSchedule"},
    {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
)
