"""deploy/extender/ and the chart's extender.enabled: kube-scheduler-extended, a stock
kube-scheduler with `kubesched extender` as a sidecar. Both render (kubectl kustomize,
helm template, with the binaries hack/ builds), the apiserver accepts the result
(kubectl apply --dry-run=server), both carry exactly deploy/extender/rbac.yaml's RBAC
and the same pod; and the rendered pod, its two containers run as processes on the
test control plane with the ServiceAccount's token, schedules a pod through the
extender.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.config.file import parse_config
from tests.integration.admin_api import AdminApi, ApiError, unique_name
from tests.integration.control_plane import (
    DEPLOY_DIR,
    ControlPlane,
    ensure_binaries,
    ensure_helm,
    free_port,
)
from tests.integration.extender_deploy import (
    CONFIGMAP,
    EXTENDER_CONTAINER,
    EXTENDER_DIR,
    EXTENDER_KINDS,
    NAME,
    NAMESPACE,
    RBAC_KINDS,
    SCHEDULER_CONTAINER,
    containers,
    docs,
    flag,
    is_extenders,
    mounted_config,
    only,
    render_helm,
    render_kustomize,
    run_pod,
    token_kubeconfig,
)
from tests.integration.test_deploy_render import BASE_KINDS, dry_run, helm_template, kinds, rbac_set

pytestmark = pytest.mark.integration

COORD = "coordination.k8s.io"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
# The extender's configuration in the chart test below: NodeAffinity with an
# addedAffinity, which kube-scheduler's own profile does not have, so that its
# rejection ("scheduler-enforced") can only come from the extender.
ENFORCED_LABEL = "example.com/extender-allowed"
ADDED_AFFINITY = {
    "profiles": [
        {
            "schedulerName": NAME,
            "plugins": {
                # The chart's profile, and NodeAffinity where the extender runs it.
                "multiPoint": {"disabled": [{"name": "*"}]},
                "queueSort": {"enabled": [{"name": "PrioritySort"}]},
                "bind": {"enabled": [{"name": "DefaultBinder"}]},
                "preFilter": {"enabled": [{"name": "NodeAffinity"}]},
                "filter": {"enabled": [{"name": "NodeAffinity"}]},
            },
            "pluginConfig": [
                {
                    "name": "NodeAffinity",
                    "args": {
                        "addedAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": ENFORCED_LABEL,
                                                "operator": "In",
                                                "values": ["true"],
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
        }
    ]
}


@pytest.fixture(scope="module")
def kubectl() -> Path:
    return ensure_binaries()[0] / "kubectl"


@pytest.fixture(scope="module")
def helm() -> Path:
    return ensure_helm()


@pytest.fixture(scope="module")
def extender_rbac() -> set[tuple[Any, ...]]:
    facts = rbac_set(docs((EXTENDER_DIR / "rbac.yaml").read_text()))
    assert any(f[3:4] == ("grant",) for f in facts)
    return facts


def lease_holder(api: AdminApi, path: str) -> str | None:
    try:
        holder: str | None = api.get(path)["spec"].get("holderIdentity")
    except ApiError as exc:
        if exc.code != 404:
            raise
        return None
    return holder


def pod_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = only(objects, "Deployment", NAME)["spec"]["template"]["spec"]
    return spec


def configs(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The two files each container reads, parsed, by container."""
    pod, configmap = pod_of(objects), only(objects, "ConfigMap", CONFIGMAP)
    return {
        name: yaml.safe_load(mounted_config(pod, configmap, name))
        for name in (SCHEDULER_CONTAINER, EXTENDER_CONTAINER)
    }


def test_kustomize_directory_renders_and_the_apiserver_accepts_it(
    kubectl: Path, control_plane: ControlPlane, extender_rbac: set[tuple[Any, ...]]
) -> None:
    """`kubectl kustomize deploy/extender`, then `kubectl apply --dry-run=server`."""
    rendered = render_kustomize(kubectl)
    objects = docs(rendered)
    assert kinds(objects) == EXTENDER_KINDS
    assert rbac_set(objects) == extender_rbac
    accepted = dry_run(kubectl, control_plane, rendered)
    assert kinds(accepted) == EXTENDER_KINDS
    (deployment,) = [o for o in accepted if o["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 2
    # The apiserver kept the sidecar a native one.
    (sidecar,) = deployment["spec"]["template"]["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always"


def test_helm_extender_renders_the_kustomize_objects(
    helm: Path,
    kubectl: Path,
    control_plane: ControlPlane,
    extender_rbac: set[tuple[Any, ...]],
) -> None:
    """`helm template --set extender.enabled=true`: kubesched's objects as without it,
    and deploy/extender/'s: the same RBAC, the same configurations, the same pod but
    for the chart's labels; the apiserver accepts them all."""
    rendered = render_helm(helm)
    objects = docs(rendered)
    assert kinds(objects) == sorted([*BASE_KINDS, *EXTENDER_KINDS])
    ours = [o for o in objects if is_extenders(o)]
    assert kinds(ours) == EXTENDER_KINDS
    assert rbac_set(ours) == extender_rbac
    # kubesched's own objects are untouched by the option.
    assert [o for o in objects if not is_extenders(o)] == docs(helm_template(helm))
    assert rbac_set(objects) == rbac_set(docs((DEPLOY_DIR / "rbac.yaml").read_text())) | (
        extender_rbac
    )

    base = docs(render_kustomize(kubectl))
    assert configs(ours) == configs(base)

    def comparable(pod: dict[str, Any]) -> dict[str, Any]:
        """The pod but for its anti-affinity's selector (the chart's has the release)."""
        pod = json.loads(json.dumps(pod))
        anti = pod.pop("affinity")["podAntiAffinity"]
        (term,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        labels = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
        assert labels["app.kubernetes.io/name"] == NAME
        return pod

    assert comparable(pod_of(ours)) == comparable(pod_of(base))
    chart_deployment = only(ours, "Deployment", NAME)
    selector = chart_deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= chart_deployment["spec"]["template"]["metadata"]["labels"].items()
    # kubesched's Deployment does not select these pods, nor this one kubesched's.
    kubesched = only(objects, "Deployment", "kubesched")
    assert not kubesched["spec"]["selector"]["matchLabels"].items() <= (
        chart_deployment["spec"]["template"]["metadata"]["labels"].items()
    )

    accepted = dry_run(kubectl, control_plane, rendered)
    assert kinds(accepted) == sorted([*BASE_KINDS, *EXTENDER_KINDS])


def test_helm_extender_values_reach_the_manifests(
    helm: Path, kubectl: Path, control_plane: ControlPlane, namespace: str
) -> None:
    """The values, in a release namespace other than kube-system: the Lease and its
    Role follow the namespace, the RoleBinding to extension-apiserver-authentication-reader
    stays in kube-system."""
    rendered = render_helm(
        helm,
        "--set",
        "extender.schedulerName=team-extended",
        "--set",
        "extender.weight=9",
        "--set",
        "extender.nodeCacheCapable=false",
        "--set",
        "extender.port=10300",
        "--set",
        "extender.replicas=1",
        "--set",
        "extender.kubeScheduler.image.repository=registry.example.com/kube-scheduler",
        "--set",
        "extender.kubeScheduler.image.tag=v1.36.3-team",
        "--set",
        "image.repository=registry.example.com/kubesched",
        "--set",
        "image.tag=0.1.0-team",
        "--set",
        "extender.resources.requests.cpu=250m",
        "--set-json",
        'extender.config={"percentageOfNodesToScore": 40}',
        namespace=namespace,
    )
    objects = [o for o in docs(rendered) if is_extenders(o)]
    assert kinds(objects) == EXTENDER_KINDS
    deployment = only(objects, "Deployment", NAME)
    assert deployment["spec"]["replicas"] == 1
    pod = pod_of(objects)
    spec = containers(pod)
    sidecar, scheduler = spec[EXTENDER_CONTAINER], spec[SCHEDULER_CONTAINER]
    assert scheduler["image"] == "registry.example.com/kube-scheduler:v1.36.3-team"
    assert sidecar["image"] == "registry.example.com/kubesched:0.1.0-team"
    assert sidecar["resources"]["requests"]["cpu"] == "250m"
    assert flag(sidecar["command"], "--secure-port")[1] == "10300"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert "https://127.0.0.1:10300/" in sidecar[probe]["exec"]["command"][2], probe

    parsed = configs(objects)
    ks = parsed[SCHEDULER_CONTAINER]
    assert [p["schedulerName"] for p in ks["profiles"]] == ["team-extended"]
    (extender,) = ks["extenders"]
    assert extender["urlPrefix"] == "https://127.0.0.1:10300/scheduler"
    assert (extender["weight"], extender["nodeCacheCapable"]) == (9, False)
    election = ks["leaderElection"]
    assert (election["resourceNamespace"], election["resourceName"]) == (namespace, NAME)
    role = only(objects, "Role", f"{NAME}-leader-election")
    assert role["metadata"]["namespace"] == namespace
    assert {n for r in role["rules"] for n in r.get("resourceNames", [])} == {NAME}
    ext = parse_config(parsed[EXTENDER_CONTAINER], "chart")
    assert [p.scheduler_name for p in ext.profiles] == ["team-extended"]
    assert ext.percentage_of_nodes_to_score == 40

    reader = only(objects, "RoleBinding", f"{NAME}-authentication-reader")
    assert reader["metadata"]["namespace"] == "kube-system"
    for obj in objects:
        if obj is not reader and obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == namespace, obj["metadata"]["name"]
        for subject in obj.get("subjects", []):
            assert (subject["namespace"], subject["name"]) == (namespace, NAME)
    accepted = dry_run(kubectl, control_plane, rendered)
    assert len([o for o in accepted if is_extenders(o)]) == len(objects)


@pytest.mark.parametrize("source", ["kustomize", "helm"])
def test_the_rendered_pod_schedules_through_its_extender(
    source: str,
    kubectl: Path,
    helm: Path,
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    tmp_path: Path,
) -> None:
    """The real thing without containers: the rendered Deployment's two commands and the
    ConfigMap's two files, run as processes (extender_deploy.run_pod: only the
    credentials, the ports and the programs' paths change), as the ServiceAccount
    the rendered RBAC sets up, applied for real. kube-scheduler leads on its Lease and
    binds a pod of its schedulerName; the extender answered its filter and prioritize
    calls (its /metrics, read through its own TokenReview and SubjectAccessReview).
    With the chart, `extender.config` gives the extender a NodeAffinity addedAffinity,
    whose rejection only the extender can make: a pod meant for a node without the
    label stays pending with that reason."""
    if source == "kustomize":
        objects = docs(render_kustomize(kubectl))
    else:
        objects = [
            o
            for o in docs(
                render_helm(helm, "--set-json", f"extender.config={json.dumps(ADDED_AFFINITY)}")
            )
            if is_extenders(o)
        ]
    pod = pod_of(objects)
    configmap = only(objects, "ConfigMap", CONFIGMAP)
    account = pod["serviceAccountName"]
    lease = f"/apis/{COORD}/v1/namespaces/{NAMESPACE}/leases/{NAME}"
    with AdminApi(control_plane) as admin:
        admin.apply([o for o in objects if o["kind"] in RBAC_KINDS])
        admin.request("DELETE", lease, ok=(404,))
        token = admin.create_token(NAMESPACE, account, expiration_seconds=3600)
    kubeconfig = token_kubeconfig(control_plane, token, tmp_path / "sa-kubeconfig")

    group = unique_name("ext-deploy")
    mine = {"example.com/ext-deploy": group}
    # Two nodes the chart's extender allows (kube-scheduler asks for scores only when
    # more than one node is left), one it does not.
    allowed = [unique_name("allowed"), unique_name("allowed")]
    other = unique_name("other")
    for name in allowed:
        api.create_node(name, labels={**mine, ENFORCED_LABEL: "true"})
    api.create_node(other, labels=mine)

    # The manifests' fixed ports, kube-scheduler's 10259 and the extender's 10260, may be
    # in use on this machine (another scheduler, a test running beside this one): always
    # free ports instead, rewritten alike in the commands, the configuration files (the
    # urlPrefix) and the probes (run_pod).
    ports = {10259: free_port(), 10260: free_port()}
    with run_pod(control_plane, pod, configmap, kubeconfig, ports, tmp_path) as procs:
        api.wait_for(lambda: lease_holder(api, lease), timeout=20, message="the Lease's holder")
        assert procs.scheduler_probe("livenessProbe")
        assert procs.extender_probe("livenessProbe")
        assert procs.extender_probe("readinessProbe")
        api.create_pod(namespace, "p", cpu="100m", scheduler_name=NAME, nodeSelector=mine)
        node = api.wait_for_node_name(namespace, "p", timeout=20)
        if source == "helm":
            assert node in allowed
            api.create_pod(
                namespace,
                "refused",
                cpu="100m",
                scheduler_name=NAME,
                nodeSelector={**mine, "kubernetes.io/hostname": other},
            )
            message = api.wait_for(
                lambda: next(
                    (
                        m
                        for _, r, m in api.events_for(namespace, "refused")
                        if r == "FailedScheduling"
                    ),
                    None,
                ),
                timeout=20,
            )
            assert f"1 {ENFORCED}" in str(message), message
            assert api.node_of(namespace, "refused") is None
        metrics = procs.extender.metrics()
        assert metrics.status_code == 200, procs.logs()
        for verb in ("filter", "prioritize"):
            sample = (
                f'kubesched_extender_request_duration_seconds_count{{code="200",verb="{verb}"}}'
            )
            assert sample in metrics.text, verb
        # Nothing the RBAC refused, in either log.
        for log in (procs.extender.log(), procs.scheduler_log_text()):
            assert "forbidden" not in log.lower(), procs.logs()
    assert procs.extender.proc.returncode == 0, procs.logs()
