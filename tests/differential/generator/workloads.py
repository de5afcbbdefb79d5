"""The `workloads` feature: Services, controllers and RuntimeClasses around the pods.

PodTopologySpread's default constraints (`defaultingType: System`) take their
selector from the Services selecting the pod and from the pod's controlling
ReplicationController, ReplicaSet or StatefulSet (helper.DefaultSelector), and
RuntimeClass admission gives a pod naming a RuntimeClass its `spec.overhead` and
merges the class's `scheduling.nodeSelector` and `tolerations` into it. So:

* ``services``: headless Services (no cluster IP is allocated: the control plane's
  service range is a /24) in the run's namespace: one per chosen app
  (``{app: <app>}``, sometimes with ``tier``), one selecting the pods of two apps
  through a label the generator gives them (``stack: <name>``), sometimes one
  without a selector (it selects nothing);
* ``controllers``: ReplicationControllers, ReplicaSets and StatefulSets that some
  pods name as controller (``pod["owner"] = {"kind", "name"}``; the harness creates
  the controller first and puts its uid into the pod's ``ownerReferences``).
  Their selectors select their pods (``app``, sometimes the ``ctl: <name>`` label
  their pods get, ReplicaSets and StatefulSets sometimes through
  ``matchExpressions``); ``replicas`` is the number of pods they own. No
  replication, ReplicaSet or StatefulSet controller (nor the garbage collector)
  runs on the test control plane, so nothing creates, adopts or deletes pods for
  them;
* ``runtimeClasses``: cluster-scoped (the harness prefixes their names, like the
  DRA DeviceClasses) with a ``handler``, ``overhead.podFixed`` (cpu, memory) and
  sometimes ``scheduling.nodeSelector`` (a label some node has) and
  ``scheduling.tolerations`` (of a taint some node has, else of a taint of the
  vocabulary); some pods name one in ``spec.runtimeClassName``, never one whose
  node selector conflicts with the pod's own (admission would reject the pod).

Gang members must stay alike: the gangs feature (applied after this one) copies
the first member's labels and spec to the others, and ``generate`` drops the
members' ``owner``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from tests.differential.generator.vocabulary import APPS, TAINTS, ZONE_LABEL

CONTROLLER_KINDS = ("ReplicationController", "ReplicaSet", "StatefulSet")
CONTROLLER_API_VERSIONS = {
    "ReplicationController": "v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
}
_SHORT = {"ReplicationController": "rc", "ReplicaSet": "rs", "StatefulSet": "ss"}
_HANDLERS = ("runc", "kata", "gvisor")
_OVERHEAD_CPU = ("50m", "100m", "250m", "500m")
_OVERHEAD_MEMORY = ("32Mi", "64Mi", "128Mi", "256Mi")


def _free(pod: Mapping[str, Any]) -> bool:
    """Whether the feature may change POD (not a gang member)."""
    return not pod["spec"].get("schedulingGroup")


def _services(rng: random.Random, pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    present = sorted({p["labels"]["app"] for p in pods}, key=APPS.index)
    out: list[dict[str, Any]] = []
    for app in rng.sample(present, k=rng.randint(1, min(3, len(present)))):
        selector = {"app": app}
        if rng.random() < 0.25:
            selector["tier"] = rng.choice(("front", "back"))
        out.append({"name": f"svc-{app}", "selector": selector})
    if len(present) >= 2 and rng.random() < 0.6:
        # A Service across two apps: a label ANDed selector cannot say "web or db", so
        # the pods of both get a label of their own.
        apps = rng.sample(present, k=2)
        stack = f"{apps[0]}-{apps[1]}"
        for pod in pods:
            if pod["labels"]["app"] in apps and _free(pod) and rng.random() < 0.8:
                pod["labels"]["stack"] = stack
        out.append({"name": "svc-stack", "selector": {"stack": stack}})
    if rng.random() < 0.4:
        out.append({"name": "svc-external", "selector": None})  # selects nothing
    return out


def _controllers(rng: random.Random, pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    free = [p for p in pods if _free(p)]
    present = sorted({p["labels"]["app"] for p in free}, key=APPS.index)
    for app in rng.sample(present, k=rng.randint(1, min(3, len(present)))):
        kind = rng.choice(CONTROLLER_KINDS)
        name = f"{_SHORT[kind]}-{app}"
        candidates = [p for p in free if p["labels"]["app"] == app and "owner" not in p]
        if not candidates:
            continue
        owned = rng.sample(candidates, k=rng.randint(1, len(candidates)))
        labels = {"app": app}
        if rng.random() < 0.5:
            labels["ctl"] = name
            for pod in owned:
                pod["labels"]["ctl"] = name
        for pod in owned:
            pod["owner"] = {"kind": kind, "name": name}
        controller: dict[str, Any] = {"kind": kind, "name": name, "labels": labels}
        if kind == "ReplicationController":
            controller["selector"] = dict(labels)  # a plain label map
        elif rng.random() < 0.4:
            controller["selector"] = {
                "matchExpressions": [
                    {"key": k, "operator": "In", "values": [v]} for k, v in labels.items()
                ]
            }
        else:
            controller["selector"] = {"matchLabels": dict(labels)}
        out.append(controller)
    return out


def _runtime_classes(
    rng: random.Random, nodes: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    taints = []
    for node in nodes:
        for taint in node.get("taints", []):
            if taint not in taints and taint["effect"] != "PreferNoSchedule":
                taints.append(taint)
    out: list[dict[str, Any]] = []
    for i in range(rng.randint(1, 3)):
        rc: dict[str, Any] = {
            "name": f"rt{i}",
            "handler": rng.choice(_HANDLERS),
            "overhead": {"cpu": rng.choice(_OVERHEAD_CPU), "memory": rng.choice(_OVERHEAD_MEMORY)},
        }
        scheduling: dict[str, Any] = {}
        if rng.random() < 0.5:
            node = rng.choice(nodes)
            key = rng.choice([k for k in ("pool", "disk", ZONE_LABEL) if k in node["labels"]])
            scheduling["nodeSelector"] = {key: node["labels"][key]}
        if rng.random() < 0.5:
            taint = rng.choice(taints or list(TAINTS[:2]))
            if "value" in taint and rng.random() < 0.5:
                toleration = {"key": taint["key"], "operator": "Equal", "value": taint["value"]}
            else:
                toleration = {"key": taint["key"], "operator": "Exists"}
            if rng.random() < 0.6:
                toleration["effect"] = taint["effect"]
            scheduling["tolerations"] = [toleration]
        if scheduling:
            rc["scheduling"] = scheduling
        out.append(rc)
    return out


def _conflicts(pod: Mapping[str, Any], runtime_class: Mapping[str, Any]) -> bool:
    """Whether RuntimeClass admission would reject POD for its node selector."""
    own = pod["spec"].get("nodeSelector") or {}
    theirs = (runtime_class.get("scheduling") or {}).get("nodeSelector") or {}
    return any(k in own and own[k] != v for k, v in theirs.items())


def workloads(
    rng: random.Random, nodes: Sequence[Mapping[str, Any]], pods: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The feature's objects; changes PODS (labels, ``owner``, ``spec.runtimeClassName``).
    Controllers' ``replicas`` are counted by :func:`count_replicas` once every pod
    exists (the batching feature copies pods after this)."""
    services = _services(rng, pods)
    controllers = _controllers(rng, pods)
    classes = _runtime_classes(rng, nodes)
    for pod in pods:
        if not _free(pod) or rng.random() >= 0.3:
            continue
        runtime_class = rng.choice(classes)
        if not _conflicts(pod, runtime_class):
            pod["spec"]["runtimeClassName"] = runtime_class["name"]
    return {"services": services, "controllers": controllers, "runtimeClasses": classes}


def count_replicas(objects: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> None:
    """Set each controller's ``replicas`` to the number of PODS it owns."""
    for controller in objects.get("controllers", []):
        key = {"kind": controller["kind"], "name": controller["name"]}
        controller["replicas"] = sum(1 for p in pods if p.get("owner") == key)
