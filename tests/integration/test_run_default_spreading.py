"""`kubesched run` watches Services (and ReplicationControllers, ReplicaSets,
StatefulSets) for PodTopologySpread's system default constraints, as kube-scheduler
reads them through its listers (helper.DefaultSelector)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import AdminApi, ControlPlane
from tests.integration.kube_scheduler_proc import KubeSchedulerProcess
from tests.integration.kubesched_proc import KubeschedProcess, simulate_live, start_kubesched
from tests.integration.test_run import unique_prefix

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("scheduler", ["kubesched", "default-scheduler", "simulate"])
def test_a_service_spreads_the_pods_it_selects(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
    scheduler: str,
) -> None:
    """Two nodes: `crowded` runs six app=web pods, `busy` one large pod of another
    app. Without the Service's selector the new app=web pod has no default
    constraint, and LeastAllocated prefers `crowded` (181 against 146 over Fit and
    BalancedAllocation); with it, spreading by hostname outweighs that (308 against
    346 with PodTopologySpread's weight 2), so the pod goes to `busy`, where the
    real kube-scheduler puts it too."""
    prefix = unique_prefix("spread")
    pool = {"kubesched.test/pool": prefix}
    zone = {"topology.kubernetes.io/zone": f"{prefix}-zone"}
    crowded, busy = f"{prefix}-crowded", f"{prefix}-busy"
    for name in (crowded, busy):
        api.create_node(name, cpu="4", memory="16Gi", labels={**pool, **zone})
    web = {"app": "web"}
    for i in range(6):
        api.create_pod(namespace, f"web-{i}", labels=web, nodeName=crowded)
    api.create_pod(namespace, "other", cpu="2", memory="8Gi", labels={"app": "db"}, nodeName=busy)
    api.post(
        f"/api/v1/namespaces/{namespace}/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"selector": web, "ports": [{"port": 80}]},
        },
    )

    if scheduler == "simulate":
        # `simulate --from-cluster` reads the Service too (issue #30): the same answer,
        # with no scheduler running and nothing written.
        api.create_pod(namespace, "new-web", labels=web, nodeSelector=pool)
        simulated = simulate_live(control_plane, "--seed", "1")
        assert simulated.returncode in (0, 1), simulated.stderr
        placements = json.loads(simulated.stdout)["placements"]
        assert placements[f"{namespace}/new-web"] == busy
        assert api.node_of(namespace, "new-web") is None
        return
    if scheduler == "kubesched":
        run = start_kubesched(control_plane, tmp_path, "--no-leader-elect", name="kubesched-spread")
        kubesched.append(run)
    else:
        kube_scheduler()  # the real one, default profile, for the same answer
    api.create_pod(namespace, "new-web", scheduler_name=scheduler, labels=web, nodeSelector=pool)
    assert api.wait_for_node_name(namespace, "new-web", timeout=60) == busy
