"""kubesched's two wire formats against a real kube-apiserver: every kind it reads
decodes to the same structs in protobuf as in JSON, in lists and in watches, and
its writes in protobuf (Bindings, Events) are what it writes in JSON."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.kube.client import KubeClient
from kubesched.kube.cluster import post_binding
from kubesched.kube.config import load_connection
from kubesched.kube.informer import Handlers, Informer
from kubesched.kube.protobuf.wire import CONTENT_TYPE as PROTOBUF
from kubesched.kube.protobuf.wire import MESSAGES
from kubesched.kube.writer import EventWriter, PendingEvent, Regarding
from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane

pytestmark = pytest.mark.integration

JSON = "application/json"
# Every kind kubesched reads in protobuf, where it lists it.
PATHS: dict[str, str] = {
    "Pod": "/api/v1/pods",
    "Node": "/api/v1/nodes",
    "Namespace": "/api/v1/namespaces",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
    "PodDisruptionBudget": "/apis/policy/v1/poddisruptionbudgets",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/csistoragecapacities",
    "VolumeAttachment": "/apis/storage.k8s.io/v1/volumeattachments",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/resourceclaimtemplates",
}
KINDS = {cls.__name__: cls for cls in MESSAGES}


def _objects(ns: str) -> list[tuple[str, dict[str, Any]]]:
    """(list path to create at, object): every field kubesched reads, set somewhere."""
    selector = {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["a", "b"]}]}  # fmt: skip
    term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname",
            "namespaces": [ns], "namespaceSelector": {"matchLabels": {"team": "x"}},
            "matchLabelKeys": ["pod-template-hash"]}  # fmt: skip
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "rich", "namespace": ns,
                     "labels": {"app": "web", "tier": "a", "pod-template-hash": "h1"},
                     "annotations": {"note": "x" * 40}, "finalizers": ["example.com/keep"],
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": "web-h1", "uid": "uid-web-h1",
                                          "controller": True}]},
        "spec": {
            "schedulerName": "nobody", "priorityClassName": f"{ns}-high",
            "nodeSelector": {"disk": "ssd"}, "hostNetwork": False,
            "schedulingGates": [{"name": "example.com/gate"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}],
                         "matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                          "values": ["n9"]}]}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": {"matchExpressions": [
                            {"key": "gen", "operator": "Gt", "values": ["3"]}]}}]},
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": term}]},
            },
            "tolerations": [
                {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
            "topologySpreadConstraints": [
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": selector, "minDomains": 2, "nodeAffinityPolicy": "Honor",
                 "nodeTaintsPolicy": "Ignore", "matchLabelKeys": ["pod-template-hash"]}],
            "initContainers": [{"name": "sidecar", "image": "busybox", "restartPolicy": "Always",
                                "resources": {"requests": {"cpu": "50m", "memory": "16Mi"}}},
                               {"name": "init", "image": "busybox",
                                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
            "containers": [{"name": "c", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"},
                                      {"containerPort": 53, "hostPort": 53, "protocol": "UDP",
                                       "hostIP": "127.0.0.1"}],
                            "resources": {"requests": {"cpu": "250m", "memory": "64Mi",
                                                       "example.com/gpu": "1"},
                                          "limits": {"example.com/gpu": "1"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                        {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
                            "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                            "resources": {"requests": {"storage": "1Gi"}}}}}},
                        {"name": "cfg", "configMap": {"name": "c"}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "claim-a"},
                               {"name": "tpl", "resourceClaimTemplateName": "tpl"}],
        },
    }  # fmt: skip
    pv = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": f"{ns}-pv", "labels": {"topology.kubernetes.io/zone": "z1"}},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "fast", "persistentVolumeReclaimPolicy": "Retain",
                 "csi": {"driver": "csi.example.com", "volumeHandle": "h1"},
                 "claimRef": {"namespace": ns, "name": "claim", "uid": "u1"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "zone", "operator": "In", "values": ["z1"]}]}]}}},
    }  # fmt: skip
    return [
        ("/api/v1/persistentvolumes", pv),
        (f"/api/v1/namespaces/{ns}/persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "claim", "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                     "volumeName": f"{ns}-pv", "resources": {"requests": {"storage": "1Gi"}}}}),
        ("/apis/storage.k8s.io/v1/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": f"{ns}-fast"}, "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [
                {"key": "zone", "values": ["z1", "z2"]}]}]}),
        (f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": ns},
            "spec": {"maxUnavailable": "50%", "selector": selector}}),
        (f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb-int", "namespace": ns},
            "spec": {"minAvailable": 2, "selector": selector}}),
        ("/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": f"{ns}-high"}, "value": 1000,
            "preemptionPolicy": "PreemptLowerPriority", "description": "d"}),
        ("/apis/storage.k8s.io/v1/csidrivers", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": f"{ns}.csi.example.com"},
            "spec": {"attachRequired": True, "storageCapacity": True}}),
        (f"/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap", "namespace": ns}, "storageClassName": "fast",
            "capacity": "10Gi", "maximumVolumeSize": "2Gi",
            "nodeTopology": {"matchLabels": {"zone": "z1"}}}),
        ("/apis/resource.k8s.io/v1/deviceclasses", {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": f"{ns}-gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d.example.com"'}}]}}),
        ("/apis/resource.k8s.io/v1/resourceslices", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{ns}-slice"},
            "spec": {"driver": "d.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "attributes": {
                         "model": {"string": "a100"}, "cores": {"int": 80},
                         "ok": {"bool": True}, "v": {"version": "1.2.3"}},
                         "capacity": {"memory": {"value": "80Gi"}}}]}}),
        (f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "claim-a", "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": f"{ns}-gpu", "count": 2, "allocationMode": "ExactCount",
                "selectors": [{"cel": {"expression": "true"}}]}}],
                "constraints": [{"requests": ["gpu"], "matchAttribute": "d.example.com/model"}]}}}),
        (f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "tpl", "namespace": ns},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": f"{ns}-gpu"}}]}}}}),
        ("/apis/storage.k8s.io/v1/csinodes", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": f"{ns}-n1"},
            "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1",
                                  "topologyKeys": ["zone"], "allocatable": {"count": 16}}]}}),
        ("/apis/storage.k8s.io/v1/volumeattachments", {
            "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": f"{ns}-va"},
            "spec": {"attacher": "csi.example.com", "nodeName": "wire-n1",
                     "source": {"persistentVolumeName": f"{ns}-pv"}}}),
        (f"/api/v1/namespaces/{ns}/pods", pod),
    ]  # fmt: skip


def _client_for(control_plane: ControlPlane, content_type: str) -> Callable[[], Any]:
    async def make() -> KubeClient:
        connection = await load_connection(str(control_plane.kubeconfig), None)
        return KubeClient(connection, content_type=content_type)

    return make


async def _listed(client: KubeClient, kind: type) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    informer: Informer[Any] = Informer(
        client, PATHS[kind.__name__], kind, Handlers(lambda o: None, lambda a, b: None, print)
    )
    await informer._relist()
    seen.update(informer.store)
    return seen


def test_every_kind_lists_the_same_in_protobuf_and_json(
    control_plane: ControlPlane, api: AdminApi, namespace: str
) -> None:
    api.create_node("wire-n1", labels={"zone": "z1", "gen": "4"}, taints=["k=v:NoSchedule"],
                    extra_resources={"example.com/gpu": "4"})  # fmt: skip
    for path, obj in _objects(namespace):
        api.post(path, obj)

    async def both() -> list[tuple[str, int, list[str]]]:
        json_client = await _client_for(control_plane, JSON)()
        pb_client = await _client_for(control_plane, PROTOBUF)()
        found = []
        try:
            for name, kind in sorted(KINDS.items()):
                a = await _listed(json_client, kind)
                b = await _listed(pb_client, kind)
                differ = [k for k in a if a[k] != b.get(k)] + [k for k in b if k not in a]
                found.append((name, len(a), differ))
        finally:
            await json_client.aclose()
            await pb_client.aclose()
        return found

    found = asyncio.run(both())
    assert [(name, differ) for name, _, differ in found if differ] == []
    # Every kind had objects to compare, the rich ones among them.
    assert [name for name, count, _ in found if count == 0] == []
    assert sorted(PATHS) == sorted(KINDS)


def test_watches_decode_the_same_and_writes_land_in_protobuf(
    control_plane: ControlPlane, api: AdminApi, namespace: str
) -> None:
    """A pod created, bound (the Binding in protobuf), given an Event (in protobuf),
    and deleted: both watches see the same events, decoded alike."""
    api.create_node("wire-n2")

    async def scenario() -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
        clients = [await _client_for(control_plane, t)() for t in (JSON, PROTOBUF)]
        seen: list[list[tuple[str, Any]]] = [[], []]
        informers = []
        for client, events in zip(clients, seen, strict=True):
            informer: Informer[Any] = Informer(
                client,
                f"/api/v1/namespaces/{namespace}/pods",
                KINDS["Pod"],
                Handlers(
                    lambda o, e=events: e.append(("add", o)),
                    lambda _a, b, e=events: e.append(("update", b)),
                    lambda o, e=events: e.append(("delete", o)),
                ),
            )
            informers.append(informer)
        tasks = [asyncio.ensure_future(i.run()) for i in informers]
        try:
            for informer in informers:
                await asyncio.wait_for(informer.synced.wait(), 10)
            created = api.create_pod(namespace, "watched", cpu="100m")
            uid = created["metadata"]["uid"]
            await post_binding(clients[1], namespace, "watched", uid, "wire-n2", None)
            writer = EventWriter(clients[1])
            writer.enqueue(
                PendingEvent(
                    Regarding(namespace, "watched", uid, ""),
                    "Normal",
                    "Scheduled",
                    "Binding",
                    "Successfully assigned by the protobuf test",
                    "kubesched",
                    time.time(),
                )
            )
            writer_task = asyncio.ensure_future(writer.run())
            assert await writer.flush(10.0) == 0
            writer_task.cancel()
            api.delete_pod(namespace, "watched")
            deadline = asyncio.get_running_loop().time() + 20
            while not all(e and e[-1][0] == "delete" for e in seen):
                assert asyncio.get_running_loop().time() < deadline, seen
                await asyncio.sleep(0.05)
        finally:
            for task in tasks:
                task.cancel()
            for client in clients:
                await client.aclose()
        return seen[0], seen[1]

    by_json, by_protobuf = asyncio.run(scenario())
    assert [t for t, _ in by_json] == [t for t, _ in by_protobuf]
    assert [o for _, o in by_json] == [o for _, o in by_protobuf]
    assert any(o.spec.node_name == "wire-n2" for _, o in by_json)  # the protobuf Binding
    events = api.events_for(namespace, "watched")
    assert ("Normal", "Scheduled", "Successfully assigned by the protobuf test") in events
