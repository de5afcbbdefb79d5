"""What the generator's features add to a scenario beyond the plain nodes and pods:
topology spread constraints and pod (anti-)affinity terms of a pod, the
PodDisruptionBudgets of the preemption feature and the pre-bound volumes and
claims of the volumes feature."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from typing import Any

from tests.differential.generator.vocabulary import APPS, HOSTNAME_LABEL, ZONE_LABEL, ZONES


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


def _replicas(rng: random.Random, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `batching` feature: runs of identical pods (replicas), as a controller
    makes them, right after the pod they copy. Pods with volumes or claims are
    not copied (the copies would share them). Half the runs get a host port, so
    that each node holds one replica: v1.36.3 reuses a ranking only when the
    node the previous pod went to no longer fits the next one."""
    out: list[dict[str, Any]] = []
    chosen = set(rng.sample(range(len(pods)), k=min(len(pods), rng.randint(1, 3))))
    for i, pod in enumerate(pods):
        out.append(pod)
        spec = pod["spec"]
        if i not in chosen or spec.get("volumes") or spec.get("resourceClaims"):
            continue
        if rng.random() < 0.5:
            spec["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
        for k in range(rng.randint(2, 5)):
            copy_ = copy.deepcopy(pod)
            copy_["name"] = f"{pod['name']}r{k}"
            out.append(copy_)
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
    """Pre-bound claims: each claim names its volume and the volume its claim (the
    PV binder of the test cluster's kube-controller-manager completes the binding;
    there is no provisioner for dynamic ones); volumes carry zone labels and node
    affinity."""
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
