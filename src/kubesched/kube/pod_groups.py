"""Coscheduling's view of a real cluster: scheduler-plugins' PodGroups
(scheduling.x-k8s.io/v1alpha1, the CRD in deploy/crds/) through an informer, and
their status written back as scheduler-plugins' PodGroup controller writes it (a
merge patch of the status subresource, as its patchPodGroup's Status().Patch)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec

from kubesched.api import kinds
from kubesched.api.pod_groups import POD_GROUP_API_VERSION, PodGroup, PodGroupStatus
from kubesched.framework.handle import run_in_background
from kubesched.framework.pod_groups import PodGroupState
from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.informer import Handlers, Informer

log = logging.getLogger("kubesched.podgroups")

POD_GROUP_API = f"/apis/{POD_GROUP_API_VERSION}"


def pod_group_informer(client: KubeClient, state: PodGroupState) -> Informer[PodGroup]:
    return Informer(
        client,
        kinds.COSCHEDULING_POD_GROUP.list_path,
        PodGroup,
        Handlers(
            state.upsert_group,
            lambda _old, new: state.upsert_group(new),
            lambda group: state.delete_group(group.key),
        ),
        name="podgroups.scheduling.x-k8s.io",
    )


class KubePodGroupWriter:
    """PodGroupState's writer in `kubesched run`: each write is a task (the state's
    callers must not block); its result comes back through the informer."""

    def __init__(self, client: KubeClient, leading: Callable[[], bool] = lambda: True) -> None:
        self.client = client
        self.leading = leading

    def write_status(self, group: PodGroup, status: PodGroupStatus) -> None:
        if not self.leading():
            return
        run_in_background(self._patch(group.metadata.namespace, group.metadata.name, status))

    async def _patch(self, namespace: str, name: str, status: PodGroupStatus) -> None:
        path = f"{POD_GROUP_API}/namespaces/{namespace}/podgroups/{name}/status"
        # Every field of the status, zero values included, so that a count going
        # back to 0 is written too.
        body = {
            "status": {
                "phase": status.phase,
                "occupiedBy": status.occupied_by,
                "running": status.running,
                "succeeded": status.succeeded,
                "failed": status.failed,
            }
        }
        try:
            await self.client.patch(path, msgspec.to_builtins(body), patch_type="merge-patch")
        except ApiError as err:
            if err.status != 404:  # a group deleted meanwhile needs no status
                log.warning("podgroup %s/%s: status not written: %s", namespace, name, err)
