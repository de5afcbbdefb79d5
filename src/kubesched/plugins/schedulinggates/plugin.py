"""SchedulingGates: keep pods with spec.schedulingGates out of the active queue."""

from __future__ import annotations

from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    PreEnqueuePlugin,
)
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_pod, same_pod


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name = "SchedulingGates"

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.pod.spec.scheduling_gates
        if not gates:
            return Status.success()
        # fmt.Sprintf("%v", []string{...}) prints "[a b]".
        names = " ".join(gate.name for gate in gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{names}]", plugin=self.name)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_gates_eliminated,
            )
        ]

    def is_schedulable_after_gates_eliminated(self, pod: PodInfo, old: object, new: object) -> bool:
        """Only the update of the gated pod itself can let it in."""
        modified = as_pod(new)
        if modified is None:
            return True
        return same_pod(modified, pod.pod)
