"""The Workload API's PodGroups on the API server (GenericWorkload; Coscheduling's
scheduler-plugins PodGroups are kube/pod_groups.py's): the informer of
scheduling.k8s.io/v1alpha2 podgroups, and the status writer of the PodGroupScheduled
condition (util.PatchPodGroupStatus upstream), in the background."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

import msgspec

from kubesched.api import kinds
from kubesched.api.scheduling import Condition, PodGroup, set_condition
from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.informer import Handlers, Informer
from kubesched.scheduler import Scheduler

log = logging.getLogger("kubesched.podgroups")

WORKLOAD_PODGROUPS_PATH = kinds.WORKLOAD_POD_GROUP.list_path


def workload_pod_group_informer(client: KubeClient, scheduler: Scheduler) -> Informer[PodGroup]:
    return Informer(
        client,
        WORKLOAD_PODGROUPS_PATH,
        PodGroup,
        Handlers(
            scheduler.on_workload_pod_group_add,
            lambda _old, new: scheduler.on_workload_pod_group_update(new),
            scheduler.on_workload_pod_group_delete,
        ),
        name="podgroups.scheduling.k8s.io",
    )


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubePodGroupConditionWriter:
    """Patches the PodGroup's status subresource with its conditions (a JSON merge
    patch of the whole list, as the list is the scheduler's to keep)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._tasks: set[asyncio.Task[None]] = set()

    def set_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        conditions = [msgspec.structs.replace(c) for c in pod_group.status.conditions]
        if not set_condition(conditions, msgspec.structs.replace(condition), _utc_now()):
            return
        task = asyncio.get_event_loop().create_task(self._patch(pod_group, conditions))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _patch(self, pod_group: PodGroup, conditions: list[Condition]) -> None:
        meta = pod_group.metadata
        path = (
            f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{meta.namespace}"
            f"/podgroups/{meta.name}/status"
        )
        body = {"status": {"conditions": [msgspec.to_builtins(c) for c in conditions]}}
        try:
            await self.client.patch(path, body, "merge-patch")
        except (TimeoutError, ApiError, OSError) as exc:
            log.error("Failed to update PodGroup status %s: %s", meta.key, exc)

    async def drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
