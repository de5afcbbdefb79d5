"""deploy/: the manifests parse, have the expected objects, least privilege, and a
locked-down pod. (tests/integration/test_rbac.py checks RBAC on a real apiserver.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api import kinds

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SA = {"kind": "ServiceAccount", "name": "kubesched", "namespace": "kube-system"}

EXPECTED_KINDS = {
    "rbac.yaml": ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
    "config.yaml": ["ConfigMap"],
    "deployment.yaml": ["Deployment"],
    "service.yaml": ["Service"],
}
# Not a Kubernetes object: the kustomize base's index of the files above.
KUSTOMIZATION = "kustomization.yaml"
IMAGE = "ghcr.io/kubesched/kubesched:0.1.0"

# resource (with group) -> the only verbs the ClusterRole may grant on it.
READ = {"list", "watch"}
ALLOWED_CLUSTER_VERBS: dict[tuple[str, str], set[str]] = {
    **{
        ("", r): READ
        for r in (
            "nodes",
            "namespaces",
            "replicationcontrollers",
            "services",
        )
    },
    ("", "pods"): READ | {"delete"},
    ("", "persistentvolumes"): READ | {"patch"},
    ("", "persistentvolumeclaims"): READ | {"patch"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch", "update"},
    ("", "events"): {"create", "patch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    ("apps", "replicasets"): READ,
    ("apps", "statefulsets"): READ,
    ("policy", "poddisruptionbudgets"): READ,
    # Coscheduling: scheduler-plugins' PodGroups read, their status patched.
    ("scheduling.x-k8s.io", "podgroups"): READ,
    ("scheduling.x-k8s.io", "podgroups/status"): {"patch"},
    # GenericWorkload (alpha, off by default): PodGroups read, their status patched.
    ("scheduling.k8s.io", "podgroups"): READ,
    ("scheduling.k8s.io", "podgroups/status"): {"patch"},
    **{
        ("storage.k8s.io", r): READ
        for r in (
            "storageclasses",
            "csinodes",
            "csidrivers",
            "csistoragecapacities",
            "volumeattachments",
        )
    },
    ("resource.k8s.io", "resourceclaims"): READ | {"get", "patch", "create", "delete"},
    ("resource.k8s.io", "resourceclaims/status"): {"patch"},
    ("resource.k8s.io", "resourceclaims/binding"): {"patch"},
    ("resource.k8s.io", "resourceslices"): READ,
    ("resource.k8s.io", "deviceclasses"): READ,
    # The secure port's delegated authentication and authorization.
    ("authentication.k8s.io", "tokenreviews"): {"create"},
    ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
}


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d is not None]


def only(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind]
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
    return load("rbac.yaml")


@pytest.fixture(scope="module")
def deployment() -> dict[str, Any]:
    return only(load("deployment.yaml"), "Deployment")


@pytest.fixture(scope="module")
def scheduler_config() -> dict[str, Any]:
    cm = only(load("config.yaml"), "ConfigMap")
    config: dict[str, Any] = yaml.safe_load(cm["data"]["config.yaml"])
    return config


def test_every_yaml_file_parses_with_expected_kinds() -> None:
    files = sorted(p.name for p in DEPLOY.glob("*.yaml") if p.name != KUSTOMIZATION)
    assert files == sorted(EXPECTED_KINDS)
    for name, expected in EXPECTED_KINDS.items():
        docs = load(name)
        assert [d["kind"] for d in docs] == expected, name
        for d in docs:
            assert d["apiVersion"] and d["metadata"]["name"], (name, d)
            assert d["metadata"]["labels"]["app.kubernetes.io/name"] == "kubesched"


def test_namespaced_objects_live_in_kube_system() -> None:
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding"}
    for name in EXPECTED_KINDS:
        for d in load(name):
            if d["kind"] in cluster_scoped:
                assert "namespace" not in d["metadata"]
            else:
                assert d["metadata"]["namespace"] == "kube-system", (name, d["kind"])


def test_service_account(rbac: list[dict[str, Any]]) -> None:
    sa = only(rbac, "ServiceAccount")
    assert (sa["metadata"]["name"], sa["metadata"]["namespace"]) == ("kubesched", "kube-system")


def test_cluster_role_has_no_wildcards(rbac: list[dict[str, Any]]) -> None:
    for role in (only(rbac, "ClusterRole"), only(rbac, "Role")):
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert not any("*" in v for v in rule.get(key, [])), (role["kind"], rule)


def test_cluster_role_is_least_privilege(rbac: list[dict[str, Any]]) -> None:
    granted = grants(only(rbac, "ClusterRole")["rules"])
    assert granted == ALLOWED_CLUSTER_VERBS
    for rule in only(rbac, "ClusterRole")["rules"]:
        assert "nonResourceURLs" not in rule
        assert not {"escalate", "bind", "impersonate", "deletecollection"} & set(rule["verbs"])


def test_cluster_role_lets_run_watch_every_kind_it_reads(rbac: list[dict[str, Any]]) -> None:
    """Each kind `run` watches (api/kinds.py: kube-scheduler's, and Coscheduling's)."""
    granted = grants(only(rbac, "ClusterRole")["rules"])
    for kind in (*kinds.SCHEDULER_KINDS, *kinds.PLUGIN_KINDS):
        assert {"list", "watch"} <= granted.get((kind.group, kind.resource), set()), kind


def test_readme_names_every_resource_the_cluster_role_grants(
    rbac: list[dict[str, Any]],
) -> None:
    text = (DEPLOY / "README.md").read_text()
    table = text[text.index("| resource | verbs | why |") : text.index("It cannot update")]
    for _group, resource in grants(only(rbac, "ClusterRole")["rules"]):
        assert resource in table, resource


def test_cluster_role_binding(rbac: list[dict[str, Any]]) -> None:
    crb = only(rbac, "ClusterRoleBinding")
    assert crb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": only(rbac, "ClusterRole")["metadata"]["name"],
    }
    assert crb["subjects"] == [SA]


def test_leader_election_role(rbac: list[dict[str, Any]], scheduler_config: dict[str, Any]) -> None:
    role = only(rbac, "Role")
    lease_name = scheduler_config["leaderElection"]["resourceName"]
    assert role["metadata"]["namespace"] == scheduler_config["leaderElection"]["resourceNamespace"]
    by_verbs = {
        tuple(sorted(r["verbs"])): (r["apiGroups"], r["resources"], r.get("resourceNames"))
        for r in role["rules"]
    }
    assert by_verbs == {
        ("create",): (["coordination.k8s.io"], ["leases"], None),
        ("get", "update"): (["coordination.k8s.io"], ["leases"], [lease_name]),
    }
    binding = only(rbac, "RoleBinding")
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [SA]


def test_scheduler_configuration(scheduler_config: dict[str, Any]) -> None:
    assert scheduler_config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert scheduler_config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in scheduler_config["profiles"]] == ["kubesched"]
    assert scheduler_config["leaderElection"] == {
        "leaderElect": True,
        "resourceLock": "leases",
        "resourceNamespace": "kube-system",
        "resourceName": "kubesched",
    }


def test_kubesched_loads_the_configuration(scheduler_config: dict[str, Any]) -> None:
    from kubesched.config.file import parse_config

    cfg = parse_config(scheduler_config, "deploy/config.yaml")
    assert [p.scheduler_name for p in cfg.profiles] == ["kubesched"]
    assert cfg.leader_elect is True
    assert (cfg.lease_namespace, cfg.lease_name) == ("kube-system", "kubesched")
    assert cfg.kubeconfig == ""  # in-cluster credentials


def test_deployment_shape(deployment: dict[str, Any]) -> None:
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "kubesched"
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod.get("automountServiceAccountToken", True) is True
    assert pod.get("schedulerName", "default-scheduler") == "default-scheduler"
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["kubesched", "run", "--config", "/etc/kubesched/config.yaml"]
    assert container["resources"]["requests"].keys() >= {"cpu", "memory"}


def test_deployment_security_context(deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    psc, csc = pod["securityContext"], container["securityContext"]
    assert psc["runAsNonRoot"] is True
    assert psc["runAsUser"] == 65532
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert csc["runAsNonRoot"] is True
    assert csc["runAsUser"] == 65532
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["allowPrivilegeEscalation"] is False
    assert csc.get("privileged", False) is False
    assert csc["capabilities"] == {"drop": ["ALL"]}
    assert csc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")


def test_deployment_probes_use_the_secure_port(deployment: dict[str, Any]) -> None:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [{"name": "https", "containerPort": 10259, "protocol": "TCP"}]
    # No plain-HTTP port: --health-port is not given.
    assert "--health-port" not in container["command"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get == {"path": path, "port": "https", "scheme": "HTTPS"}, probe


def test_deployment_mounts_the_config(deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    mount = mounts["/etc/kubesched"]
    assert mount["readOnly"] is True
    cm = only(load("config.yaml"), "ConfigMap")
    assert volumes[mount["name"]]["configMap"]["name"] == cm["metadata"]["name"]
    # --config points at a key of that ConfigMap.
    config_path = Path(container["command"][container["command"].index("--config") + 1])
    assert config_path.parent == Path(mount["mountPath"])
    assert config_path.name in cm["data"]
    # A read-only root filesystem needs a writable /tmp.
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]


def test_dockerfile() -> None:
    lines = [
        line.strip()
        for line in (DEPLOY / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert lines[0] == "ARG PYTHON_IMAGE=python:3.11-slim"
    assert lines[-1] == 'CMD ["--help"]'
    assert "USER 65532:65532" in lines
    assert lines.index("USER 65532:65532") > max(
        i for i, x in enumerate(lines) if x.startswith("RUN")
    )
    assert 'ENTRYPOINT ["kubesched"]' in lines
    assert 'ARG PLUGIN_PACKAGES=""' in lines
    assert "ENV PATH=/opt/kubesched/bin:${PATH} \\" in lines


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((DEPLOY / KUSTOMIZATION).read_text())
    assert kustomization["kind"] == "Kustomization"
    assert sorted(kustomization["resources"]) == sorted(EXPECTED_KINDS)


def test_metrics_service_selects_the_scheduler_pods(deployment: dict[str, Any]) -> None:
    (service,) = load("service.yaml")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"] for p in container["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports
