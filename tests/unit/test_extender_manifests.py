"""deploy/extender/: a stock kube-scheduler with `kubesched extender` as a sidecar. The
files parse, hold the expected objects, point kube-scheduler at its sidecar on
loopback, give the extender a configuration kubesched loads, grant it only reads, and
lock both containers down as deploy/deployment.yaml does. (The integration tests
test_extender_deploy.py and test_extender_rbac.py render, apply and run them.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api import kinds
from kubesched.cli.options import check_profile, plugin_registry
from kubesched.config.file import parse_config
from kubesched.framework.interfaces import EXTENSION_POINTS
from kubesched.framework.profile import resolve

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
EXTENDER = DEPLOY / "extender"
NAME = "kube-scheduler-extended"
SA = {"kind": "ServiceAccount", "name": NAME, "namespace": "kube-system"}
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler:v1.36.3"
KUBESCHED_IMAGE = "ghcr.io/kubesched/kubesched:0.1.0"

EXPECTED_KINDS = {
    "rbac.yaml": [
        "ServiceAccount",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "RoleBinding",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    ],
    "config.yaml": ["ConfigMap"],
    "deployment.yaml": ["Deployment"],
}
READ = {"list", "watch"}
REVIEWS = {
    ("authentication.k8s.io", "tokenreviews"): {"create"},
    ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
}


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def only(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"].get("name"))]
    return doc


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


@pytest.fixture(scope="module")
def rbac() -> list[dict[str, Any]]:
    return load(EXTENDER / "rbac.yaml")


@pytest.fixture(scope="module")
def configmap() -> dict[str, Any]:
    return only(load(EXTENDER / "config.yaml"), "ConfigMap")


@pytest.fixture(scope="module")
def pod() -> dict[str, Any]:
    deployment = only(load(EXTENDER / "deployment.yaml"), "Deployment")
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        c for c in (*pod.get("initContainers", []), *pod["containers"]) if c["name"] == name
    ]
    (only_one,) = found
    return only_one


def flag(command: list[str], name: str) -> str:
    """The value of --NAME VALUE or --NAME=VALUE in COMMAND."""
    for i, arg in enumerate(command):
        if arg == name:
            return command[i + 1]
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    raise AssertionError(f"{name} not in {command}")


def config_of(pod: dict[str, Any], configmap: dict[str, Any], name: str) -> dict[str, Any]:
    """The file the container's --config names, found as the kubelet would: its mount,
    the volume's ConfigMap item, the ConfigMap's key."""
    c = container(pod, name)
    path = Path(flag(c["command"], "--config"))
    (mount,) = [m for m in c["volumeMounts"] if Path(m["mountPath"]) == path.parent]
    assert mount["readOnly"] is True
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    (item,) = [i for i in volume["configMap"]["items"] if i["path"] == path.name]
    config: dict[str, Any] = yaml.safe_load(configmap["data"][item["key"]])
    return config


def test_every_file_parses_with_the_expected_objects() -> None:
    files = sorted(p.name for p in EXTENDER.glob("*.yaml") if p.name != "kustomization.yaml")
    assert files == sorted(EXPECTED_KINDS)
    for name, expected in EXPECTED_KINDS.items():
        docs = load(EXTENDER / name)
        assert [d["kind"] for d in docs] == expected, name
        for d in docs:
            assert d["metadata"]["labels"]["app.kubernetes.io/name"] == NAME
            if d["kind"] in ("ClusterRole", "ClusterRoleBinding"):
                assert "namespace" not in d["metadata"]
            else:
                assert d["metadata"]["namespace"] == "kube-system", (name, d["kind"])
    kustomization = yaml.safe_load((EXTENDER / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(EXPECTED_KINDS)


def test_the_kube_scheduler_is_bound_to_the_builtin_roles(rbac: list[dict[str, Any]]) -> None:
    bindings = {
        (b["kind"], b["metadata"].get("namespace", ""), b["roleRef"]["kind"], b["roleRef"]["name"])
        for b in rbac
        if b["kind"] in ("ClusterRoleBinding", "RoleBinding")
    }
    assert bindings == {
        ("ClusterRoleBinding", "", "ClusterRole", "system:kube-scheduler"),
        ("ClusterRoleBinding", "", "ClusterRole", "system:volume-scheduler"),
        ("ClusterRoleBinding", "", "ClusterRole", "kubesched-extender"),
        ("RoleBinding", "kube-system", "Role", "extension-apiserver-authentication-reader"),
        ("RoleBinding", "kube-system", "Role", f"{NAME}-leader-election"),
    }
    for b in rbac:
        if "roleRef" in b:
            assert b["subjects"] == [SA], b["metadata"]["name"]
    assert only(rbac, "ServiceAccount")["metadata"]["name"] == NAME


def test_the_lease_role_names_the_lease_kube_scheduler_elects_on(
    rbac: list[dict[str, Any]], pod: dict[str, Any], configmap: dict[str, Any]
) -> None:
    election = config_of(pod, configmap, "kube-scheduler")["leaderElection"]
    assert election["leaderElect"] is True
    role = only(rbac, "Role")
    assert role["metadata"]["namespace"] == election["resourceNamespace"]
    # create comes from system:kube-scheduler (leases, any name).
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [election["resourceName"]],
            "verbs": ["get", "update"],
        }
    ]


def test_the_extender_cluster_role_reads_exactly_what_its_informers_watch(
    rbac: list[dict[str, Any]],
) -> None:
    """The extender's informers are `run`'s (kube/informers.py scheduler_informers),
    whose kinds are api/kinds.py's (tests/unit/test_kinds_read.py): list and watch
    of each, the reviews of its secure port, nothing else."""
    role = only(rbac, "ClusterRole", "kubesched-extender")
    watched = {(k.group, k.resource): READ for k in (*kinds.SCHEDULER_KINDS, *kinds.PLUGIN_KINDS)}
    assert grants(role["rules"]) == {**watched, **REVIEWS}
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}
        for key in ("apiGroups", "resources", "verbs"):
            assert not any("*" in v for v in rule[key]), rule


def test_the_extender_reads_what_kubesched_run_reads(rbac: list[dict[str, Any]]) -> None:
    """deploy/rbac.yaml's list/watch grants (for `kubesched run`) are the extender's."""
    run_role = only(load(DEPLOY / "rbac.yaml"), "ClusterRole")
    run_reads = {key for key, verbs in grants(run_role["rules"]).items() if verbs & READ}
    extender = grants(only(rbac, "ClusterRole", "kubesched-extender")["rules"])
    assert {key for key, verbs in extender.items() if verbs == READ} == run_reads


def test_kube_scheduler_calls_its_sidecar_on_loopback(
    pod: dict[str, Any], configmap: dict[str, Any]
) -> None:
    config = config_of(pod, configmap, "kube-scheduler")
    assert (config["apiVersion"], config["kind"]) == (
        "kubescheduler.config.k8s.io/v1",
        "KubeSchedulerConfiguration",
    )
    assert "clientConnection" not in config  # in-cluster
    assert [p["schedulerName"] for p in config["profiles"]] == [NAME]
    extender = container(pod, "kubesched-extender")["command"]
    address, port = flag(extender, "--bind-address"), flag(extender, "--secure-port")
    assert address == "127.0.0.1"
    assert config["extenders"] == [
        {
            "urlPrefix": f"https://{address}:{port}/scheduler",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "preemptVerb": "preempt",
            "weight": 5,
            "nodeCacheCapable": True,
            "enableHTTPS": True,
        }
    ]


def test_kubesched_loads_the_extender_configuration(
    pod: dict[str, Any], configmap: dict[str, Any]
) -> None:
    """As `kubesched extender --config` would: parsed, and each profile passes the
    framework's checks (one QueueSort, a Bind plugin); the profile is the one pods of
    kube-scheduler's profile get, and runs none of the default plugins kube-scheduler
    runs already."""
    raw = config_of(pod, configmap, "kubesched-extender")
    config = parse_config(raw, "deploy/extender/config.yaml")
    registry = plugin_registry(())  # `kubesched extender`'s, without --plugin
    for profile in config.profiles:
        check_profile(profile, registry, "--config")
    assert [p.scheduler_name for p in config.profiles] == [NAME]
    assert config.kubeconfig == ""  # in-cluster credentials
    assert config.extenders == []
    resolved = resolve(config.profiles[0], EXTENSION_POINTS, registry)
    assert {point: names for point, names in resolved.points.items() if names} == {
        "queueSort": ["PrioritySort"],
        "bind": ["DefaultBinder"],
    }


def test_the_containers(pod: dict[str, Any]) -> None:
    assert pod["serviceAccountName"] == NAME
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod.get("schedulerName", "default-scheduler") == "default-scheduler"
    (sidecar,) = pod["initContainers"]
    (scheduler,) = pod["containers"]
    # A native sidecar: started before kube-scheduler, and kept running.
    assert sidecar["name"] == "kubesched-extender"
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["image"] == KUBESCHED_IMAGE
    assert sidecar["command"][:2] == ["kubesched", "extender"]
    assert flag(sidecar["command"], "--config") == "/etc/kubesched/config.yaml"
    assert "ports" not in sidecar
    assert scheduler["image"] == KUBE_SCHEDULER_IMAGE
    assert scheduler["command"] == [
        "kube-scheduler",
        "--config=/etc/kubernetes/kube-scheduler/config.yaml",
        "--secure-port=10259",
    ]
    for c in (sidecar, scheduler):
        assert c["resources"]["requests"].keys() >= {"cpu", "memory"}
    # The read-only root filesystem: the extender's tempfile scratch space.
    mounts = {m["mountPath"]: m["name"] for m in sidecar["volumeMounts"]}
    (tmp,) = [v for v in pod["volumes"] if v["name"] == mounts["/tmp"]]
    assert "emptyDir" in tmp


def test_the_security_context_is_deploy_deployment_yaml_s(pod: dict[str, Any]) -> None:
    base = only(load(DEPLOY / "deployment.yaml"), "Deployment")["spec"]["template"]["spec"]
    (kubesched,) = base["containers"]
    assert pod["securityContext"] == base["securityContext"]
    for c in (*pod["initContainers"], *pod["containers"]):
        assert c["securityContext"] == kubesched["securityContext"], c["name"]
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    assert pod.get("automountServiceAccountToken", True) is True


def test_probes(pod: dict[str, Any]) -> None:
    """kube-scheduler's on its secure port (HTTPS, the kubelet's httpGet); the
    extender's on 127.0.0.1 and its --secure-port, from inside the container."""
    scheduler = container(pod, "kube-scheduler")
    assert scheduler["ports"] == [{"name": "https", "containerPort": 10259, "protocol": "TCP"}]
    assert flag(scheduler["command"], "--secure-port") == "10259"
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert scheduler[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
    sidecar = container(pod, "kubesched-extender")
    port = flag(sidecar["command"], "--secure-port")
    for probe, path in (
        ("startupProbe", "/readyz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ):
        command = sidecar[probe]["exec"]["command"]
        assert command[:2] == ["python", "-c"], probe
        (url,) = re.findall(r'"(https://[^"]+)"', command[2])
        assert url == f"https://127.0.0.1:{port}{path}", probe
        assert sidecar[probe]["timeoutSeconds"] > 4  # the urlopen timeout
    # kubesched extender's default port, the one the how-to's urlPrefix names.
    assert port == "10260"
