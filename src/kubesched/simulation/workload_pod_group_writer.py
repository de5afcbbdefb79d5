"""The in-memory API server's status writes of the Workload API's PodGroups
(`simulate`): the condition lands in the lister's PodGroup, as the informer would
bring the patched object back."""

from __future__ import annotations

import msgspec

from kubesched.api.scheduling import Condition, PodGroup, PodGroupStatus, set_condition
from kubesched.framework.state.podgroup_states import WorkloadPodGroupLister


class InMemoryPodGroupConditionWriter:
    def __init__(self, lister: WorkloadPodGroupLister, now: str = "1970-01-01T00:00:00Z") -> None:
        self.lister = lister
        self.now = now
        self.writes = 0  # status patches sent, for tests and reports

    def set_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        current = self.lister.groups.get(pod_group.key)
        if current is None:
            return
        conditions = [msgspec.structs.replace(c) for c in current.status.conditions]
        if not set_condition(conditions, msgspec.structs.replace(condition), self.now):
            return
        self.writes += 1
        self.lister.groups[pod_group.key] = msgspec.structs.replace(
            current, status=PodGroupStatus(conditions=conditions)
        )
