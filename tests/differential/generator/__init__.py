"""Seeded scenarios for differential runs: kube-scheduler vs kubesched on the same cluster.

A scenario is a plain dict (dump it with ``yaml.safe_dump``) holding everything a
run needs, in creation order:

* ``profile`` / ``config``: one KubeSchedulerConfiguration profile (without its
  schedulerName), the same for both schedulers. Plugins of kube-scheduler's
  default profile that the scenario's features leave out are in
  ``multiPoint.disabled`` (see :func:`disabled_plugins`).
* ``nodes``: logical names ``n0``, ``n1``... (the harness prefixes them), labels
  (zone, region, disk, pool, tier), taints, allocatable (cpu, memory, pods,
  ephemeral-storage, the extended resource ``example.com/gpu``), images,
  ``unschedulable``.
* ``pods``: name, labels and a full pod ``spec`` without ``schedulerName``;
  created one at a time in list order. Node names in node affinity
  (``matchFields`` on ``metadata.name``, ``kubernetes.io/hostname``) are logical.
* with features: ``pdbs`` (preemption), ``volumes`` (PersistentVolumes and claims),
  ``dra`` (DeviceClasses, ResourceSlices, ResourceClaims and templates; see dra.py),
  ``gangs`` (PodGroups of the Workload API and their pods; opt-in, see gangs.py),
  ``workloads`` (Services, ReplicationControllers/ReplicaSets/StatefulSets that
  pods name in ``owner``, RuntimeClasses pods name; see workloads.py),
  ``extenders`` (scheduler extenders as rules over logical node and pod names,
  which the harness serves; opt-in, see extenders.py).

``generate(seed, index)`` is a pure function of its arguments: the same seed and
index give the same scenario on every machine.

This package's modules: vocabulary (the fixed values scenarios draw from),
profiles (features and scheduler configurations), nodes_and_pods and features (the
random objects), manifests (the API objects the harness creates); ``generate`` is
here, and every name other modules use is importable from the package.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from tests.differential.generator.dra import dra_objects, slices_of
from tests.differential.generator.extenders import extender_configs, extenders
from tests.differential.generator.features import _pdbs, _replicas, _volumes
from tests.differential.generator.gangs import (
    GANG_GATES,
    gangs,
    last_members,
    pod_group_manifest,
    waits_for_group,
)
from tests.differential.generator.manifests import (
    dra_class_names,
    dra_cluster_manifests,
    dra_namespace_manifests,
    node_manifest,
    owner_reference,
    pdb_manifest,
    pod_manifest,
    priority_class_manifests,
    referenced_images,
    referenced_label_keys,
    referenced_nodes,
    rename_nodes,
    runtime_class_manifests,
    runtime_class_names,
    volume_manifests,
    workload_manifests,
)
from tests.differential.generator.nodes_and_pods import _node, _pod
from tests.differential.generator.profiles import (
    CONFIG_API_VERSION,
    FEATURE_PLUGINS,
    FEATURES,
    KUBE_DEFAULT_PLUGINS,
    NO_FEATURES,
    OPT_IN_FEATURES,
    PROFILES,
    disabled_plugins,
    kubesched_plugins,
    parse_features,
    profile_config,
    scheduler_config,
    unsupported_features,
)
from tests.differential.generator.vocabulary import (
    APPS,
    DEFAULT_IMAGE,
    GPU,
    HOSTNAME_LABEL,
    IMAGES,
    PRIORITY_CLASSES,
    REGION_LABEL,
    TAINTS,
    ZONE_LABEL,
    ZONES,
)
from tests.differential.generator.workloads import (
    CONTROLLER_API_VERSIONS,
    CONTROLLER_KINDS,
    count_replicas,
    workloads,
)

Scenario = dict[str, Any]

SIZES: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    # (nodes min/max, pods min/max)
    "small": ((3, 4), (4, 6)),
    "normal": ((3, 8), (6, 14)),
    "large": ((6, 12), (12, 24)),
}


# --------------------------------------------------------------------- scenarios
def generate(
    seed: int,
    index: int,
    *,
    features: Sequence[str] = (),
    size: str = "normal",
    profile: str | None = None,
) -> Scenario:
    """Scenario INDEX of the series SEED. PROFILE defaults to the profiles in turn."""
    # An empty list is no feature here (parse_features reads no text as all of them).
    features = parse_features(list(features)) if features else []
    rng = random.Random(f"kubesched-differential/{seed}/{index}/{size}/{','.join(features)}")
    (node_min, node_max), (pod_min, pod_max) = SIZES[size]
    names = list(PROFILES)
    profile = profile or names[index % len(names)]
    gpu_nodes = rng.random() < 0.6
    nodes = [_node(rng, i, gpu_nodes) for i in range(rng.randint(node_min, node_max))]
    pods = [_pod(rng, i, nodes, gpu_nodes, features) for i in range(rng.randint(pod_min, pod_max))]
    # Before batching, whose copies then share their pod's owner and RuntimeClass.
    objects = workloads(rng, nodes, pods) if "workloads" in features else None
    if "batching" in features:
        pods = _replicas(rng, pods)
    scenario: Scenario = {
        "name": f"seed{seed}-{index:03d}-{profile}",
        "seed": seed,
        "index": index,
        "size": size,
        "features": list(features),
        "profile": profile,
        "config": profile_config(profile, features),
        "nodes": nodes,
        "pods": pods,
    }
    if "preemption" in features:
        scenario["pdbs"] = _pdbs(rng)
    if "volumes" in features:
        scenario["volumes"] = _volumes(rng, nodes, pods)
    if "dra" in features:
        scenario["dra"] = dra_objects(rng, nodes, pods)
    if "gangs" in features:
        scenario["gangs"] = gangs(rng, pods)
        for pod in pods:
            if pod["spec"].get("schedulingGroup"):
                pod.pop("owner", None)  # a gang's members stay alike
    if objects is not None:
        count_replicas(objects, pods)
        scenario["workloads"] = objects
    if "extenders" in features:
        # Last, so that the scenario's other parts come from the same draws as ever.
        scenario["extenders"] = extenders(rng, nodes, pods)
    return scenario


__all__ = [
    "APPS",
    "CONFIG_API_VERSION",
    "CONTROLLER_API_VERSIONS",
    "CONTROLLER_KINDS",
    "DEFAULT_IMAGE",
    "FEATURES",
    "FEATURE_PLUGINS",
    "GANG_GATES",
    "GPU",
    "HOSTNAME_LABEL",
    "IMAGES",
    "KUBE_DEFAULT_PLUGINS",
    "NO_FEATURES",
    "OPT_IN_FEATURES",
    "PRIORITY_CLASSES",
    "PROFILES",
    "REGION_LABEL",
    "SIZES",
    "TAINTS",
    "ZONES",
    "ZONE_LABEL",
    "Scenario",
    "count_replicas",
    "disabled_plugins",
    "dra_class_names",
    "dra_cluster_manifests",
    "dra_namespace_manifests",
    "dra_objects",
    "extender_configs",
    "extenders",
    "gangs",
    "generate",
    "kubesched_plugins",
    "last_members",
    "node_manifest",
    "owner_reference",
    "parse_features",
    "pdb_manifest",
    "pod_group_manifest",
    "pod_manifest",
    "priority_class_manifests",
    "profile_config",
    "referenced_images",
    "referenced_label_keys",
    "referenced_nodes",
    "rename_nodes",
    "runtime_class_manifests",
    "runtime_class_names",
    "scheduler_config",
    "slices_of",
    "unsupported_features",
    "volume_manifests",
    "waits_for_group",
    "workload_manifests",
    "workloads",
]
