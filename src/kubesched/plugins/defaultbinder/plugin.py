"""DefaultBinder: binds the pod through the cluster (the pods/binding subresource)."""

from __future__ import annotations

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import BindPlugin
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        cluster = self.handle.cluster
        if cluster is None:
            return Status.as_error("no cluster to bind to", self.name)
        try:
            await cluster.bind(pod.pod, node_name)
        except Exception as exc:
            return Status.as_error(exc, self.name)
        return Status()
