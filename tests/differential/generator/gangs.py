"""The gangs feature: Workload API gangs (scheduling.k8s.io/v1alpha2 PodGroups with a
gang policy, pods naming them in spec.schedulingGroup), for runs with kube-scheduler's
GenericWorkload and GangScheduling gates on in both schedulers.

A gang is a run of consecutive pods of the scenario made alike (a training job's
workers share one template), mixed with the single pods around it; some ask for
more than the cluster can give them all at once. minCount is the gang's size, so
that the group becomes schedulable only once its last pod exists: both schedulers
then see the same pods, whatever their timing."""

from __future__ import annotations

import copy
import random
from typing import Any

GANG_GATES = "GenericWorkload=true,GangScheduling=true"
POD_GROUP_API = "scheduling.k8s.io/v1alpha2"


def gangs(rng: random.Random, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn runs of PODS into gangs (in place); the gangs as {name, minCount, pods}."""
    out: list[dict[str, Any]] = []
    i = rng.randint(0, 2)
    while i < len(pods) - 1 and len(out) < 3:
        size = min(rng.randint(2, 5), len(pods) - i)
        members = pods[i : i + size]
        name = f"gang-{len(out)}"
        template = copy.deepcopy(members[0]["spec"])
        if rng.random() < 0.4:
            # Workers that ask for a lot: the gang may not fit whole.
            requests = template["containers"][0].setdefault("resources", {})
            requests.setdefault("requests", {})["cpu"] = rng.choice(("2", "3", "4"))
            limits = requests.get("limits")
            if limits and "cpu" in limits:
                limits["cpu"] = requests["requests"]["cpu"]
        for pod in members:
            pod["spec"] = copy.deepcopy(template)
            pod["spec"]["schedulingGroup"] = {"podGroupName": name}
            pod["labels"] = dict(members[0]["labels"])
        out.append({"name": name, "minCount": size, "pods": [p["name"] for p in members]})
        i += size + rng.randint(0, 3)
    return out


def pod_group_manifest(gang: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": POD_GROUP_API,
        "kind": "PodGroup",
        "metadata": {"name": gang["name"], "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": gang["minCount"]}}},
    }


def last_members(scenario: dict[str, Any]) -> dict[str, list[str]]:
    """Pod name of each gang's last pod -> the gang's pods (where a step waits for all)."""
    return {g["pods"][-1]: list(g["pods"]) for g in scenario.get("gangs", [])}


def waits_for_group(scenario: dict[str, Any], pod: str) -> bool:
    """Whether POD is a gang member before its last: created without waiting (the
    gang is held at PreEnqueue until its last pod exists)."""
    return any(pod in g["pods"][:-1] for g in scenario.get("gangs", []))
