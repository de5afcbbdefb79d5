"""deploy/rbac.yaml on a real kube-apiserver: kubesched's ServiceAccount can do
what a scheduler does (and what its secure port delegates: TokenReviews and
SubjectAccessReviews) and nothing else.

Checked three ways: SubjectAccessReview as admin, SelfSubjectAccessReview with
the ServiceAccount's token, and real requests with that token.
(`kubesched run` under this identity comes once the command exists.)
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.admin_api import AdminApi, ApiError, sa_user, unique_name
from tests.integration.control_plane import DEPLOY_DIR, ControlPlane
from tests.integration.kubesched_proc import start_kubesched

pytestmark = pytest.mark.integration

SA_NAMESPACE = "kube-system"
SA_NAME = "kubesched"
USER = sa_user(SA_NAMESPACE, SA_NAME)
LEASE = "kubesched"
COORD = "coordination.k8s.io"

# (verb, resource[/subresource], group, namespace, name); namespace "" = all / cluster-scoped.
ALLOWED = [
    ("create", "pods/binding", "", "team-a", ""),
    ("patch", "pods/status", "", "team-a", ""),
    ("update", "pods/status", "", "team-a", ""),
    ("delete", "pods", "", "team-a", ""),
    ("list", "pods", "", "", ""),
    ("watch", "pods", "", "", ""),
    ("list", "nodes", "", "", ""),
    ("watch", "nodes", "", "", ""),
    ("list", "namespaces", "", "", ""),
    ("watch", "services", "", "", ""),
    ("list", "replicationcontrollers", "", "", ""),
    ("list", "persistentvolumes", "", "", ""),
    ("watch", "persistentvolumeclaims", "", "", ""),
    ("watch", "podgroups", "scheduling.k8s.io", "", ""),
    ("patch", "podgroups/status", "scheduling.k8s.io", "team-a", "g"),
    ("watch", "poddisruptionbudgets", "policy", "", ""),
    ("list", "replicasets", "apps", "", ""),
    ("watch", "statefulsets", "apps", "", ""),
    ("list", "storageclasses", "storage.k8s.io", "", ""),
    ("watch", "csinodes", "storage.k8s.io", "", ""),
    ("list", "csidrivers", "storage.k8s.io", "", ""),
    ("watch", "csistoragecapacities", "storage.k8s.io", "", ""),
    ("watch", "volumeattachments", "storage.k8s.io", "", ""),
    ("list", "resourceclaims", "resource.k8s.io", "", ""),
    ("watch", "resourceslices", "resource.k8s.io", "", ""),
    ("list", "deviceclasses", "resource.k8s.io", "", ""),
    ("get", "resourceclaims", "resource.k8s.io", "team-a", "c"),
    ("patch", "resourceclaims", "resource.k8s.io", "team-a", "c"),
    ("patch", "resourceclaims/status", "resource.k8s.io", "team-a", "c"),
    ("patch", "resourceclaims/binding", "resource.k8s.io", "", ""),
    ("create", "resourceclaims", "resource.k8s.io", "team-a", ""),
    ("delete", "resourceclaims", "resource.k8s.io", "team-a", "c"),
    ("create", "events", "", "team-a", ""),
    ("patch", "events", "", "team-a", ""),
    ("create", "events", "events.k8s.io", "team-a", ""),
    ("patch", "events", "events.k8s.io", "team-a", ""),
    ("create", "leases", COORD, SA_NAMESPACE, ""),
    ("get", "leases", COORD, SA_NAMESPACE, LEASE),
    ("update", "leases", COORD, SA_NAMESPACE, LEASE),
    # The secure port's delegated authentication and authorization.
    ("create", "tokenreviews", "authentication.k8s.io", "", ""),
    ("create", "subjectaccessreviews", "authorization.k8s.io", "", ""),
]

DENIED = [
    # Priority admission reads PriorityClasses, the scheduler does not (api/kinds.py).
    ("list", "priorityclasses", "scheduling.k8s.io", "", ""),
    ("delete", "nodes", "", "", "node-1"),
    ("update", "nodes", "", "", "node-1"),
    ("patch", "nodes", "", "", "node-1"),
    ("create", "nodes", "", "", ""),
    ("update", "pods", "", "team-a", "p"),
    ("patch", "pods", "", "team-a", "p"),
    ("create", "pods", "", "team-a", ""),
    ("get", "pods", "", "team-a", "p"),
    ("create", "pods/eviction", "", "team-a", "p"),
    ("get", "secrets", "", "kube-system", "anything"),
    ("list", "secrets", "", "", ""),
    ("get", "configmaps", "", "kube-system", "kubesched-config"),
    ("update", "leases", COORD, SA_NAMESPACE, "kube-scheduler"),
    ("get", "leases", COORD, SA_NAMESPACE, "kube-scheduler"),
    ("delete", "leases", COORD, SA_NAMESPACE, LEASE),
    ("list", "leases", COORD, SA_NAMESPACE, ""),
    ("create", "leases", COORD, "default", ""),
    ("update", "leases", COORD, "default", LEASE),
    ("delete", "events", "", "team-a", "e"),
    ("create", "clusterrolebindings", "rbac.authorization.k8s.io", "", ""),
    ("escalate", "clusterroles", "rbac.authorization.k8s.io", "", "kubesched"),
    ("impersonate", "users", "", "", "admin"),
    ("update", "deployments", "apps", "kube-system", "kubesched"),
    ("create", "serviceaccounts/token", "", SA_NAMESPACE, SA_NAME),
    ("update", "resourceclaims", "resource.k8s.io", "team-a", "c"),
    ("list", "resourceclaimtemplates", "resource.k8s.io", "", ""),
    ("update", "resourceslices", "resource.k8s.io", "", "s"),
    ("update", "resourceclaims/status", "resource.k8s.io", "team-a", "c"),
    ("create", "localsubjectaccessreviews", "authorization.k8s.io", "team-a", ""),
    ("get", "configmaps", "", "kube-system", "extension-apiserver-authentication"),
]


def _id(case: tuple[str, str, str, str, str]) -> str:
    verb, resource, group, ns, name = case
    return "-".join(p for p in (verb, f"{resource}.{group}" if group else resource, ns, name) if p)


@pytest.fixture(scope="module")
def admin(control_plane: ControlPlane) -> Iterator[AdminApi]:
    """Admin client with deploy/rbac.yaml applied (kept for the module)."""
    with AdminApi(control_plane) as client:
        client.apply_file(DEPLOY_DIR / "rbac.yaml")
        yield client


@pytest.fixture(scope="module")
def sa_api(admin: AdminApi) -> Iterator[AdminApi]:
    """A client authenticated as the kubesched ServiceAccount (TokenRequest token)."""
    token = admin.create_token(SA_NAMESPACE, SA_NAME, expiration_seconds=3600)
    with admin.with_token(token) as client:
        yield client


def test_rbac_objects_exist(admin: AdminApi) -> None:
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    assert admin.get(f"/api/v1/namespaces/{SA_NAMESPACE}/serviceaccounts/{SA_NAME}")
    role = admin.get(f"{rbac}/clusterroles/kubesched")
    assert all("*" not in r["verbs"] + r["resources"] for r in role["rules"])
    crb = admin.get(f"{rbac}/clusterrolebindings/kubesched")
    assert crb["subjects"] == [
        {"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NAMESPACE}
    ]
    assert admin.get(f"{rbac}/namespaces/{SA_NAMESPACE}/roles/kubesched-leader-election")
    assert admin.get(f"{rbac}/namespaces/{SA_NAMESPACE}/rolebindings/kubesched-leader-election")
    # Applying again is a no-op replace (create-or-replace).
    admin.apply_file(DEPLOY_DIR / "rbac.yaml")


def test_all_deploy_manifests_pass_strict_server_validation(admin: AdminApi) -> None:
    """config.yaml and deployment.yaml are accepted by the apiserver with
    fieldValidation=Strict (dry run: nothing is stored)."""
    for name in ("rbac.yaml", "config.yaml", "deployment.yaml"):
        objs = admin.apply_file(DEPLOY_DIR / name, dry_run=True)
        assert objs, name
    (deployment,) = admin.apply_file(DEPLOY_DIR / "deployment.yaml", dry_run=True)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == SA_NAME


def test_token_identity(sa_api: AdminApi) -> None:
    info = sa_api.whoami()
    assert info["username"] == USER
    assert "system:serviceaccounts:kube-system" in info["groups"]


@pytest.mark.parametrize("case", ALLOWED, ids=_id)
def test_subject_access_review_allows(admin: AdminApi, case: tuple[str, ...]) -> None:
    verb, resource, group, ns, name = case
    review = admin.access_review(USER, verb, resource, group=group, namespace=ns, name=name)
    assert review.get("allowed") is True, review


@pytest.mark.parametrize("case", DENIED, ids=_id)
def test_subject_access_review_denies(admin: AdminApi, case: tuple[str, ...]) -> None:
    verb, resource, group, ns, name = case
    review = admin.access_review(USER, verb, resource, group=group, namespace=ns, name=name)
    assert not review.get("allowed"), review


def test_self_subject_access_review_matches(sa_api: AdminApi) -> None:
    """The same answers through the token (the authenticator's groups, not ours)."""
    wrong = [
        _id(c)
        for c in ALLOWED
        if not sa_api.can_i(c[0], c[1], group=c[2], namespace=c[3], name=c[4])
    ]
    wrong += [
        _id(c) for c in DENIED if sa_api.can_i(c[0], c[1], group=c[2], namespace=c[3], name=c[4])
    ]
    assert wrong == []


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_scheduler_requests_with_token(api: AdminApi, sa_api: AdminApi, namespace: str) -> None:
    """What a scheduler does, done with the ServiceAccount's token."""
    node = unique_name("rbac-node")
    api.create_node(node)
    api.create_pod(namespace, "p", cpu="100m")

    # Informers: list and watch.
    assert node in [n["metadata"]["name"] for n in sa_api.get("/api/v1/nodes")["items"]]
    assert "p" in [p["metadata"]["name"] for p in sa_api.get("/api/v1/pods")["items"]]
    assert sa_api.status_code("GET", "/api/v1/pods", watch="1", timeoutSeconds="1") == 200
    sa_api.get("/apis/storage.k8s.io/v1/csinodes")
    sa_api.get("/apis/storage.k8s.io/v1/volumeattachments")

    # Unschedulable: the PodScheduled condition through pods/status.
    sa_api.patch(
        f"/api/v1/namespaces/{namespace}/pods/p/status",
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/1 nodes are available",
                    }
                ]
            }
        },
    )
    conditions = api.get_pod(namespace, "p")["status"]["conditions"]
    scheduled = [(c["status"], c["reason"]) for c in conditions if c["type"] == "PodScheduled"]
    assert scheduled == [("False", "Unschedulable")]

    # Bind, and report it in both event APIs.
    sa_api.bind(namespace, "p", node)
    assert api.node_of(namespace, "p") == node
    regarding = {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": namespace}
    sa_api.post(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "p.scheduled", "namespace": namespace},
            "eventTime": _now(),
            "regarding": regarding,
            "reason": "Scheduled",
            "note": f"Successfully assigned {namespace}/p to {node}",
            "type": "Normal",
            "action": "Binding",
            "reportingController": "kubesched",
            "reportingInstance": "kubesched-test",
        },
    )
    sa_api.post(
        f"/api/v1/namespaces/{namespace}/events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "p.core", "namespace": namespace},
            "involvedObject": regarding,
            "reason": "Scheduled",
            "message": "core/v1 too",
            "type": "Normal",
            "source": {"component": "kubesched"},
        },
    )
    sa_api.patch(
        f"/api/v1/namespaces/{namespace}/events/p.core", {"count": 2}, patch_type="merge-patch"
    )
    assert [r for _, r, _ in api.events_for(namespace, "p")] == ["Scheduled", "Scheduled"]

    # Not allowed: the pod's spec, nodes, secrets.
    pod = api.get_pod(namespace, "p")
    pod["metadata"]["labels"] = {"changed": "yes"}
    assert sa_api.status_code("PUT", f"/api/v1/namespaces/{namespace}/pods/p", pod) == 403
    assert (
        sa_api.status_code(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/p",
            {"metadata": {"labels": {"x": "y"}}},
        )
        == 403
    )
    assert sa_api.status_code("DELETE", f"/api/v1/nodes/{node}") == 403
    assert sa_api.status_code("GET", "/api/v1/namespaces/kube-system/secrets") == 403
    assert sa_api.status_code("GET", f"/api/v1/namespaces/{namespace}/pods/p") == 403

    # Preemption: deleting a victim is allowed.
    sa_api.delete_pod(namespace, "p", missing_ok=False)
    assert api.list_pods(namespace) == []


def test_leader_election_lease(admin: AdminApi, sa_api: AdminApi) -> None:
    """create any Lease in kube-system (RBAC cannot limit create by name), but
    get/update only the kubesched one."""
    leases = f"/apis/{COORD}/v1/namespaces/{SA_NAMESPACE}/leases"

    def lease(name: str) -> dict[str, object]:
        return {
            "apiVersion": f"{COORD}/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": SA_NAMESPACE},
            "spec": {
                "holderIdentity": "kubesched-test",
                "leaseDurationSeconds": 15,
                "acquireTime": _now(),
                "renewTime": _now(),
            },
        }

    admin.request("DELETE", f"{leases}/{LEASE}", ok=(404,))
    sa_api.post(leases, lease(LEASE))
    current = sa_api.get(f"{leases}/{LEASE}")
    current["spec"]["renewTime"] = _now()
    current["spec"]["leaseTransitions"] = 1
    updated = sa_api.put(f"{leases}/{LEASE}", current)
    assert updated["spec"]["leaseTransitions"] == 1

    other = unique_name("other-lease")
    sa_api.post(leases, lease(other))  # allowed: create is not restricted by name
    for method, body in (("GET", None), ("PUT", lease(other)), ("DELETE", None)):
        assert sa_api.status_code(method, f"{leases}/{other}", body) == 403, method
    assert sa_api.status_code("DELETE", f"{leases}/{LEASE}") == 403
    assert sa_api.status_code("GET", f"/apis/{COORD}/v1/namespaces/default/leases/{LEASE}") == 403
    with pytest.raises(ApiError) as err:
        sa_api.post(f"/apis/{COORD}/v1/namespaces/default/leases", lease(LEASE))
    assert err.value.code == 403

    admin.request("DELETE", f"{leases}/{other}", ok=(404,))
    admin.request("DELETE", f"{leases}/{LEASE}", ok=(404,))


def test_kubesched_runs_with_exactly_the_deployed_role(
    control_plane: ControlPlane, admin: AdminApi, api: AdminApi, namespace: str, tmp_path: Path
) -> None:
    """kubesched itself, authenticated only by the ServiceAccount's token and
    configured by deploy/config.yaml, schedules, reports and leads: no 403."""
    admin.request("DELETE", f"/apis/{COORD}/v1/namespaces/{SA_NAMESPACE}/leases/{LEASE}", ok=(404,))
    token = admin.create_token(SA_NAMESPACE, SA_NAME, expiration_seconds=3600)
    ca = base64.b64encode(control_plane.ca_cert.read_bytes()).decode()
    kubeconfig = tmp_path / "sa-kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": control_plane.url, "certificate-authority-data": ca},
                    }
                ],
                "users": [{"name": "kubesched", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "kubesched"}}],
                "current-context": "c",
            }
        )
    )
    configmap = next(d for d in yaml.safe_load_all((DEPLOY_DIR / "config.yaml").read_text()) if d)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(next(iter(configmap["data"].values())))

    api.create_node(unique_name("rbac-node"), cpu="4", memory="8Gi")
    cp = dataclasses.replace(control_plane, kubeconfig=kubeconfig)
    proc = start_kubesched(cp, tmp_path, "--config", str(config_file))
    try:
        proc.wait_ready()
        api.wait_for(lambda: "became leader" in proc.log(), timeout=30)
        # The leader's checks, and /metrics through its own TokenReview and
        # SubjectAccessReview (the ClusterRole's create verbs).
        assert proc.get("/healthz?verbose").text == "[+]leaderElection ok\nhealthz check passed\n"
        assert proc.get("/readyz?verbose").text == (
            "[+]leaderElection ok\n[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n"
        )
        assert proc.metrics().status_code == 200
        api.create_pod(namespace, "fits", cpu="100m")
        api.create_pod(namespace, "too-big", cpu="64")
        api.wait_for(lambda: api.node_of(namespace, "fits"), timeout=20)
        api.wait_for(
            lambda: (
                {e.get("reason") for e in api.list_events(namespace)}
                >= {"Scheduled", "FailedScheduling"}
            ),
            timeout=20,
        )
        conditions = api.get_pod(namespace, "too-big")["status"].get("conditions", [])
        assert any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)
        holder = admin.get(f"/apis/{COORD}/v1/namespaces/{SA_NAMESPACE}/leases/{LEASE}")
        assert holder["spec"]["holderIdentity"]
        # A 403 as a status code, not the digits inside a log line's timestamp or its
        # "file.py:403]" source line.
        assert not re.search(r"(?<![\d.:])403(?!\d)", proc.log())
        assert "forbidden" not in proc.log().lower()
    finally:
        assert proc.stop() == 0
