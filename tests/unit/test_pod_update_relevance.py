"""Which updates of a pending pod reach the queue (isPodUpdated upstream): status
writes do not, except the claim names the resourceclaim controller records."""

from __future__ import annotations

import msgspec

from kubesched.api.objects import (
    Pod,
    PodCondition,
    PodExtendedResourceClaimStatus,
    PodResourceClaimStatus,
)
from kubesched.scheduler.eventhandlers import _scheduling_relevant_change
from kubesched.testing import make_pod


def _with_status(pod: Pod, **changes: object) -> Pod:
    return msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, **changes))


def test_a_condition_or_phase_write_is_not_relevant() -> None:
    pod = make_pod("p", cpu="1")
    written = _with_status(
        pod, phase="Pending", conditions=[PodCondition(type="PodScheduled", status="False")]
    )
    assert not _scheduling_relevant_change(pod, written)


def test_the_generated_claim_names_are_relevant() -> None:
    pod = make_pod("p", cpu="1")
    claimed = _with_status(
        pod,
        resource_claim_statuses=[PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu-x")],
    )
    assert _scheduling_relevant_change(pod, claimed)
    extended = _with_status(
        pod,
        extended_resource_claim_status=PodExtendedResourceClaimStatus(
            resource_claim_name="p-extended-resources-x"
        ),
    )
    assert _scheduling_relevant_change(pod, extended)
