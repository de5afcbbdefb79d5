"""PreEnqueue, PreFilter, Filter and PostFilter of DynamicResources on the real
allocator, with upstream's statuses and texts (TestPlugin cases of v1.36.3's
dynamicresources_test.go, named after them)."""

from __future__ import annotations

from typing import Any

from kubesched.api.resource import ResourceClaim
from kubesched.framework.status import Code
from tests.plugins.dynamicresources.upstream.kit import (
    BROKEN_SELECTOR,
    CLAIM,
    CLAIM_2,
    CLASS,
    NODE,
    NODE_2,
    NODE_3,
    RESOURCE,
    RESOURCE_2,
    Env,
    allocation,
    by_name,
    by_template,
    claim,
    consumer,
    device,
    device_class,
    exactly,
    first_available,
    owner,
    pod,
    pod_with_claim_name,
    pod_with_template_in_status,
    resource_slice,
    result,
    run_cycle,
    verdict,
    without_timestamp,
)

UNRESOLVABLE = "UnschedulableAndUnresolvable"
STILL = ("Unschedulable", "still not schedulable")
NO_CLAIMS = ("Unschedulable", "no new claims to deallocate")
DEALLOCATED = ("Unschedulable", "deallocation of ResourceClaim completed")
CANNOT = (UNRESOLVABLE, "cannot allocate all claims")
NOT_AVAILABLE = (UNRESOLVABLE, "resourceclaim not available on the node")

# The claim of another pod, holding the only device of the worker's slice.
OTHER = "not-my-claim"


def allocated(name: str = CLAIM, **kw: Any) -> ResourceClaim:
    return claim(name, allocation=allocation(), finalizers=[FINALIZER], **kw)


FINALIZER = "resource.kubernetes.io/delete-protection"


def other_allocated(device_name: str = "instance-1") -> ResourceClaim:
    return claim(
        OTHER,
        owned=False,
        allocation=allocation(result(device_name)),
        reserved_for=[consumer("other", "other-uid")],
    )


# --- PreEnqueue ----------------------------------------------------------------------


def test_empty_pod_skips_prefilter_and_postfilter_has_no_claims() -> None:
    env = Env()
    trace = run_cycle(env, pod())
    assert trace.pre_filter == ("Skip", "")
    # Skip: every node passes, nothing to reserve.
    assert trace.reserve == ("Success", "")
    assert verdict(env.post_filter(pod())) == NO_CLAIMS


def test_missing_claim_from_template_waits_in_pre_enqueue() -> None:
    trace = run_cycle(Env(claims=[allocated()]), pod(by_template()))
    assert trace.pre_enqueue == (
        UNRESOLVABLE,
        'pod "default/my-pod": ResourceClaim not created yet',
    )


def test_missing_named_claim_is_the_assume_cache_not_found() -> None:
    trace = run_cycle(Env(), pod_with_claim_name())
    assert trace.pre_enqueue == (
        UNRESOLVABLE,
        'could not find ResourceClaim "default/my-pod-my-resource"',
    )


def test_deleted_claim() -> None:
    deleted = claim(allocation=allocation(), deletionTimestamp="2026-01-01T00:00:00Z")
    trace = run_cycle(Env(claims=[deleted]), pod_with_template_in_status())
    assert trace.pre_enqueue == (
        UNRESOLVABLE,
        'resourceclaim "my-pod-my-resource" is being deleted',
    )


def test_wrong_claim_not_owned_by_the_pod() -> None:
    wrong = claim(allocation=allocation(), owned=False, ownerReferences=[owner(uid="1234123")])
    trace = run_cycle(Env(claims=[wrong]), pod_with_template_in_status())
    assert trace.pre_enqueue == (
        UNRESOLVABLE,
        "ResourceClaim default/my-pod-my-resource was not created for Pod default/my-pod "
        "(Pod is not owner)",
    )


def test_owner_check_reads_the_controller_reference_only() -> None:
    # metav1.IsControlledBy: the first controller reference's UID decides; a plain
    # (non-controller) reference to the pod does not make it the owner.
    plain = dict(owner(), controller=False)
    wrong = claim(allocation=allocation(), owned=False, ownerReferences=[plain])
    assert run_cycle(Env(claims=[wrong]), pod_with_template_in_status()).pre_enqueue[0] == (
        UNRESOLVABLE
    )


def test_template_entry_without_claim_is_skipped() -> None:
    # resourceclaim.Name returns nil when the controller decided no claim is needed.
    p = pod(by_template(), statuses=[{"name": RESOURCE}])
    trace = run_cycle(Env(), p)
    assert trace.pre_enqueue == ("Success", "")
    assert trace.pre_filter == ("Skip", "")


# --- PreFilter -------------------------------------------------------------------------


def test_missing_class() -> None:
    env = Env(claims=[claim()])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.pre_filter == (UNRESOLVABLE, f"request req-1: device class {CLASS} does not exist")
    assert trace.post_filter == NO_CLAIMS


def test_unknown_class_of_a_subrequest() -> None:
    prioritized = claim(CLAIM, first_available("req-1", ("subreq-1", 1)))
    prioritized.spec.devices.requests[0].first_available[0].device_class_name = "does-not-exist"
    trace = run_cycle(Env(claims=[prioritized]), pod_with_claim_name())
    assert trace.pre_filter == (
        UNRESOLVABLE,
        "request req-1/subreq-1: device class does-not-exist does not exist",
    )
    assert trace.post_filter == NO_CLAIMS


def test_claim_in_use_by_as_many_pods_as_allowed() -> None:
    full = [consumer(f"p{i}", f"u{i}") for i in range(256)]
    env = Env(claims=[claim(allocation=allocation(), reserved_for=full)])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.pre_filter == (UNRESOLVABLE, "resourceclaim in use")


def test_full_claim_already_reserved_for_the_pod_is_fine() -> None:
    full = [consumer(f"p{i}", f"u{i}") for i in range(255)] + [consumer()]
    env = Env(claims=[claim(allocation=allocation(), reserved_for=full)])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.pre_filter == ("Success", "")
    assert trace.pre_bind == ("Success", "")


def test_claim_in_the_process_of_being_allocated() -> None:
    # Reserve of another pod sharing the claim put it in flight: upstream waits for
    # PreBind to finish (outside a PodGroup cycle the pending allocation is not reused).
    pending = claim(finalizers=[FINALIZER], allocation=allocation())
    env = Env(
        claims=[claim()],
        classes=[device_class()],
        slices=[resource_slice()],
        in_flight=[pending],
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.pre_filter == (
        UNRESOLVABLE,
        "resource claim default/my-pod-my-resource is in the process of being allocated",
    )
    assert trace.post_filter == NO_CLAIMS


def test_shared_claim_in_flight_for_the_first_pod_stops_the_second() -> None:
    """A claim two pods name: the first pod's Reserve allocates it in memory; until
    its PreBind writes the allocation, the second pod's PreFilter refuses (upstream's
    pendingResult in Filter only serves pods of one PodGroup cycle, GenericWorkload
    being off by default)."""
    shared = claim("shared", owned=False)
    env = Env(claims=[shared], classes=[device_class()], slices=[resource_slice()])
    first = pod(by_name(RESOURCE, "shared"), name="first", uid="u1")
    second = pod(by_name(RESOURCE, "shared"), name="second", uid="u2")
    trace = run_cycle(env, first, prebind=False)
    assert trace.reserve == ("Success", "")
    env2_state = env.state
    env.state = type(env2_state)()
    assert verdict(env.pre_filter(second)) == (
        UNRESOLVABLE,
        "resource claim default/shared is in the process of being allocated",
    )
    # Once the first pod's PreBind wrote it, the second pod uses the allocation.
    env.state = env2_state
    assert verdict(env.pre_bind(first)) == ("Success", "")
    env.state = type(env2_state)()
    trace = run_cycle(env, second)
    assert trace.filter == {NODE: ("Success", "")}
    assert trace.pre_bind == ("Success", "")
    assert [r.uid for r in env.stored("shared").status.reserved_for] == ["u1", "u2"]


# --- Filter ----------------------------------------------------------------------------


def test_no_resources() -> None:
    env = Env(claims=[claim()], classes=[device_class()])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: CANNOT}
    assert trace.post_filter == STILL


def test_exhausted_resources_in_informer_cache() -> None:
    env = Env(
        claims=[claim(), other_allocated()], classes=[device_class()], slices=[resource_slice()]
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: CANNOT}
    assert trace.post_filter == STILL


def test_exhausted_resources_in_flight_claim() -> None:
    env = Env(
        claims=[claim()],
        in_flight=[other_allocated()],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: CANNOT}
    assert trace.post_filter == STILL
    assert env.in_flight() == [f"default/{OTHER}"]


def test_other_resources_in_flight_claim() -> None:
    env = Env(
        claims=[claim()],
        in_flight=[other_allocated("other-device")],
        classes=[device_class()],
        slices=[resource_slice()],
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: ("Success", "")}
    assert trace.in_flight_after_reserve == [f"default/{CLAIM}", f"default/{OTHER}"]
    assert trace.pre_bind == ("Success", "")
    assert env.in_flight() == [f"default/{OTHER}"]


def test_tainted_device() -> None:
    tainted = resource_slice(
        NODE, device("instance-1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    )
    env = Env(claims=[claim()], classes=[device_class()], slices=[tainted])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: CANNOT}
    assert trace.post_filter == STILL


def test_admin_access_request_gets_an_allocated_device() -> None:
    admin = claim(CLAIM, exactly(adminAccess=True))
    env = Env(
        claims=[admin, other_allocated()], classes=[device_class()], slices=[resource_slice()]
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.pre_bind == ("Success", "")
    results = env.stored().status.allocation.devices.results  # type: ignore[union-attr]
    assert [(r.device, r.admin_access) for r in results] == [("instance-1", True)]


def test_allocated_admin_access_does_not_take_the_device() -> None:
    admin_other = other_allocated()
    admin_other.status.allocation.devices.results[0].admin_access = True  # type: ignore[union-attr]
    env = Env(claims=[claim(), admin_other], classes=[device_class()], slices=[resource_slice()])
    assert run_cycle(env, pod_with_claim_name()).pre_bind == ("Success", "")


def broken_claim() -> object:
    return claim(CLAIM, exactly(selectors=[{"cel": {"expression": BROKEN_SELECTOR}}]))


def test_claim_parameters_cel_runtime_error() -> None:
    env = Env(claims=[broken_claim()], classes=[device_class()], slices=[resource_slice()])  # type: ignore[list-item]
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {
        NODE: (
            "Error",
            "claim default/my-pod-my-resource: selector #0: CEL runtime error: "
            "no such key: healthy",
        )
    }
    assert trace.post_filter is None  # the Error aborts the attempt


def test_class_parameters_cel_runtime_error() -> None:
    env = Env(
        claims=[claim()], classes=[device_class(CLASS, BROKEN_SELECTOR)], slices=[resource_slice()]
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {
        NODE: ("Error", f"class {CLASS}: selector #0: CEL runtime error: no such key: healthy")
    }


def test_cel_runtime_error_on_the_first_of_three_nodes_stops_filtering() -> None:
    healthy = device("instance-1", attributes={"healthy": {"bool": True}})
    env = Env(
        claims=[broken_claim()],  # type: ignore[list-item]
        classes=[device_class()],
        slices=[
            resource_slice(NODE),
            resource_slice(NODE_2, healthy),
            resource_slice(NODE_3, healthy),
        ],
        nodes=[NODE, NODE_2, NODE_3],
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert list(trace.filter) == [NODE]
    assert trace.filter[NODE][0] == "Error"
    # The other nodes' devices have the attribute: they would pass.
    env.state = type(env.state)()
    env.pre_filter(pod_with_claim_name())
    assert verdict(env.filter(pod_with_claim_name(), NODE_2)) == ("Success", "")


def test_filter_timeout_is_an_error_naming_the_node() -> None:
    large = claim(CLAIM, *(exactly(f"req-{i}") for i in range(1, 6)))
    big_slice = resource_slice(NODE, *(f"instance-{i}" for i in range(1, 5)))
    env = Env(
        claims=[large],
        classes=[device_class()],
        slices=[big_slice],
        args={"filterTimeout": "1ns"},
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: ("Error", f"node {NODE}: timed out trying to allocate devices")}


def test_filter_timeout_zero_means_no_timeout() -> None:
    env = Env(
        claims=[claim()],
        classes=[device_class()],
        slices=[resource_slice()],
        args={"filterTimeout": "0s"},
    )
    assert run_cycle(env, pod_with_claim_name()).pre_bind == ("Success", "")


def test_allocated_claim_with_good_topology() -> None:
    env = Env(claims=[claim(allocation=allocation())])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: ("Success", "")}
    assert trace.pre_bind == ("Success", "")
    assert [r.uid for r in env.stored().status.reserved_for] == ["1234"]


def test_allocated_claim_reserved_for_the_pod_needs_nothing() -> None:
    in_use = claim(allocation=allocation(), reserved_for=[consumer()])
    env = Env(claims=[in_use])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.pre_bind == ("Success", "")
    assert without_timestamp(env.stored()) == in_use  # nothing written


def test_allocated_claims_node_selector_across_nodes() -> None:
    env = Env(claims=[claim(allocation=allocation(node_name=NODE_2))], nodes=[NODE, NODE_2])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: NOT_AVAILABLE, NODE_2: ("Success", "")}
    assert trace.selected == NODE_2


# --- PostFilter ------------------------------------------------------------------------


def test_wrong_topology_deallocates_the_claim() -> None:
    wrong = claim(allocation=allocation(node_name="other"), finalizers=[FINALIZER])
    env = Env(claims=[wrong])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: NOT_AVAILABLE}
    assert trace.post_filter == DEALLOCATED
    stored = env.stored()
    assert stored.status.allocation is None and not stored.status.reserved_for
    # Only the status is cleared: the finalizer stays for the controller.
    assert stored.metadata.finalizers == [FINALIZER]


def test_claim_reserved_for_the_pod_alone_is_deallocated_too() -> None:
    wrong = claim(allocation=allocation(node_name="other"), reserved_for=[consumer()])
    env = Env(claims=[wrong])
    assert run_cycle(env, pod_with_claim_name()).post_filter == DEALLOCATED
    assert env.stored().status.reserved_for == []


def test_claim_reserved_for_another_pod_is_kept() -> None:
    wrong = claim(allocation=allocation(node_name="other"), reserved_for=[consumer("x", "ux")])
    env = Env(claims=[wrong])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: NOT_AVAILABLE}
    assert trace.post_filter == STILL
    assert without_timestamp(env.stored()) == wrong


def test_post_filter_picks_a_claim_it_may_deallocate() -> None:
    """Upstream ranges over the unavailable claims' set (random order) and takes the
    first reserved for nobody else; here the one reserved for another pod comes first
    and must be passed over."""
    kept = claim(
        CLAIM, allocation=allocation(node_name="other"), reserved_for=[consumer("x", "ux")]
    )
    freed = claim(CLAIM_2, allocation=allocation(node_name="other"))
    env = Env(claims=[kept, freed])
    p = pod(by_name(RESOURCE, CLAIM), by_name(RESOURCE_2, CLAIM_2))
    assert run_cycle(env, p).post_filter == DEALLOCATED
    assert without_timestamp(env.stored(CLAIM)) == kept
    assert env.stored(CLAIM_2).status.allocation is None


def test_bound_claim_with_failed_binding_is_deallocated() -> None:
    failed = claim(
        allocation=allocation(
            result(bindingConditions=["condition"], bindingFailureConditions=["failed"]),
            timestamp="2026-11-26T00:00:00Z",
        ),
        devices=[
            {
                "driver": "some-driver",
                "pool": NODE,
                "device": "instance-1",
                "conditions": [
                    {"type": "condition", "status": "False"},
                    {"type": "failed", "status": "True"},
                ],
            }
        ],
    )
    env = Env(claims=[failed], slices=[resource_slice()])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: NOT_AVAILABLE}
    assert trace.post_filter == DEALLOCATED
    assert env.stored().status.allocation is None and env.stored().status.devices == []


def test_bound_claim_with_timed_out_binding_is_deallocated() -> None:
    timed_out = claim(
        allocation=allocation(
            result(bindingConditions=["condition"], bindingFailureConditions=["failed"]),
            timestamp="2020-01-01T00:00:00Z",
        ),
        devices=[{"driver": "some-driver", "pool": NODE, "device": "instance-1"}],
    )
    env = Env(claims=[timed_out])
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.filter == {NODE: NOT_AVAILABLE}
    assert trace.post_filter == DEALLOCATED


def test_post_filter_without_state_is_not_found() -> None:
    env = Env()
    status = env.post_filter(pod_with_claim_name())
    assert (status.code, status.message()) == (Code.ERROR, "not found")


def test_post_filter_after_pre_filter_rejection_has_no_claims() -> None:
    full = [consumer(f"p{i}", f"u{i}") for i in range(256)]
    env = Env(claims=[claim(allocation=allocation(), reserved_for=full)])
    assert run_cycle(env, pod_with_claim_name()).post_filter == NO_CLAIMS
