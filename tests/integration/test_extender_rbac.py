"""deploy/extender/rbac.yaml on a real kube-apiserver, by SubjectAccessReview as in
test_rbac.py.

kube-scheduler and `kubesched extender` share the pod's ServiceAccount
(kube-system:kube-scheduler-extended), so its rights are kube-scheduler's (the built-in
roles) plus the extender's ClusterRole. The extender's part is therefore checked on
its own, through a ServiceAccount bound to the ClusterRole kubesched-extender alone:
it may list and watch each kind the extender's informers can watch (api/kinds.py:
the informers are `run`'s, tests/unit/test_kinds_read.py) and create the reviews of its
secure port, and may not bind, delete, or write anything; `kubesched extender` runs
under that identity with no 403. Then the pod's ServiceAccount: what both need, and
what neither may.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.api import kinds
from tests.integration.admin_api import AdminApi, sa_user
from tests.integration.control_plane import ControlPlane, free_port
from tests.integration.extender_deploy import EXTENDER_DIR, NAME, NAMESPACE, token_kubeconfig
from tests.integration.kubesched_proc import KubeschedProcess

pytestmark = pytest.mark.integration

USER = sa_user(NAMESPACE, NAME)
# A ServiceAccount bound to the extender's ClusterRole and nothing else.
PROBE = "kubesched-extender-rbac-probe"
PROBE_USER = sa_user(NAMESPACE, PROBE)
COORD = "coordination.k8s.io"
RBAC = "rbac.authorization.k8s.io"

Case = tuple[str, str, str, str, str]  # verb, resource[/subresource], group, namespace, name

WATCHED = [*kinds.SCHEDULER_KINDS, *kinds.PLUGIN_KINDS]
REVIEWS: list[Case] = [
    ("create", "tokenreviews", "authentication.k8s.io", "", ""),
    ("create", "subjectaccessreviews", "authorization.k8s.io", "", ""),
]
# list and watch of every kind, cluster-wide and (namespaced kinds) in one namespace.
EXTENDER_READS: list[Case] = [
    (verb, k.resource, k.group, ns, "")
    for k in WATCHED
    for verb in ("list", "watch")
    for ns in ("", *(("team-a",) if k.namespaced else ()))
]
WRITES = ("create", "update", "patch", "delete", "deletecollection")
# What a scheduler writes, and the extender must not.
SCHEDULER_WRITES: list[Case] = [
    ("create", "pods/binding", "", "team-a", "p"),
    ("create", "bindings", "", "team-a", ""),
    ("delete", "pods", "", "team-a", "p"),
    ("patch", "pods/status", "", "team-a", "p"),
    ("update", "pods/status", "", "team-a", "p"),
    ("create", "pods/eviction", "", "team-a", "p"),
    ("create", "events", "", "team-a", ""),
    ("patch", "events", "", "team-a", "e"),
    ("create", "events", "events.k8s.io", "team-a", ""),
    ("create", "leases", COORD, NAMESPACE, ""),
    ("update", "leases", COORD, NAMESPACE, NAME),
    ("patch", "persistentvolumes", "", "", "pv"),
    ("patch", "persistentvolumeclaims", "", "team-a", "c"),
    ("patch", "resourceclaims/status", "resource.k8s.io", "team-a", "c"),
    ("patch", "resourceclaims/binding", "resource.k8s.io", "team-a", "c"),
    ("patch", "podgroups/status", "scheduling.k8s.io", "team-a", "g"),
    ("patch", "podgroups/status", "scheduling.x-k8s.io", "team-a", "g"),
]
EXTENDER_DENIED: list[Case] = [
    # No write on any kind it reads, nor on anything else.
    *(
        (verb, k.resource, k.group, "team-a" if k.namespaced else "", "x")
        for k, verb in itertools.product(WATCHED, WRITES)
    ),
    *SCHEDULER_WRITES,
    # Reads beyond list/watch: no get (it reads its cache), no secrets or config maps.
    ("get", "pods", "", "team-a", "p"),
    ("get", "nodes", "", "", "n"),
    ("get", "leases", COORD, NAMESPACE, NAME),
    ("get", "secrets", "", NAMESPACE, "anything"),
    ("list", "secrets", "", "", ""),
    ("get", "configmaps", "", NAMESPACE, "extension-apiserver-authentication"),
    ("list", "priorityclasses", "scheduling.k8s.io", "", ""),
    ("create", "serviceaccounts/token", "", NAMESPACE, NAME),
    ("create", "clusterrolebindings", RBAC, "", ""),
    ("impersonate", "users", "", "", "admin"),
]

# The pod's ServiceAccount: kube-scheduler's needs (built-in roles, its Lease, the
# authentication ConfigMap) and the extender's.
POD_ALLOWED: list[Case] = [
    *EXTENDER_READS,
    *REVIEWS,
    ("create", "pods/binding", "", "team-a", "p"),
    ("delete", "pods", "", "team-a", "p"),
    ("patch", "pods/status", "", "team-a", "p"),
    ("create", "events", "events.k8s.io", "team-a", ""),
    ("patch", "events", "events.k8s.io", "team-a", "e"),
    ("create", "leases", COORD, NAMESPACE, ""),
    ("get", "leases", COORD, NAMESPACE, NAME),
    ("update", "leases", COORD, NAMESPACE, NAME),
    ("get", "configmaps", "", NAMESPACE, "extension-apiserver-authentication"),
    ("watch", "configmaps", "", NAMESPACE, "extension-apiserver-authentication"),
    ("patch", "persistentvolumes", "", "", "pv"),
]
POD_DENIED: list[Case] = [
    ("update", "pods", "", "team-a", "p"),
    ("patch", "pods", "", "team-a", "p"),
    ("create", "pods", "", "team-a", ""),
    ("update", "nodes", "", "", "n"),
    ("delete", "nodes", "", "", "n"),
    ("get", "secrets", "", NAMESPACE, "anything"),
    ("list", "secrets", "", "", ""),
    # Its own configuration is a volume, not read through the API.
    ("get", "configmaps", "", NAMESPACE, f"{NAME}-config"),
    # Other schedulers' Leases, and its own only in its namespace, never deleted.
    ("update", "leases", COORD, NAMESPACE, "kubesched"),
    ("update", "leases", COORD, NAMESPACE, "kube-controller-manager"),
    ("delete", "leases", COORD, NAMESPACE, NAME),
    ("update", "leases", COORD, "default", NAME),
    ("list", "leases", COORD, NAMESPACE, ""),
    ("update", "deployments", "apps", NAMESPACE, NAME),
    ("create", "serviceaccounts/token", "", NAMESPACE, NAME),
    ("create", "clusterrolebindings", RBAC, "", ""),
    ("escalate", "clusterroles", RBAC, "", "kubesched-extender"),
    ("impersonate", "users", "", "", "admin"),
    ("update", "resourceslices", "resource.k8s.io", "", "s"),
]


def _id(case: Case) -> str:
    verb, resource, group, ns, name = case
    return "-".join(p for p in (verb, f"{resource}.{group}" if group else resource, ns, name) if p)


@pytest.fixture(scope="module")
def admin(control_plane: ControlPlane) -> Iterator[AdminApi]:
    """Admin client with deploy/extender/rbac.yaml applied, and the probe ServiceAccount
    bound to the extender's ClusterRole alone (kept for the module)."""
    with AdminApi(control_plane) as client:
        client.apply_file(EXTENDER_DIR / "rbac.yaml")
        client.apply(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": PROBE, "namespace": NAMESPACE},
            },
            {
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": PROBE},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "kubesched-extender"},
                "subjects": [{"kind": "ServiceAccount", "name": PROBE, "namespace": NAMESPACE}],
            },
        )
        yield client


def wrong(admin: AdminApi, user: str, allowed: list[Case], denied: list[Case]) -> list[str]:
    """The cases whose SubjectAccessReview answers otherwise than expected."""
    out = []
    for expect, cases in ((True, allowed), (False, denied)):
        for verb, resource, group, ns, name in cases:
            review = admin.access_review(user, verb, resource, group=group, namespace=ns, name=name)
            if bool(review.get("allowed")) != expect:
                out.append(
                    f"{'denied' if expect else 'allowed'}: {_id((verb, resource, group, ns, name))}"
                )
    return out


def test_the_extenders_cluster_role_reads_and_writes_nothing(admin: AdminApi) -> None:
    assert wrong(admin, PROBE_USER, [*EXTENDER_READS, *REVIEWS], EXTENDER_DENIED) == []


def test_the_pods_service_account_has_what_both_containers_need(admin: AdminApi) -> None:
    assert wrong(admin, USER, POD_ALLOWED, POD_DENIED) == []


def test_what_the_builtin_role_brings_along(admin: AdminApi) -> None:
    """system:kube-scheduler's grants on the Lease named kube-scheduler are the default
    scheduler's; bound to it, as upstream's "Configure Multiple Schedulers" binds a
    second scheduler, this ServiceAccount may update that Lease too. Recorded here so
    that the day it changes is noticed."""
    assert admin.can(
        USER, "update", "leases", group=COORD, namespace=NAMESPACE, name="kube-scheduler"
    )


def test_kubesched_extender_runs_with_only_its_cluster_role(
    control_plane: ControlPlane, admin: AdminApi, tmp_path: Path
) -> None:
    """`kubesched extender` with the default profile (whose plugins read the storage and
    DRA kinds too), authenticated only by the probe ServiceAccount's token: its
    informers list and watch everything (ready), its /metrics passes its own
    TokenReview and SubjectAccessReview, and nothing is refused."""
    token = admin.create_token(NAMESPACE, PROBE, expiration_seconds=3600)
    kubeconfig = token_kubeconfig(control_plane, token, tmp_path / "kubeconfig")
    port = free_port()
    log_path = tmp_path / "extender.log"
    command = [
        sys.executable,
        "-m",
        "kubesched.cli.main",
        "extender",
        "--kubeconfig",
        str(kubeconfig),
        "--secure-port",
        str(port),
    ]
    with log_path.open("wb") as out:
        popen = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    proc = KubeschedProcess(popen, log_path, port, control_plane)
    try:
        proc.wait_ready()
        assert proc.get("/readyz?verbose").status_code == 200
        assert proc.metrics().status_code == 200
        log = proc.log()
        assert "forbidden" not in log.lower(), log[-3000:]
    finally:
        assert proc.stop() == 0, proc.log()[-3000:]
