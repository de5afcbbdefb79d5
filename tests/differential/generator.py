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
* with features: ``pdbs`` (preemption), ``volumes`` (PersistentVolumes and claims).

``generate(seed, index)`` is a pure function of its arguments: the same seed and
index give the same scenario on every machine.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Scenario = dict[str, Any]

CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"

# kube-scheduler v1.36.3's default multiPoint plugins and weights, in its order
# (`kube-scheduler --write-config-to`).
KUBE_DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    ("NodeDeclaredFeatures", 0),
)

# Generator features and the kube-scheduler plugins each one needs enabled.
FEATURE_PLUGINS: dict[str, tuple[str, ...]] = {
    "spread": ("PodTopologySpread",),
    "affinity": ("InterPodAffinity",),
    "preemption": ("DefaultPreemption",),
    "volumes": ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"),
}
FEATURES = tuple(FEATURE_PLUGINS)

# Plugins of the default profile that no feature covers (yet): always disabled.
ALWAYS_DISABLED = ("DynamicResources", "NodeDeclaredFeatures")

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

SIZES: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    # (nodes min/max, pods min/max)
    "small": ((3, 4), (4, 6)),
    "normal": ((3, 8), (6, 14)),
    "large": ((6, 12), (12, 24)),
}


# --------------------------------------------------------------------- profiles
def _profile_default() -> dict[str, Any]:
    return {}


def _profile_most_allocated() -> dict[str, Any]:
    """MostAllocated bin packing with the GPU weighted in, ImageLocality off,
    other weights changed through multiPoint."""
    return {
        "plugins": {
            "multiPoint": {
                "enabled": [
                    {"name": "NodeResourcesFit", "weight": 3},
                    {"name": "TaintToleration", "weight": 1},
                    {"name": "NodeAffinity", "weight": 5},
                ],
                "disabled": [{"name": "ImageLocality"}],
            }
        },
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                            {"name": GPU, "weight": 2},
                        ],
                    }
                },
            }
        ],
    }


def _profile_weights() -> dict[str, Any]:
    """BalancedAllocation off, weights changed at the score extension point
    (which takes precedence over multiPoint)."""
    return {
        "plugins": {
            "multiPoint": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
            "score": {
                "enabled": [
                    {"name": "ImageLocality", "weight": 4},
                    {"name": "NodeAffinity", "weight": 10},
                    {"name": "TaintToleration", "weight": 1},
                ]
            },
        },
        "percentageOfNodesToScore": 50,
    }


def _profile_ratio() -> dict[str, Any]:
    """RequestedToCapacityRatio with a custom shape, BalancedAllocation over cpu,
    memory and the GPU, and TaintToleration only as a filter."""
    return {
        "plugins": {"score": {"disabled": [{"name": "TaintToleration"}]}},
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "ignoredResources": ["example.com/ignored"],
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [
                            {"name": "cpu", "weight": 2},
                            {"name": "memory", "weight": 1},
                        ],
                        "requestedToCapacityRatio": {
                            "shape": [
                                {"utilization": 0, "score": 2},
                                {"utilization": 60, "score": 10},
                                {"utilization": 100, "score": 4},
                            ]
                        },
                    },
                },
            },
            {
                "name": "NodeResourcesBalancedAllocation",
                "args": {
                    "resources": [
                        {"name": "cpu", "weight": 1},
                        {"name": "memory", "weight": 1},
                        {"name": GPU, "weight": 1},
                    ]
                },
            },
        ],
    }


PROFILES = {
    "default": _profile_default,
    "most-allocated": _profile_most_allocated,
    "weights": _profile_weights,
    "ratio": _profile_ratio,
}


def kubesched_plugins() -> set[str]:
    """The plugins in kubesched's default profile (they grow as plugins land)."""
    from kubesched.framework.profile import DEFAULT_MULTI_POINT

    return {ref.name for ref in DEFAULT_MULTI_POINT}


def unsupported_features(features: Iterable[str]) -> dict[str, list[str]]:
    """feature -> the plugins it needs that kubesched's default profile lacks."""
    have = kubesched_plugins()
    out: dict[str, list[str]] = {}
    for feature in features:
        if feature not in FEATURE_PLUGINS:
            raise ValueError(f"unknown feature {feature!r} (known: {', '.join(FEATURES)})")
        missing = [p for p in FEATURE_PLUGINS[feature] if p not in have]
        if missing:
            out[feature] = missing
    return out


def parse_features(text: str | Sequence[str] | None) -> list[str]:
    """ "spread,affinity" (or a list) -> checked, de-duplicated, in FEATURES order."""
    if not text:
        return []
    items = text.split(",") if isinstance(text, str) else list(text)
    wanted = {i.strip() for i in items if i.strip()}
    unknown = sorted(wanted - set(FEATURES))
    if unknown:
        raise ValueError(f"unknown feature(s) {', '.join(unknown)} (known: {', '.join(FEATURES)})")
    return [f for f in FEATURES if f in wanted]


def disabled_plugins(features: Iterable[str]) -> list[str]:
    """The default-profile plugins to disable in both schedulers: those of the
    features not selected, and those no feature covers yet."""
    on = {p for f in features for p in FEATURE_PLUGINS[f]}
    off = [name for name, _ in KUBE_DEFAULT_PLUGINS if name not in on]
    covered = {p for plugins in FEATURE_PLUGINS.values() for p in plugins}
    return [n for n in off if n in covered or n in ALWAYS_DISABLED]


def profile_config(profile: str, features: Iterable[str]) -> dict[str, Any]:
    """The profile (no schedulerName) for PROFILE with the features' plugins on."""
    body = copy.deepcopy(PROFILES[profile]())
    plugins = body.setdefault("plugins", {})
    multi = plugins.setdefault("multiPoint", {})
    disabled = multi.setdefault("disabled", [])
    names = {d["name"] for d in disabled}
    disabled.extend({"name": n} for n in disabled_plugins(features) if n not in names)
    return body


def scheduler_config(
    scenario: Mapping[str, Any], scheduler_name: str, kubeconfig: str = ""
) -> dict[str, Any]:
    """The KubeSchedulerConfiguration file both schedulers run with."""
    profile = {"schedulerName": scheduler_name, **copy.deepcopy(scenario["config"])}
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
    if kubeconfig:
        config["clientConnection"] = {"kubeconfig": kubeconfig}
    return config


# --------------------------------------------------------------------- nodes
def _node(rng: random.Random, i: int, gpu_nodes: bool) -> dict[str, Any]:
    zone = ZONES[i % len(ZONES)] if rng.random() < 0.7 else rng.choice(ZONES)
    pool = "gpu" if gpu_nodes and rng.random() < 0.4 else rng.choice(("general", "infra"))
    labels = {
        ZONE_LABEL: zone,
        REGION_LABEL: "region-1" if zone != "zone-c" else "region-2",
        "disk": rng.choice(("ssd", "hdd")),
        "pool": pool,
        "tier": str(rng.randint(1, 4)),
    }
    if rng.random() < 0.2:
        del labels["disk"]
    allocatable = {
        "cpu": rng.choice(("1", "2", "2", "4", "4", "8", "3500m")),
        "memory": rng.choice(("2Gi", "4Gi", "4Gi", "8Gi", "16Gi", "6000Mi")),
        "pods": str(rng.choice((2, 3, 5, 110, 110, 110))),
    }
    if rng.random() < 0.5:
        allocatable["ephemeral-storage"] = rng.choice(("10Gi", "20Gi", "50Gi"))
    if pool == "gpu":
        allocatable[GPU] = str(rng.choice((1, 2, 4)))
    taints: list[dict[str, str]] = []
    if pool == "gpu" and rng.random() < 0.5:
        taints.append(dict(TAINTS[1]))
    if pool == "infra" and rng.random() < 0.35:
        taints.append(dict(TAINTS[0]))
    for taint in (TAINTS[2], TAINTS[3], TAINTS[4]):
        if rng.random() < (0.04 if taint["effect"] == "NoExecute" else 0.15):
            taints.append(dict(taint))
    images = []
    for name, size in IMAGES:
        if rng.random() < 0.3:
            images.append({"names": [name], "sizeBytes": size})
    node: dict[str, Any] = {
        "name": f"n{i}",
        "labels": labels,
        "allocatable": allocatable,
    }
    if taints:
        node["taints"] = taints
    if images:
        node["images"] = images
    if rng.random() < 0.06:
        node["unschedulable"] = True
    return node


# --------------------------------------------------------------------- pods
_CPU = (None, "50m", "100m", "250m", "500m", "1", "1500m", "2", "3")
_MEM = (None, "64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "3Gi", "6Gi")


def _requests(rng: random.Random, heavy: bool = False) -> dict[str, str]:
    cpu = rng.choice(_CPU[3:] if heavy else _CPU)
    mem = rng.choice(_MEM[3:] if heavy else _MEM)
    out = {}
    if cpu is not None:
        out["cpu"] = cpu
    if mem is not None:
        out["memory"] = mem
    if rng.random() < 0.1:
        out["ephemeral-storage"] = rng.choice(("1Gi", "5Gi", "30Gi"))
    return out


def _container(rng: random.Random, name: str, heavy: bool = False) -> dict[str, Any]:
    image = DEFAULT_IMAGE
    if rng.random() < 0.5:
        image = rng.choice(IMAGES)[0]
    container: dict[str, Any] = {"name": name, "image": image}
    requests = _requests(rng, heavy)
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if rng.random() < 0.15:
        # Limits only: the apiserver defaults requests to them.
        limits = _requests(rng)
        limits.pop("ephemeral-storage", None)
        if limits:
            resources = {"limits": limits}
    if resources:
        container["resources"] = resources
    return container


def _with_gpu(container: dict[str, Any], count: int) -> None:
    resources = container.setdefault("resources", {})
    resources.setdefault("requests", {})[GPU] = str(count)
    resources.setdefault("limits", {})[GPU] = str(count)


def _node_term(
    rng: random.Random, nodes: Sequence[Mapping[str, Any]], by_name: bool
) -> dict[str, Any]:
    """One nodeSelectorTerm: a few matchExpressions over the node labels, or
    matchFields on metadata.name."""
    if by_name:
        names = rng.sample([n["name"] for n in nodes], k=rng.randint(1, min(2, len(nodes))))
        if rng.random() < 0.15:
            names = ["n-missing"]
        if len(names) == 1 and rng.random() < 0.6:
            # A node field selector takes exactly one value.
            return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}
        return {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": names}]}
    exprs: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 2)):
        kind = rng.random()
        if kind < 0.35:
            exprs.append(
                {
                    "key": ZONE_LABEL,
                    "operator": rng.choice(("In", "NotIn")),
                    "values": sorted(rng.sample(ZONES, k=rng.randint(1, 2))),
                }
            )
        elif kind < 0.55:
            exprs.append({"key": "disk", "operator": rng.choice(("Exists", "DoesNotExist"))})
        elif kind < 0.75:
            exprs.append(
                {
                    "key": "tier",
                    "operator": rng.choice(("Gt", "Lt")),
                    "values": [str(rng.randint(1, 4))],
                }
            )
        elif kind < 0.9:
            exprs.append(
                {
                    "key": "pool",
                    "operator": "In",
                    "values": [rng.choice(("general", "infra", "gpu"))],
                }
            )
        else:
            exprs.append({"key": "disk", "operator": "In", "values": ["nvme"]})
    return {"matchExpressions": exprs}


def _affinity(rng: random.Random, nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    node_affinity: dict[str, Any] = {}
    if rng.random() < 0.25:
        terms = [_node_term(rng, nodes, by_name=rng.random() < 0.15)]
        if rng.random() < 0.25:
            terms.append(_node_term(rng, nodes, by_name=False))
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": terms
        }
    if rng.random() < 0.35:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.choice((1, 5, 20, 50, 100)), "preference": _node_term(rng, nodes, False)}
            for _ in range(rng.randint(1, 3))
        ]
    return {"nodeAffinity": node_affinity} if node_affinity else None


def _tolerations(rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for taint in TAINTS:
        if rng.random() >= 0.3:
            continue
        style = rng.random()
        if style < 0.5:
            tol: dict[str, Any] = {"key": taint["key"], "operator": "Exists"}
        elif "value" in taint:
            tol = {"key": taint["key"], "operator": "Equal", "value": taint["value"]}
        else:
            tol = {"key": taint["key"], "operator": "Exists"}
        if rng.random() < 0.6:
            tol["effect"] = taint["effect"]
        if tol.get("effect") == "NoExecute" and rng.random() < 0.5:
            tol["tolerationSeconds"] = 60
        out.append(tol)
    if rng.random() < 0.03:
        out.append({"operator": "Exists"})  # tolerates everything
    return out


def _ports(rng: random.Random) -> list[dict[str, Any]]:
    if rng.random() >= 0.3:
        return []
    port = rng.choice((8080, 8080, 9090, 53))
    entry: dict[str, Any] = {"containerPort": port, "hostPort": port}
    protocol = rng.choice(("TCP", "TCP", "UDP"))
    if protocol != "TCP":
        entry["protocol"] = protocol
    if rng.random() < 0.2:
        entry["hostIP"] = "127.0.0.1"
    return [entry]


def _pod(
    rng: random.Random,
    i: int,
    nodes: Sequence[Mapping[str, Any]],
    gpu_nodes: bool,
    features: Sequence[str],
) -> dict[str, Any]:
    app = rng.choice(APPS)
    labels = {"app": app}
    if rng.random() < 0.3:
        labels["tier"] = rng.choice(("front", "back"))
    containers = [_container(rng, "c0", heavy=rng.random() < 0.2)]
    if rng.random() < 0.2:
        containers.append(_container(rng, "c1"))
    ports = _ports(rng)
    if ports:
        containers[0]["ports"] = ports
    spec: dict[str, Any] = {"containers": containers, "terminationGracePeriodSeconds": 0}
    if rng.random() < 0.15:
        init = _container(rng, "init", heavy=rng.random() < 0.3)
        if rng.random() < 0.4:
            init["restartPolicy"] = "Always"  # a sidecar
        spec["initContainers"] = [init]
    if gpu_nodes and rng.random() < 0.2:
        _with_gpu(containers[0], rng.choice((1, 1, 2, 3)))
    if rng.random() < 0.05:
        # Pod-level requests replace the containers' cpu and memory (which must
        # not ask for more, so they ask for none).
        spec["resources"] = {"requests": {"cpu": rng.choice(("500m", "3")), "memory": "1Gi"}}
        for container in [*containers, *spec.get("initContainers", [])]:
            for part in container.get("resources", {}).values():
                part.pop("cpu", None)
                part.pop("memory", None)
    if rng.random() < 0.25:
        key, values = rng.choice(
            (
                (ZONE_LABEL, ZONES),
                ("disk", ("ssd", "hdd")),
                ("pool", ("general", "infra", "gpu")),
                ("disk", ("nvme",)),
            )
        )
        spec["nodeSelector"] = {key: rng.choice(values)}
    affinity = _affinity(rng, nodes)
    if affinity:
        spec["affinity"] = affinity
    tolerations = _tolerations(rng)
    if tolerations:
        spec["tolerations"] = tolerations
    if rng.random() < 0.4:
        spec["priorityClassName"] = rng.choice(PRIORITY_CLASSES)["name"]
    if "spread" in features and rng.random() < 0.4:
        spec["topologySpreadConstraints"] = _spread(rng, app)
    if "affinity" in features and rng.random() < 0.4:
        spec.setdefault("affinity", {}).update(_pod_affinity(rng, app))
    return {"name": f"p{i:02d}", "labels": labels, "spec": spec}


def _spread(rng: random.Random, app: str) -> list[dict[str, Any]]:
    out = []
    for key in rng.sample((ZONE_LABEL, HOSTNAME_LABEL), k=rng.randint(1, 2)):
        constraint: dict[str, Any] = {
            "maxSkew": rng.choice((1, 1, 2)),
            "topologyKey": key,
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": {"app": app}},
        }
        if rng.random() < 0.2 and constraint["whenUnsatisfiable"] == "DoNotSchedule":
            constraint["minDomains"] = rng.choice((2, 3, 4))
        if rng.random() < 0.2:
            constraint["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.2:
            constraint["nodeAffinityPolicy"] = "Ignore"
        out.append(constraint)
    return out


def _pod_affinity(rng: random.Random, app: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() >= 0.5:
            continue
        target = app if kind == "podAntiAffinity" and rng.random() < 0.6 else rng.choice(APPS)
        term = {
            "labelSelector": {"matchLabels": {"app": target}},
            "topologyKey": rng.choice((HOSTNAME_LABEL, ZONE_LABEL)),
        }
        section: dict[str, Any] = {}
        if rng.random() < 0.5:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [term]
        else:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.choice((10, 50, 100)), "podAffinityTerm": term}
            ]
        out[kind] = section
    if not out:
        out["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME_LABEL}
            ]
        }
    return out


def _pdbs(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for app in rng.sample(APPS, k=rng.randint(0, 2)):
        pdb: dict[str, Any] = {"name": f"pdb-{app}", "selector": {"matchLabels": {"app": app}}}
        if rng.random() < 0.5:
            pdb["minAvailable"] = rng.choice((1, 2))
        else:
            pdb["maxUnavailable"] = rng.choice((0, 1))
        out.append(pdb)
    return out


def _volumes(
    rng: random.Random, nodes: Sequence[Mapping[str, Any]], pods: list[dict[str, Any]]
) -> dict[str, Any]:
    """Pre-bound claims (no PV controller runs here): each claim names its volume
    and is Bound; volumes carry zone labels and node affinity."""
    pvs: list[dict[str, Any]] = []
    pvcs: list[dict[str, Any]] = []
    for pod in pods:
        if rng.random() >= 0.25:
            continue
        i = len(pvcs)
        claim = f"data-{i}"
        zone = rng.choice(ZONES)
        pv: dict[str, Any] = {
            "name": f"pv-{i}",
            "claim": claim,
            "capacity": "1Gi",
            "accessModes": [rng.choice(("ReadWriteOnce", "ReadWriteOncePod"))],
            "labels": {ZONE_LABEL: zone},
        }
        if rng.random() < 0.5:
            pv["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE_LABEL, "operator": "In", "values": [zone]}
                            ]
                        }
                    ]
                }
            }
        pvs.append(pv)
        pvcs.append({"name": claim, "volume": pv["name"], "accessModes": pv["accessModes"]})
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        if rng.random() < 0.1:
            pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = "missing-claim"
    # Another pod using an already claimed ReadWriteOncePod volume conflicts.
    used = [p for p in pods if p["spec"].get("volumes")]
    if used and rng.random() < 0.5:
        twin = rng.choice([p for p in pods if not p["spec"].get("volumes")] or [None])
        if twin is not None:
            twin["spec"]["volumes"] = copy.deepcopy(used[0]["spec"]["volumes"])
    return {"persistentVolumes": pvs, "persistentVolumeClaims": pvcs}


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
    features = parse_features(list(features))
    rng = random.Random(f"kubesched-differential/{seed}/{index}/{size}/{','.join(features)}")
    (node_min, node_max), (pod_min, pod_max) = SIZES[size]
    names = list(PROFILES)
    profile = profile or names[index % len(names)]
    gpu_nodes = rng.random() < 0.6
    nodes = [_node(rng, i, gpu_nodes) for i in range(rng.randint(node_min, node_max))]
    pods = [_pod(rng, i, nodes, gpu_nodes, features) for i in range(rng.randint(pod_min, pod_max))]
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
    return scenario


# --------------------------------------------------------------------- manifests
def node_manifest(node: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The Node object (status as a kubelet would report it) named NAME."""
    allocatable = dict(node["allocatable"])
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name, **node["labels"]}},
        "spec": {},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }
    if node.get("taints"):
        manifest["spec"]["taints"] = copy.deepcopy(node["taints"])
    if node.get("unschedulable"):
        manifest["spec"]["unschedulable"] = True
    if node.get("images"):
        manifest["status"]["images"] = copy.deepcopy(node["images"])
    return manifest


def rename_nodes(spec: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A copy of the pod SPEC with logical node names replaced (node affinity on
    metadata.name or kubernetes.io/hostname, nodeSelector on hostname)."""
    spec = copy.deepcopy(spec)

    def fix(values: list[str]) -> list[str]:
        return [names.get(v, v) for v in values]

    selector = spec.get("nodeSelector") or {}
    if HOSTNAME_LABEL in selector:
        selector[HOSTNAME_LABEL] = names.get(selector[HOSTNAME_LABEL], selector[HOSTNAME_LABEL])
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = list(
        (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
            "nodeSelectorTerms", []
        )
    )
    terms += [
        p["preference"]
        for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    ]
    for term in terms:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                field["values"] = fix(field["values"])
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == HOSTNAME_LABEL and expr.get("values"):
                expr["values"] = fix(expr["values"])
    return spec


def referenced_nodes(scenario: Mapping[str, Any]) -> set[str]:
    """Logical node names that some pod names (such nodes are never interchangeable)."""
    probe = {n["name"]: f"\0{n['name']}" for n in scenario["nodes"]}
    found: set[str] = set()
    for pod in scenario["pods"]:
        text = repr(rename_nodes(pod["spec"], probe))
        found.update(name for name, marker in probe.items() if f"'{marker}'" in text)
    return found


def referenced_label_keys(scenario: Mapping[str, Any]) -> set[str]:
    """Node label keys some pod (or volume) looks at: the others cannot tell nodes apart."""
    keys: set[str] = set()

    def walk(obj: Any, parent: str = "") -> None:
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                if k == "nodeSelector" and isinstance(v, Mapping):
                    keys.update(v)
                elif isinstance(v, str) and (
                    k == "topologyKey" or (k == "key" and parent == "matchExpressions")
                ):
                    keys.add(v)
                walk(v, k if isinstance(v, list) else parent)
        elif isinstance(obj, list):
            for item in obj:
                walk(item, parent)

    for pod in scenario["pods"]:
        walk(pod["spec"].get("nodeSelector") and {"nodeSelector": pod["spec"]["nodeSelector"]})
        affinity = pod["spec"].get("affinity") or {}
        walk(affinity.get("nodeAffinity"))
        walk({k: v for k, v in affinity.items() if k != "nodeAffinity"})
        walk(pod["spec"].get("topologySpreadConstraints"))
    for pv in (scenario.get("volumes") or {}).get("persistentVolumes", []):
        walk(pv.get("nodeAffinity"))
    return keys


def referenced_images(scenario: Mapping[str, Any]) -> set[str]:
    return {
        c["image"]
        for pod in scenario["pods"]
        for c in [*pod["spec"]["containers"], *pod["spec"].get("initContainers", [])]
    }


def pod_manifest(
    pod: Mapping[str, Any], namespace: str, scheduler_name: str, node_names: Mapping[str, str]
) -> dict[str, Any]:
    spec = rename_nodes(dict(pod["spec"]), node_names)
    spec["schedulerName"] = scheduler_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod["name"], "namespace": namespace, "labels": dict(pod["labels"])},
        "spec": spec,
    }


def priority_class_manifests() -> list[dict[str, Any]]:
    out = []
    for pc in PRIORITY_CLASSES:
        manifest = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc["name"]},
            "value": pc["value"],
        }
        if "preemptionPolicy" in pc:
            manifest["preemptionPolicy"] = pc["preemptionPolicy"]
        out.append(manifest)
    return out


def pdb_manifest(pdb: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": copy.deepcopy(pdb["selector"])}
    for key in ("minAvailable", "maxUnavailable"):
        if key in pdb:
            spec[key] = pdb[key]
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": pdb["name"], "namespace": namespace},
        "spec": spec,
    }


def volume_manifests(
    volumes: Mapping[str, Any], namespace: str, prefix: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(PersistentVolumes, PersistentVolumeClaims) for one run: volume names get
    PREFIX (they are cluster-scoped), claims are pre-bound to them."""
    pvs = []
    for pv in volumes.get("persistentVolumes", []):
        spec: dict[str, Any] = {
            "capacity": {"storage": pv["capacity"]},
            "accessModes": list(pv["accessModes"]),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "hostPath": {"path": f"/tmp/{prefix}-{pv['name']}"},
            "claimRef": {"namespace": namespace, "name": pv["claim"]},
        }
        if pv.get("nodeAffinity"):
            spec["nodeAffinity"] = copy.deepcopy(pv["nodeAffinity"])
        pvs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"{prefix}-{pv['name']}", "labels": dict(pv["labels"])},
                "spec": spec,
            }
        )
    pvcs = []
    for pvc in volumes.get("persistentVolumeClaims", []):
        pvcs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": pvc["name"], "namespace": namespace},
                "spec": {
                    "accessModes": list(pvc["accessModes"]),
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "",
                    "volumeName": f"{prefix}-{pvc['volume']}",
                },
            }
        )
    return pvs, pvcs
