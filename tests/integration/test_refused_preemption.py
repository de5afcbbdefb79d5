"""A victim whose DELETE the API refuses (here a ValidatingAdmissionPolicy; in the
field also a missing RBAC verb or a PDB race) must not make the scheduler retry
preemption in a tight loop: after the failed attempt the preemptor retries after
its backoff (DefaultPreemption's retry_after_error). The test counts the DELETE
requests on pods that the apiserver served (apiserver_request_total, as admin) in
a fixed window, for the real kube-scheduler and for kubesched in the same
situation, and prints both. kube-scheduler v1.36.3 Activates the preemptor at once
and loops (about 1,100 DELETEs in 20 s here), so only kubesched is held to a bound;
it must still retry (the preemptor is not left stuck)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import AdminApi, ControlPlane
from tests.integration.kube_scheduler_proc import KubeSchedulerProcess
from tests.integration.kubesched_proc import KubeschedProcess, start_kubesched
from tests.integration.test_run import unique_prefix

pytestmark = pytest.mark.integration

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
WINDOW = 20.0  # seconds over which DELETEs are counted
ABSOLUTE_BOUND = 12  # backoff from 1 s doubling to 10 s: retries at ~1, 3, 7, 15 s
_DELETE_PODS = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")


def pod_deletes(api: AdminApi) -> int:
    """DELETE requests on pods (not subresources) the apiserver has served, any code."""
    text = api.request("GET", "/metrics").get("text", "")
    total = 0.0
    for line in text.splitlines():
        found = _DELETE_PODS.match(line)
        if found is None:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', found["labels"]))
        if (
            labels.get("verb") == "DELETE"
            and labels.get("resource") == "pods"
            and not labels.get("subresource")
        ):
            total += float(found["value"])
    return int(total)


def _refuse_deletes(api: AdminApi, name: str, label: str) -> None:
    """A policy and binding that deny DELETE of pods labelled LABEL=NAME."""
    api.post(
        f"{ADMISSION}/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["pods"],
                        }
                    ]
                },
                "validations": [{"expression": "false", "message": "this pod stays"}],
            },
        },
    )
    api.post(
        f"{ADMISSION}/validatingadmissionpolicybindings",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"objectSelector": {"matchLabels": {label: name}}},
            },
        },
    )


def _deletes_during_refused_preemption(
    api: AdminApi, namespace: str, prefix: str, scheduler: str, start: Callable[[], object]
) -> int:
    """One node full with an undeletable low-priority victim; a high-priority
    preemptor for SCHEDULER. The DELETEs on pods served during WINDOW seconds."""
    label = "kubesched.test/undeletable"
    node = f"{prefix}-{scheduler}"
    api.create_node(node, cpu="2", memory="8Gi", labels={"kubesched.test/pool": node})
    api.create_pod(
        namespace,
        f"victim-{scheduler}",
        cpu="2",
        labels={label: prefix},
        nodeName=node,
        priorityClassName=f"{prefix}-low",
    )
    start()
    api.create_pod(
        namespace,
        f"preemptor-{scheduler}",
        cpu="2",
        scheduler_name=scheduler,
        nodeSelector={"kubesched.test/pool": node},
        priorityClassName=f"{prefix}-high",
    )
    # The first refused DELETE: the preemption has been tried.
    before = pod_deletes(api)
    api.wait_for(lambda: pod_deletes(api) > before, timeout=30, message="a first DELETE")
    before = pod_deletes(api)
    time.sleep(WINDOW)
    return pod_deletes(api) - before


def test_a_refused_victim_deletion_is_retried_with_backoff_not_in_a_loop(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
) -> None:
    prefix = unique_prefix("refused")
    for name, value in ((f"{prefix}-low", 10), (f"{prefix}-high", 1000)):
        api.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    try:
        _refuse_deletes(api, prefix, "kubesched.test/undeletable")
        # The policy takes effect once the apiserver has it: a dry-run DELETE of a
        # labelled pod is refused.
        api.create_pod(
            namespace, "probe", labels={"kubesched.test/undeletable": prefix}, nodeName="nowhere"
        )
        api.wait_for(
            lambda: (
                api.status_code(
                    "DELETE", f"/api/v1/namespaces/{namespace}/pods/probe", dryRun="All"
                )
                in (403, 422)
            ),
            timeout=30,
            message="the admission policy to refuse deletes",
        )

        theirs: list[KubeSchedulerProcess] = []
        upstream = _deletes_during_refused_preemption(
            api, namespace, prefix, "default-scheduler", lambda: theirs.append(kube_scheduler())
        )
        # Only one scheduler retries at a time: kube-scheduler's preemptor goes.
        theirs[0].stop()
        api.delete_pod(namespace, "preemptor-default-scheduler")

        def start_ours() -> None:
            proc = start_kubesched(
                control_plane, tmp_path, "--no-leader-elect", name="kubesched-refused"
            )
            kubesched.append(proc)
            proc.wait_ready()

        ours = _deletes_during_refused_preemption(api, namespace, prefix, "kubesched", start_ours)
        print(f"DELETEs on pods in {WINDOW:.0f}s: kube-scheduler {upstream}, kubesched {ours}")
        assert 2 <= ours <= ABSOLUTE_BOUND
    finally:
        for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            api.request("DELETE", f"{ADMISSION}/{kind}/{prefix}", ok=(404,))
        for name in (f"{prefix}-low", f"{prefix}-high"):
            api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", ok=(404,))
