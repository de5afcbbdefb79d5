"""Reserve, Unreserve and PreBind of DynamicResources on the real allocator and the
in-memory API server side (TestPlugin cases of v1.36.3's dynamicresources_test.go):
the in-flight allocation, the finalizer, the allocation and reservedFor writes with
their conflict retries, and binding conditions."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest

from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    AllocatedDeviceStatus,
    AllocationResult,
    ResourceClaim,
)
from kubesched.framework.state.dra import ClaimConflict
from kubesched.plugins.dynamicresources import prebind
from tests.plugins.dynamicresources.upstream.kit import (
    CLAIM,
    NODE,
    Env,
    allocation,
    claim,
    consumer,
    device,
    device_class,
    on_node,
    pod_with_claim_name,
    resource_slice,
    result,
    run_cycle,
    verdict,
    without_timestamp,
)

KEY = f"default/{CLAIM}"
FINALIZER = DELETE_PROTECTION_FINALIZER


def fresh(**kw: Any) -> Env:
    kw.setdefault("claims", [claim()])
    return Env(classes=[device_class()], slices=[resource_slice()], **kw)


def expected_allocated(**status: Any) -> ResourceClaim:
    """allocatedClaim upstream: the finalizer and instance-1 on the worker."""
    return claim(finalizers=[FINALIZER], allocation=allocation(), **status)


def test_with_resources_reserve_then_pre_bind() -> None:
    env = fresh()
    p = pod_with_claim_name()
    trace = run_cycle(env, p, prebind=False)
    assert trace.reserve == ("Success", "")
    # Reserve: the allocation lives in flight, with the finalizer PreBind will add.
    assert env.in_flight() == [KEY]
    assert without_timestamp(env.dra.in_flight[KEY]) == expected_allocated()
    # ... and its device counts as taken for the next pod.
    assert ("some-driver", NODE, "instance-1") in env.dra.allocated_state().devices
    assert verdict(env.pre_bind(p)) == ("Success", "")
    assert env.in_flight() == []
    stored = env.stored()
    assert without_timestamp(stored) == expected_allocated(reserved_for=[consumer()])
    # With DRADeviceBindingConditions on (default), PreBind stamps the allocation.
    assert stored.status.allocation is not None
    assert stored.status.allocation.allocation_timestamp is not None
    # The assume cache serves the write at once.
    assert env.dra.claim(KEY) == stored


def test_finalizer_already_set_is_not_written_again() -> None:
    env = fresh(claims=[claim(finalizers=[FINALIZER])])
    versions: list[str] = []
    put = env.writer.put

    def spy(c: ResourceClaim) -> ResourceClaim:
        versions.append(c.metadata.resource_version)
        return put(c)

    env.writer.put = spy  # type: ignore[method-assign,assignment]
    assert run_cycle(env, pod_with_claim_name()).pre_bind == ("Success", "")
    assert versions == []  # no metadata update, only the status
    assert env.stored().metadata.finalizers == [FINALIZER]


def test_finalizer_removed_before_pre_bind_comes_back() -> None:
    env = fresh(claims=[claim(finalizers=[FINALIZER])])
    p = pod_with_claim_name()
    run_cycle(env, p, prebind=False)
    env.change(finalizers=[])
    # The status update with the old version conflicts; the fresh claim lacks the
    # finalizer, so it is added before the allocation is written.
    assert verdict(env.pre_bind(p)) == ("Success", "")
    assert without_timestamp(env.stored()) == expected_allocated(reserved_for=[consumer()])


def test_finalizer_added_before_pre_bind_is_kept_once() -> None:
    env = fresh()
    p = pod_with_claim_name()
    run_cycle(env, p, prebind=False)
    env.change(finalizers=[FINALIZER])
    assert verdict(env.pre_bind(p)) == ("Success", "")
    assert without_timestamp(env.stored()) == expected_allocated(reserved_for=[consumer()])


def test_skip_bind_unreserve_drops_the_in_flight_allocation() -> None:
    env = fresh()
    p = pod_with_claim_name()
    run_cycle(env, p, prebind=False)
    env.unreserve(p)
    assert env.in_flight() == []
    assert env.dra.allocated_state().devices == set()
    assert without_timestamp(env.stored()) == claim()


def test_unreserve_after_bind_failure_removes_the_reservation() -> None:
    env = Env(claims=[claim(allocation=allocation())])
    p = pod_with_claim_name()
    assert run_cycle(env, p).pre_bind == ("Success", "")
    assert [r.uid for r in env.stored().status.reserved_for] == ["1234"]
    # The binding failed later: Unreserve patches the pod out of reservedFor.
    env.unreserve(p)
    stored = env.stored()
    assert stored.status.reserved_for == []
    assert stored.status.allocation is not None  # deallocation is the controller's


def test_unreserve_keeps_other_consumers() -> None:
    shared = claim(allocation=allocation(), reserved_for=[consumer("x", "ux")], owned=False)
    env = Env(claims=[shared])
    p = pod_with_claim_name()
    assert run_cycle(env, p).pre_bind == ("Success", "")
    env.unreserve(p)
    assert [r.uid for r in env.stored().status.reserved_for] == ["ux"]


def test_claim_deallocated_before_pre_bind() -> None:
    env = Env(claims=[claim(allocation=allocation())])
    p = pod_with_claim_name()
    run_cycle(env, p, prebind=False)
    env.change_status(allocation=None)
    assert verdict(env.pre_bind(p)) == (
        "Error",
        f"claim {KEY} got deallocated elsewhere in the meantime",
    )


def test_claim_allocated_elsewhere_before_pre_bind() -> None:
    env = fresh()
    p = pod_with_claim_name()
    run_cycle(env, p, prebind=False)
    env.change_status(allocation=msgspec.convert(allocation(result("other")), AllocationResult))
    assert verdict(env.pre_bind(p)) == (
        "Error",
        f"claim {KEY} got allocated elsewhere in the meantime",
    )
    # The in-flight allocation is dropped all the same (bindClaim's deferred cleanup).
    assert env.in_flight() == []


def test_claim_deleted_before_pre_bind() -> None:
    env = fresh(claims=[claim(finalizers=["other"])])
    p = pod_with_claim_name()
    run_cycle(env, p, prebind=False)
    env.writer.delete(KEY, "2026-01-01T00:00:00Z")
    assert verdict(env.pre_bind(p)) == ("Error", f"claim {KEY} got deleted in the meantime")


class Conflicting:
    """The in-memory writer, refusing the first `n` writes with a 409."""

    def __init__(self, env: Env, n: int) -> None:
        self.env, self.n = env, n
        self.log: list[str] = []

    def _maybe(self, what: str) -> None:
        self.log.append(what)
        if self.n > 0:
            self.n -= 1
            raise ClaimConflict(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{CLAIM}": '
                "the object has been modified; please apply your changes to the latest "
                "version and try again"
            )

    async def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        self.log.append("get")
        return await self.env.writer.get_claim(namespace, name)

    async def update_claim(self, claim: ResourceClaim) -> ResourceClaim:
        self._maybe("update")
        return await self.env.writer.update_claim(claim)

    async def update_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        self._maybe("status")
        return await self.env.writer.update_claim_status(claim)

    async def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return await self.env.writer.create_claim(claim)

    async def delete_claim(self, namespace: str, name: str) -> None:
        await self.env.writer.delete_claim(namespace, name)


def test_conflicts_are_retried_with_a_fresh_claim() -> None:
    env = fresh()
    writer = Conflicting(env, 2)
    env.dra.writer = writer
    p = pod_with_claim_name()
    assert run_cycle(env, p).pre_bind == ("Success", "")
    assert writer.log == ["update", "get", "update", "get", "update", "status"]
    assert without_timestamp(env.stored()) == expected_allocated(reserved_for=[consumer()])


def test_conflicts_give_up_after_five_attempts_with_the_last_error() -> None:
    env = Env(claims=[claim(allocation=allocation())])
    writer = Conflicting(env, 5)
    env.dra.writer = writer
    trace = run_cycle(env, pod_with_claim_name())
    assert writer.log.count("status") == 5
    assert trace.pre_bind == (
        "Error",
        f"add reservation to claim {KEY}: Operation cannot be fulfilled on "
        f'resourceclaims.resource.k8s.io "{CLAIM}": the object has been modified; please '
        "apply your changes to the latest version and try again",
    )


# --- binding conditions --------------------------------------------------------------------

CONDITIONS: dict[str, Any] = {
    "bindingConditions": ["condition"],
    "bindingFailureConditions": ["failed"],
}


def fabric_slice() -> Any:
    """fabricSlice upstream: a device that binds to the node with binding conditions."""
    return resource_slice(
        NODE, device("instance-1", bindsToNode=True, **CONDITIONS), nodeSelector=on_node()
    )


def device_status(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "driver": "some-driver",
        "pool": NODE,
        "device": "instance-1",
        "conditions": [
            {"type": t, "status": s, "reason": "r", "message": "m"} for t, s in conditions
        ],
    }


def bound_claim(*conditions: tuple[str, str], timestamp: str | None = None) -> ResourceClaim:
    stamp = timestamp or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return claim(
        finalizers=[FINALIZER],
        allocation=allocation(result(**CONDITIONS), timestamp=stamp),
        devices=[device_status(*conditions)],
    )


def test_bind_claim_with_binding_conditions_times_out() -> None:
    env = Env(
        claims=[claim()],
        classes=[device_class()],
        slices=[fabric_slice()],
        args={"bindingTimeout": "1s"},
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.reserve == ("Success", "")
    results = env.dra.claim(KEY).status.allocation.devices.results  # type: ignore[union-attr]
    assert [(r.binding_conditions, r.binding_failure_conditions) for r in results] == [
        (["condition"], ["failed"])
    ]
    # Written (allocated and reserved), then nobody reports the condition.
    assert trace.pre_bind == ("Error", "device binding timeout: context deadline exceeded")
    assert [r.uid for r in env.stored().status.reserved_for] == ["1234"]


def test_bound_claim_with_succeeded_binding_conditions() -> None:
    env = Env(claims=[bound_claim(("condition", "True"), ("failed", "False"))])
    assert run_cycle(env, pod_with_claim_name()).pre_bind == ("Success", "")
    assert [r.uid for r in env.stored().status.reserved_for] == ["1234"]


def test_bound_claim_whose_binding_fails_during_pre_bind() -> None:
    env = Env(claims=[bound_claim(("condition", "False"))])
    p = pod_with_claim_name()
    run_cycle(env, p, prebind=False)
    env.change_status(
        devices=[msgspec.convert(device_status(("failed", "True")), AllocatedDeviceStatus)]
    )
    assert verdict(env.pre_bind(p)) == (
        "Error",
        'device binding failed: claim=my-pod-my-resource, reason=r, message="m"',
    )


class Polling:
    """The in-memory writer as the API server's: PreBind polls the conditions."""

    settles_on_write = False

    def __init__(self, env: Env) -> None:
        self.env = env

    async def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return await self.env.writer.get_claim(namespace, name)

    async def update_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return await self.env.writer.update_claim(claim)

    async def update_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        return await self.env.writer.update_claim_status(claim)

    async def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return await self.env.writer.create_claim(claim)

    async def delete_claim(self, namespace: str, name: str) -> None:
        await self.env.writer.delete_claim(namespace, name)


def test_pre_bind_fails_when_the_claim_times_out_while_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """prebind-fail-with-binding-timeout: Filter still accepts the claim, then its
    bindingTimeout passes during PreBind's poll."""
    monkeypatch.setattr(prebind, "BINDING_POLL_SECONDS", 0.2)
    while time.time() % 1 > 0.5:  # the timestamp has whole seconds: keep a margin
        time.sleep(0.05)
    # Filter must run within the timeout of the claim's (wall-clock) allocation time:
    # with "1s" that left 0.5 s, which a loaded machine's setup sometimes took.
    env = Env(claims=[bound_claim()], args={"bindingTimeout": "2s"})
    env.dra.writer = Polling(env)
    p = pod_with_claim_name()
    trace = run_cycle(env, p)
    assert trace.filter == {NODE: ("Success", "")}
    assert trace.pre_bind == ("Error", "device binding timeout: claim=my-pod-my-resource")
