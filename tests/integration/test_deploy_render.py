"""deploy/ as a kustomize base and deploy/helm/kubesched as a Helm chart: both render
(kubectl kustomize, helm template, with the binaries hack/ builds), the apiserver accepts
the result (kubectl apply --dry-run=server), and both carry exactly deploy/rbac.yaml's RBAC.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.config.file import parse_config
from tests.integration.control_plane import DEPLOY_DIR, ControlPlane, ensure_binaries, ensure_helm

pytestmark = pytest.mark.integration

CHART = DEPLOY_DIR / "helm" / "kubesched"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")

# A stand-in for the Prometheus Operator's ServiceMonitor CRD (not part of this control
# plane): any spec, so that the dry run checks everything else about the object.
SERVICE_MONITOR_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "names": {
            "kind": "ServiceMonitor",
            "plural": "servicemonitors",
            "singular": "servicemonitor",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def run(*command: str | Path, stdin: str | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command], input=stdin, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return done.stdout


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def kubectl() -> Path:
    return ensure_binaries()[0] / "kubectl"


@pytest.fixture(scope="module")
def helm() -> Path:
    return ensure_helm()


def kustomize(kubectl: Path, directory: Path) -> str:
    return run(kubectl, "kustomize", directory)


def overlay_with_servicemonitor(tmp_path: Path) -> Path:
    """An overlay of the base with the optional component, as a user would write it."""
    base = os.path.relpath(DEPLOY_DIR, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [base],
                "components": [f"{base}/components/servicemonitor"],
            }
        )
    )
    return tmp_path


def helm_template(helm: Path, *args: str) -> str:
    return run(helm, "template", "kubesched", CHART, "--namespace", "kube-system", *args)


def dry_run(kubectl: Path, control_plane: ControlPlane, manifests: str) -> list[dict[str, Any]]:
    out = run(
        kubectl,
        "--kubeconfig",
        control_plane.kubeconfig,
        "apply",
        "--dry-run=server",
        "-o",
        "yaml",
        "-f",
        "-",
        stdin=manifests,
    )
    result = yaml.safe_load(out)
    return list(result["items"]) if result.get("kind") == "List" else [result]


def rbac_set(objects: Iterable[dict[str, Any]]) -> set[tuple[Any, ...]]:
    """RBAC as a set of facts: each object's identity, each rule's (group, resource, verb,
    resourceName) grant, each binding's roleRef and subjects. Labels do not count."""
    facts: set[tuple[Any, ...]] = set()
    for obj in objects:
        kind = obj["kind"]
        if kind not in RBAC_KINDS:
            continue
        meta = obj["metadata"]
        ident = (kind, meta.get("namespace", ""), meta["name"])
        facts.add(ident)
        for rule in obj.get("rules", []):
            for group in rule.get("apiGroups", []):
                for resource in rule.get("resources", []):
                    for verb in rule["verbs"]:
                        for name in rule.get("resourceNames") or [""]:
                            facts.add((*ident, "grant", group, resource, verb, name))
        if "roleRef" in obj:
            ref = obj["roleRef"]
            facts.add((*ident, "roleRef", ref["apiGroup"], ref["kind"], ref["name"]))
        for subject in obj.get("subjects", []):
            facts.add(
                (*ident, "subject", subject["kind"], subject.get("namespace", ""), subject["name"])
            )
    return facts


def kinds(objects: Iterable[dict[str, Any]]) -> list[str]:
    return sorted(o["kind"] for o in objects)


BASE_KINDS = sorted([*RBAC_KINDS, "ConfigMap", "Deployment", "Service"])


@pytest.fixture(scope="module")
def deployed_rbac() -> set[tuple[Any, ...]]:
    facts = rbac_set(docs((DEPLOY_DIR / "rbac.yaml").read_text()))
    assert any(f[3:4] == ("grant",) for f in facts)
    return facts


@pytest.fixture(scope="module")
def service_monitor_crd(kubectl: Path, control_plane: ControlPlane) -> None:
    """The stand-in CRD, created for real (a dry run needs the type to exist)."""
    kubeconfig = control_plane.kubeconfig
    run(
        kubectl,
        "--kubeconfig",
        kubeconfig,
        "apply",
        "-f",
        "-",
        stdin=yaml.safe_dump(SERVICE_MONITOR_CRD),
    )
    run(
        kubectl,
        "--kubeconfig",
        kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        f"crd/{SERVICE_MONITOR_CRD['metadata']['name']}",
    )


def test_kustomize_base_renders_and_the_apiserver_accepts_it(
    kubectl: Path, control_plane: ControlPlane, deployed_rbac: set[tuple[Any, ...]]
) -> None:
    rendered = kustomize(kubectl, DEPLOY_DIR)
    assert kinds(docs(rendered)) == BASE_KINDS
    assert rbac_set(docs(rendered)) == deployed_rbac
    accepted = dry_run(kubectl, control_plane, rendered)
    assert kinds(accepted) == BASE_KINDS
    (deployment,) = [o for o in accepted if o["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 2


def test_helm_chart_renders_and_the_apiserver_accepts_it(
    helm: Path, kubectl: Path, control_plane: ControlPlane, deployed_rbac: set[tuple[Any, ...]]
) -> None:
    rendered = helm_template(helm)
    objects = docs(rendered)
    assert kinds(objects) == BASE_KINDS
    assert rbac_set(objects) == deployed_rbac
    accepted = dry_run(kubectl, control_plane, rendered)
    assert kinds(accepted) == BASE_KINDS
    # The chart's configuration is one kubesched loads, electing on the Lease the Role allows.
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap"]
    config = parse_config(yaml.safe_load(configmap["data"]["config.yaml"]), "chart")
    assert [p.scheduler_name for p in config.profiles] == ["kubesched"]
    (role,) = [o for o in objects if o["kind"] == "Role"]
    leases = {n for r in role["rules"] for n in r.get("resourceNames", [])}
    assert (config.lease_namespace, config.lease_name) == ("kube-system", *leases)


@pytest.mark.usefixtures("service_monitor_crd")
def test_helm_values_reach_the_manifests(
    helm: Path, kubectl: Path, control_plane: ControlPlane, deployed_rbac: set[tuple[Any, ...]]
) -> None:
    rendered = helm_template(
        helm,
        "--set",
        "schedulerName=team-scheduler",
        "--set",
        "replicas=3",
        "--set",
        "image.repository=registry.example.com/kubesched",
        "--set",
        "image.tag=0.1.0-team",
        "--set",
        "extraPluginPackages[0]=kubesched-team-plugins==0.1.0",
        "--set",
        "resources.requests.cpu=250m",
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--set-json",
        'config={"percentageOfNodesToScore": 50}',
    )
    objects = docs(rendered)
    assert kinds(objects) == sorted([*BASE_KINDS, "ServiceMonitor"])
    assert rbac_set(objects) == deployed_rbac
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 3
    (container,) = pod["containers"]
    assert container["image"] == "registry.example.com/kubesched:0.1.0-team"
    assert container["resources"]["requests"]["cpu"] == "250m"
    (init,) = pod["initContainers"]
    assert init["command"][-1] == "kubesched-team-plugins==0.1.0"
    assert {"name": "PYTHONPATH", "value": "/opt/kubesched-plugins"} in container["env"]
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap"]
    config = parse_config(yaml.safe_load(configmap["data"]["config.yaml"]), "chart")
    assert [p.scheduler_name for p in config.profiles] == ["team-scheduler"]
    assert config.percentage_of_nodes_to_score == 50
    accepted = dry_run(kubectl, control_plane, rendered)
    assert kinds(accepted) == sorted([*BASE_KINDS, "ServiceMonitor"])


@pytest.mark.usefixtures("service_monitor_crd")
def test_kustomize_servicemonitor_component(
    kubectl: Path, control_plane: ControlPlane, tmp_path: Path
) -> None:
    rendered = kustomize(kubectl, overlay_with_servicemonitor(tmp_path))
    objects = docs(rendered)
    assert kinds(objects) == sorted([*BASE_KINDS, "ServiceMonitor"])
    (monitor,) = [o for o in objects if o["kind"] == "ServiceMonitor"]
    (service,) = [o for o in objects if o["kind"] == "Service"]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert [(e["port"], e["scheme"]) for e in monitor["spec"]["endpoints"]] == [
        (p["name"], "https") for p in service["spec"]["ports"]
    ]
    assert kinds(dry_run(kubectl, control_plane, rendered)) == kinds(objects)


def test_helm_deployment_matches_the_kustomize_one(kubectl: Path, helm: Path) -> None:
    """The chart's Deployment is a template of its own: with default values its container
    must be deploy/deployment.yaml's (ports, probes, security, mounts, resources, command
    but the port flag the chart always passes), so that a change there is not missed here."""

    def container(text: str) -> dict[str, Any]:
        (deployment,) = [o for o in docs(text) if o["kind"] == "Deployment"]
        (only,) = deployment["spec"]["template"]["spec"]["containers"]
        command = list(only.pop("command"))
        if "--secure-port" in command:
            i = command.index("--secure-port")
            assert command[i + 1] == "10259"
            del command[i : i + 2]
        only["command"] = command
        only.pop("image")
        return only

    assert container(helm_template(helm)) == container(kustomize(kubectl, DEPLOY_DIR))
