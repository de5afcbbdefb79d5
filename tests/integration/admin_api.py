"""AdminApi, the integration tests' synchronous client of the apiserver (the admin
client certificate, or a bearer token): raw requests, nodes, pods, events, tokens,
apply, access reviews, waiting, and the cleanup of what it created; with ApiError,
WaitTimeout, event_fields for events of either API, and unique_name for DNS-1123 names.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import yaml

if TYPE_CHECKING:
    from bench.control_plane import ControlPlane

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

T = TypeVar("T")


# --------------------------------------------------------------------- API client
class ApiError(Exception):
    """A non-2xx answer of the apiserver; ``status``/``reason`` from its Status."""

    def __init__(self, method: str, path: str, response: httpx.Response) -> None:
        self.method = method
        self.path = path
        self.code = response.status_code
        try:
            self.body: dict[str, Any] = response.json()
        except ValueError:
            self.body = {"message": response.text}
        self.reason = str(self.body.get("reason", ""))
        message = self.body.get("message", response.text)
        super().__init__(f"{method} {path}: {self.code} {self.reason}: {message}")


class WaitTimeout(AssertionError):
    pass


# kind -> (plural, namespaced) for AdminApi.apply; the path's group/version comes
# from the manifest's apiVersion.
KINDS: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "Node": ("nodes", False),
    "Pod": ("pods", True),
    "ServiceAccount": ("serviceaccounts", True),
    "ConfigMap": ("configmaps", True),
    "Secret": ("secrets", True),
    "Service": ("services", True),
    "ReplicationController": ("replicationcontrollers", True),
    "PersistentVolume": ("persistentvolumes", False),
    "PersistentVolumeClaim": ("persistentvolumeclaims", True),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "Deployment": ("deployments", True),
    "ReplicaSet": ("replicasets", True),
    "StatefulSet": ("statefulsets", True),
    "DaemonSet": ("daemonsets", True),
    "PriorityClass": ("priorityclasses", False),
    "PodDisruptionBudget": ("poddisruptionbudgets", True),
    "StorageClass": ("storageclasses", False),
    "Lease": ("leases", True),
}

SA_GROUPS = ("system:serviceaccounts", "system:authenticated")


def sa_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _taint(t: str | Mapping[str, Any]) -> dict[str, Any]:
    """A taint from a dict or from 'key=value:Effect' / 'key:Effect'."""
    if isinstance(t, Mapping):
        return dict(t)
    key_value, _, effect = t.rpartition(":")
    if not key_value or not effect:
        raise ValueError(f"taint {t!r}: want 'key[=value]:Effect'")
    key, _, value = key_value.partition("=")
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive dict merge (lists and scalars in overrides replace)."""
    out = dict(base)
    for k, v in overrides.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


class AdminApi:
    """Synchronous helper over httpx for tests: the admin client certificate by
    default, or a bearer token (``with_token``). Raises :class:`ApiError` on non-2xx.
    """

    def __init__(
        self,
        cp: ControlPlane,
        *,
        token: str | None = None,
        timeout: float = 15.0,
        http2: bool = False,
    ) -> None:
        self.cp = cp
        self.token = token
        self._timeout = timeout
        self._http2 = http2
        self._client = self._make_client()
        # What create_node / create_pod / apply made; removed by cleanup().
        self._created_nodes: list[str] = []
        self._created_pods: list[tuple[str, str]] = []

    def _make_client(self) -> httpx.Client:
        headers = {"Accept": "application/json", "User-Agent": "kubesched-tests"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return httpx.Client(
            base_url=self.cp.url,
            verify=self.cp.ssl_context(client_cert=self.token is None),
            headers=headers,
            timeout=httpx.Timeout(self._timeout, connect=5.0),
            http2=self._http2,
        )

    def with_token(self, token: str) -> AdminApi:
        """A client that authenticates with TOKEN (no client certificate)."""
        return AdminApi(self.cp, token=token, timeout=self._timeout, http2=self._http2)

    def reconnect(self) -> None:
        self._client.close()
        self._client = self._make_client()

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> AdminApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- raw requests
    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        ok: Iterable[int] = (),
    ) -> dict[str, Any]:
        """METHOD PATH with a JSON BODY; the decoded answer ({} if empty).

        Statuses in OK are returned (their Status body) instead of raising."""
        headers = {}
        content = None
        if body is not None:
            content = json.dumps(body)
            headers["Content-Type"] = content_type
        response = self._client.request(
            method, path, content=content, params=params, headers=headers
        )
        if response.is_success or response.status_code in set(ok):
            if not response.content:
                return {}
            try:
                data: dict[str, Any] = response.json()
            except ValueError:
                return {"text": response.text}
            return data
        raise ApiError(method, path, response)

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        return self.request("GET", path, params=params or None)

    def post(self, path: str, body: Any, **params: Any) -> dict[str, Any]:
        return self.request("POST", path, body, params=params or None)

    def put(self, path: str, body: Any, **params: Any) -> dict[str, Any]:
        return self.request("PUT", path, body, params=params or None)

    def patch(
        self, path: str, body: Any, patch_type: str = "strategic-merge-patch", **params: Any
    ) -> dict[str, Any]:
        """patch_type: strategic-merge-patch, merge-patch or json-patch."""
        return self.request(
            "PATCH",
            path,
            body,
            params=params or None,
            content_type=f"application/{patch_type}+json",
        )

    def delete(self, path: str, body: Any = None, **params: Any) -> dict[str, Any]:
        return self.request("DELETE", path, body, params=params or None)

    def status_code(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str | None = None,
        **params: Any,
    ) -> int:
        """Only the HTTP status of METHOD PATH (never raises ApiError). The body's
        content type defaults to JSON, or to a merge patch for PATCH."""
        content = None if body is None else json.dumps(body)
        headers = {}
        if body is not None:
            default = "application/merge-patch+json" if method == "PATCH" else "application/json"
            headers["Content-Type"] = content_type or default
        return self._client.request(
            method, path, content=content, params=params or None, headers=headers
        ).status_code

    def ready(self) -> bool:
        try:
            return self._client.get("/readyz").text == "ok"
        except httpx.TransportError:
            return False

    # ----------------------------------------------------------------- objects
    def create_namespace(
        self, name: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if labels:
            meta["labels"] = dict(labels)
        return self.post(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}
        )

    def create_node(
        self,
        name: str,
        cpu: str = "4",
        memory: str = "16Gi",
        pods: int = 110,
        labels: Mapping[str, str] | None = None,
        taints: Iterable[str | Mapping[str, Any]] | None = None,
        *,
        unschedulable: bool = False,
        ready: bool = True,
        extra_resources: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A Node with status capacity = allocatable (kept as given: no kubelet here),
        the Ready condition, label kubernetes.io/hostname=NAME plus LABELS, and TAINTS
        (dicts or 'key=value:Effect' strings). Deleted again when the test ends."""
        resources = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_resources or {})}
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {},
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "reason": "KubeletReady" if ready else "KubeletNotReady",
                    }
                ],
            },
        }
        if taints:
            node["spec"]["taints"] = [_taint(t) for t in taints]
        if unschedulable:
            node["spec"]["unschedulable"] = True
        created = self.post("/api/v1/nodes", node)
        self._created_nodes.append(name)
        return created

    def get_node(self, name: str) -> dict[str, Any]:
        return self.get(f"/api/v1/nodes/{name}")

    def list_nodes(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get("/api/v1/nodes")["items"]
        return items

    def delete_node(self, name: str, missing_ok: bool = True) -> None:
        self.request("DELETE", f"/api/v1/nodes/{name}", ok=(404,) if missing_ok else ())

    def create_pod(
        self,
        namespace: str,
        name: str,
        cpu: str | None = None,
        memory: str | None = None,
        scheduler_name: str = "kubesched",
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        image: str = PAUSE_IMAGE,
        **spec: Any,
    ) -> dict[str, Any]:
        """A one-container Pod requesting CPU/MEMORY (none if None), for
        SCHEDULER_NAME; keyword arguments are merged into spec (nodeSelector=...,
        tolerations=..., priorityClassName=..., affinity=..., containers=[...])."""
        requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
        container: dict[str, Any] = {"name": "c", "image": image}
        if requests:
            container["resources"] = {"requests": requests}
        meta: dict[str, Any] = {"name": name, "namespace": namespace}
        if labels:
            meta["labels"] = dict(labels)
        if annotations:
            meta["annotations"] = dict(annotations)
        pod_spec = _merge(
            {
                "schedulerName": scheduler_name,
                "containers": [container],
                "terminationGracePeriodSeconds": 0,
            },
            spec,
        )
        created = self.post(
            f"/api/v1/namespaces/{namespace}/pods",
            {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec},
        )
        self._created_pods.append((namespace, name))
        return created

    def get_pod(self, ns: str, name: str) -> dict[str, Any]:
        return self.get(f"/api/v1/namespaces/{ns}/pods/{name}")

    def list_pods(self, ns: str, **params: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get(f"/api/v1/namespaces/{ns}/pods", **params)["items"]
        return items

    def delete_pod(self, ns: str, name: str, missing_ok: bool = True) -> None:
        """Delete at once (gracePeriodSeconds=0): no kubelet would ever confirm."""
        self.request(
            "DELETE",
            f"/api/v1/namespaces/{ns}/pods/{name}",
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            ok=(404,) if missing_ok else (),
        )

    def node_of(self, ns: str, name: str) -> str | None:
        """spec.nodeName of the pod (None while unbound)."""
        node: str | None = self.get_pod(ns, name)["spec"].get("nodeName")
        return node

    def bind(self, ns: str, pod: str, node: str) -> dict[str, Any]:
        """POST the pods/binding subresource (what a scheduler does)."""
        return self.post(
            f"/api/v1/namespaces/{ns}/pods/{pod}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod, "namespace": ns},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
        )

    def list_events(self, ns: str) -> list[dict[str, Any]]:
        """Events of NS from both APIs, oldest first, each once.

        core/v1 and events.k8s.io/v1 are two views of the same objects (one etcd
        resource), so an event written through either API appears in both lists;
        items are taken from core/v1 and events.k8s.io/v1 items add those not seen
        there (by uid). Each item gets ``apiVersion`` (list items lack it); use
        :func:`event_fields` for the fields that differ between the two shapes.
        """
        seen: set[str] = set()
        out: list[dict[str, Any]] = []
        for api_version, path in (
            ("v1", f"/api/v1/namespaces/{ns}/events"),
            ("events.k8s.io/v1", f"/apis/events.k8s.io/v1/namespaces/{ns}/events"),
        ):
            for item in self.get(path)["items"]:
                uid = item["metadata"].get("uid", "")
                if uid in seen:
                    continue
                seen.add(uid)
                out.append({"apiVersion": api_version, "kind": "Event", **item})
        out.sort(key=lambda e: (_event_time(e), e["metadata"].get("resourceVersion", "")))
        return out

    def events_for(self, ns: str, name: str) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the events about object NAME in NS."""
        return [
            (f["type"], f["reason"], f["message"])
            for f in map(event_fields, self.list_events(ns))
            if f["object"] == name
        ]

    def create_token(
        self,
        namespace: str,
        serviceaccount: str,
        expiration_seconds: int = 3600,
        audiences: list[str] | None = None,
    ) -> str:
        """A bound token for the ServiceAccount (TokenRequest API)."""
        spec: dict[str, Any] = {"expirationSeconds": expiration_seconds}
        if audiences:
            spec["audiences"] = audiences
        answer = self.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{serviceaccount}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        token: str = answer["status"]["token"]
        return token

    def whoami(self) -> dict[str, Any]:
        """status.userInfo of a SelfSubjectReview (username, groups, ...)."""
        answer = self.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        info: dict[str, Any] = answer["status"]["userInfo"]
        return info

    # ----------------------------------------------------------------- apply
    def resource_path(self, obj: Mapping[str, Any], namespace: str | None = None) -> str:
        """The collection path of OBJ (no name), e.g. /apis/apps/v1/namespaces/x/deployments."""
        kind = obj.get("kind", "")
        if kind not in KINDS:
            raise ValueError(
                f"apply: kind {kind!r} not supported (known: {', '.join(sorted(KINDS))})"
            )
        plural, namespaced = KINDS[kind]
        api_version = obj["apiVersion"]
        prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        if not namespaced:
            return f"{prefix}/{plural}"
        ns = namespace or obj.get("metadata", {}).get("namespace") or "default"
        return f"{prefix}/namespaces/{ns}/{plural}"

    def apply(
        self,
        *manifests: Mapping[str, Any] | Iterable[Mapping[str, Any]],
        namespace: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Strict",
    ) -> list[dict[str, Any]]:
        """Create each object, or replace it (PUT with the current resourceVersion)
        if it exists. Accepts dicts and lists of dicts (None documents are skipped).
        ``fieldValidation=Strict`` makes unknown or duplicate fields an error.
        Returns the objects as stored (or as they would be, with dry_run)."""
        params: dict[str, str] = {"fieldValidation": field_validation}
        if dry_run:
            params["dryRun"] = "All"
        out = []
        for obj in _flatten(manifests):
            collection = self.resource_path(obj, namespace)
            body = dict(obj)
            if namespace and KINDS[obj["kind"]][1]:
                body["metadata"] = {**obj.get("metadata", {}), "namespace": namespace}
            name = body["metadata"]["name"]
            try:
                result = self.request("POST", collection, body, params=params)
            except ApiError as exc:
                if exc.code != 409:
                    raise
                current = self.get(f"{collection}/{name}")
                body["metadata"] = {
                    **body["metadata"],
                    "resourceVersion": current["metadata"]["resourceVersion"],
                }
                result = self.request("PUT", f"{collection}/{name}", body, params=params)
            if not dry_run:
                if obj["kind"] == "Node":
                    self._created_nodes.append(name)
                elif obj["kind"] == "Pod":
                    self._created_pods.append((result["metadata"]["namespace"], name))
            out.append(result)
        return out

    def apply_file(self, path: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
        """apply() every document of a YAML file (e.g. deploy/rbac.yaml)."""
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
        return self.apply(docs, **kwargs)

    def delete_object(self, obj: Mapping[str, Any], namespace: str | None = None) -> None:
        path = f"{self.resource_path(obj, namespace)}/{obj['metadata']['name']}"
        self.request("DELETE", path, ok=(404,))

    # ----------------------------------------------------------------- authorization
    @staticmethod
    def _attributes(
        verb: str,
        resource: str,
        group: str,
        namespace: str,
        name: str,
    ) -> dict[str, str]:
        resource, _, subresource = resource.partition("/")
        attrs = {"verb": verb, "resource": resource, "group": group}
        for key, value in (("subresource", subresource), ("namespace", namespace), ("name", name)):
            if value:
                attrs[key] = value
        return attrs

    def access_review(
        self,
        user: str,
        verb: str,
        resource: str,
        *,
        group: str = "",
        namespace: str = "",
        name: str = "",
        groups: Iterable[str] | None = None,
    ) -> dict[str, Any]:
        """status of a SubjectAccessReview (needs admin): may USER do VERB on RESOURCE
        ('pods', 'pods/binding', ...) of GROUP? For a service-account user the
        service-account groups are added unless GROUPS is given."""
        if groups is None and user.startswith("system:serviceaccount:"):
            ns = user.split(":")[2]
            groups = (*SA_GROUPS, f"system:serviceaccounts:{ns}")
        spec: dict[str, Any] = {
            "user": user,
            "groups": list(groups or ()),
            "resourceAttributes": self._attributes(verb, resource, group, namespace, name),
        }
        answer = self.post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        status: dict[str, Any] = answer["status"]
        return status

    def can(self, user: str, verb: str, resource: str, **kwargs: Any) -> bool:
        return bool(self.access_review(user, verb, resource, **kwargs).get("allowed"))

    def can_i(
        self, verb: str, resource: str, *, group: str = "", namespace: str = "", name: str = ""
    ) -> bool:
        """SelfSubjectAccessReview as this client's own identity (e.g. with_token)."""
        answer = self.post(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": self._attributes(verb, resource, group, namespace, name)
                },
            },
        )
        return bool(answer["status"].get("allowed"))

    # ----------------------------------------------------------------- control plane
    def restart_apiserver(self, hard: bool = False, compact: bool = False) -> int:
        """Restart kube-apiserver with the same flags (see ControlPlane.restart_apiserver)
        and reconnect this client. Returns the new pid."""
        pid = self.cp.restart_apiserver(hard=hard, compact=compact)
        self.reconnect()
        self.wait_for(self.ready, timeout=30, message="apiserver /readyz after restart")
        return pid

    # ----------------------------------------------------------------- waiting
    @staticmethod
    def wait_for(
        predicate: Callable[[], T],
        timeout: float = 30.0,
        interval: float = 0.2,
        message: str = "",
    ) -> T:
        """Call PREDICATE until it returns something truthy and return that.

        Connection errors and 5xx answers count as "not yet" (an apiserver that
        is restarting); other exceptions propagate. Raises WaitTimeout."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                value = predicate()
                if value:
                    return value
                last = value
            except httpx.TransportError as exc:
                last = exc
            except ApiError as exc:
                if exc.code < 500:
                    raise
                last = exc
            if time.monotonic() >= deadline:
                what = message or getattr(predicate, "__name__", repr(predicate))
                raise WaitTimeout(
                    f"timed out after {timeout:g}s waiting for {what}; last: {last!r}"
                )
            time.sleep(interval)

    def wait_for_node_name(self, ns: str, pod: str, timeout: float = 30.0) -> str:
        """Wait until the pod is bound; its spec.nodeName."""
        node = self.wait_for(
            lambda: self.node_of(ns, pod), timeout=timeout, message=f"pod {ns}/{pod} to be bound"
        )
        assert node is not None
        return node

    # ----------------------------------------------------------------- teardown
    def cleanup(self) -> None:
        """Delete the pods and nodes this client created (pods first)."""
        for ns, name in reversed(self._created_pods):
            with contextlib.suppress(ApiError, httpx.HTTPError):
                self.delete_pod(ns, name)
        for name in reversed(self._created_nodes):
            with contextlib.suppress(ApiError, httpx.HTTPError):
                self.delete_node(name)
        self._created_pods.clear()
        self._created_nodes.clear()


def _flatten(items: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for item in items:
        if item is None:
            continue
        if isinstance(item, Mapping):
            if item.get("kind") == "List":
                yield from _flatten(item.get("items", []))
            else:
                yield dict(item)
        else:
            yield from _flatten(item)


def _event_time(e: Mapping[str, Any]) -> str:
    return str(
        e.get("eventTime")
        or e.get("lastTimestamp")
        or e.get("deprecatedLastTimestamp")
        or e.get("firstTimestamp")
        or e["metadata"].get("creationTimestamp")
        or ""
    )


def event_fields(e: Mapping[str, Any]) -> dict[str, str]:
    """type, reason, message, object (name), kind, source of an Event of either API."""
    regarding = e.get("regarding") or e.get("involvedObject") or {}
    source = e.get("reportingController") or e.get("source", {}).get("component", "")
    return {
        "type": e.get("type", ""),
        "reason": e.get("reason", ""),
        "message": e.get("note") or e.get("message") or "",
        "object": regarding.get("name", ""),
        "kind": regarding.get("kind", ""),
        "source": source or e.get("reportingComponent", ""),
    }


_ns_counter = itertools.count()


def unique_name(prefix: str, max_len: int = 63) -> str:
    """A DNS-1123 label: PREFIX (sanitised, shortened) + a random suffix."""
    base = re.sub(r"[^a-z0-9-]+", "-", prefix.lower()).strip("-")
    base = re.sub(r"-{2,}", "-", base)
    suffix = f"{next(_ns_counter)}{secrets.token_hex(3)}"
    base = base[: max_len - len(suffix) - 1].rstrip("-") or "t"
    return f"{base}-{suffix}"
