"""DefaultPreemption's victims on one node against kube-scheduler v1.36: the lowest
priorities go, the reprieve order (priority, start time, PDB violations first), and
which pods a PDB guards.
"""

from __future__ import annotations

from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption.candidates import (
    filter_pods_with_pdb_violation,
    start_time,
)
from kubesched.testing import make_node, make_pod
from tests.plugins.defaultpreemption.test_defaultpreemption import (
    T0,
    T2,
    _close_unrun_evictions,  # noqa: F401 (autouse: closes the evictions left unrun)
    pdb,
    pod,
    setup,
    victims_on,
)

# --- victims and the reprieve order --------------------------------------------------------


def test_lowest_priority_pods_are_the_victims() -> None:
    env = setup(
        [make_node("n", cpu="4")],
        [
            pod("p2", priority=2, node="n"),
            pod("p0", priority=0, node="n"),
            pod("p1", priority=1, node="n"),
            pod("top", priority=50, node="n"),  # higher than the preemptor: never a victim
        ],
    )
    names, violations, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert status.is_success() and violations == 0
    # Reprieved from the most important: p2 stays, p1 and p0 go (most important first).
    assert names == ["p1", "p0"]


def test_equal_priority_the_older_pod_is_reprieved_first() -> None:
    env = setup(
        [make_node("n", cpu="2")],
        [
            pod("young", node="n", started=T2),
            pod("old", node="n", started=T0),
            pod("unstarted", node="n"),  # not started: counts as started now
        ],
    )
    names, _, status = victims_on(env, pod("x", cpu="1", priority=10), "n")
    assert status.is_success()
    assert names == ["young", "unstarted"]  # "old" keeps its place
    assert (
        start_time(pod("u")) > start_time(pod("t", started=T2)) > start_time(pod("t", started=T0))
    )


def test_pdb_violating_victims_are_reprieved_first() -> None:
    guarded = {"app": "db"}
    env = setup(
        [make_node("n", cpu="3")],
        [
            pod("db-low", priority=0, node="n", labels=guarded),
            pod("web-high", priority=5, node="n"),
            pod("db-mid", priority=3, node="n", labels=guarded),
        ],
        pdbs=[pdb("db", guarded, allowed=1)],
    )
    # The budget allows one db pod to go: db-mid spends it, db-low would violate.
    # Violating pods are reprieved first (db-low keeps its place although it is the
    # least important); then db-mid, then web-high (no room left).
    names, violations, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert status.is_success()
    assert names == ["web-high", "db-mid"]  # sorted by importance again
    assert violations == 0


def test_violations_are_counted_when_the_violating_pod_must_go() -> None:
    guarded = {"app": "db"}
    env = setup(
        [make_node("n", cpu="2")],
        [pod("db", priority=0, node="n", labels=guarded), pod("web", priority=1, node="n")],
        pdbs=[pdb("db", guarded, allowed=0)],
    )
    names, violations, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert status.is_success()
    assert names == ["web", "db"] and violations == 1


def test_no_lower_priority_pods_means_no_victims() -> None:
    env = setup([make_node("n", cpu="2")], [pod("a", cpu="2", priority=10, node="n")])
    names, _, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert names == []
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ["No preemption victims found for incoming pod"]


def test_pod_still_not_fitting_gives_the_filter_verdict() -> None:
    env = setup(
        [make_node("n", cpu="4")],
        [pod("low", cpu="1", node="n"), pod("high", cpu="3", priority=20, node="n")],
    )
    names, _, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert names == [] and status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["Insufficient cpu"] and status.plugin == "NodeResourcesFit"


def test_pdb_matching_rules() -> None:
    a = PodInfo(pod("a", labels={"app": "x"}))
    b = PodInfo(pod("b", labels={"app": "x"}))
    other_ns = PodInfo(make_pod("c", namespace="other", labels={"app": "x"}))
    bare = PodInfo(pod("d"))
    pdbs = [pdb("one", {"app": "x"}, allowed=1)]
    violating, ok = filter_pods_with_pdb_violation([a, b, other_ns, bare], pdbs)
    assert [p.name for p in violating] == ["b"] and [p.name for p in ok] == ["a", "c", "d"]
    # Already disrupted pods spend nothing; empty and missing selectors match nothing.
    disrupted = [pdb("one", {"app": "x"}, allowed=0, disrupted=["a"])]
    assert [p.name for p in filter_pods_with_pdb_violation([a, b], disrupted)[0]] == ["b"]
    assert filter_pods_with_pdb_violation([a, b], [pdb("e", {}, allowed=0)])[0] == []
    assert filter_pods_with_pdb_violation([a, b], [pdb("n", None, allowed=0)])[0] == []
