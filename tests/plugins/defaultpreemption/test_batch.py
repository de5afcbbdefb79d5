"""The batched dry run (select_victims_batch) against the node-by-node one
(select_victims_on_node, upstream's SelectVictimsOnNode): the same victims, in the
same order, the same PDB violations and the same verdicts, on random clusters with
nominated pods, PDBs, extended resources, taints, cordons and pod-count limits; and
the same candidates and node in the end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import ObjectMeta, Pod
from kubesched.api.pod_groups import POD_GROUP_LABEL, PodGroup, PodGroupSpec
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import FilterPlugin, FilterScope, NodeVerdicts
from kubesched.framework.registry import register
from kubesched.framework.state.table_copy import TableCopy
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption import evaluator as evaluator_module
from kubesched.plugins.defaultpreemption.candidates import Candidate
from kubesched.testing import make_node
from tests.plugins.defaultpreemption.test_defaultpreemption import (
    T0,
    T1,
    T2,
    Env,
    fingerprint,
    pdb,
    pod,
    setup,
)

GPU = "example.com/gpu"
FILTERS = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"]
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


@register
class Explodes(FilterPlugin):
    """Fails with an error on nodes labelled explode=true."""

    name = "test-Explodes"

    def filter(self, state: CycleState, pod: PodInfo, nodes: Any, rows: Any) -> NodeVerdicts:
        column = nodes.label("explode")
        if column is not None and (column.codes[rows] >= 0).any():
            raise RuntimeError("boom")
        return NodeVerdicts.passing(len(rows))


_node = st.tuples(
    st.sampled_from(["1", "2", "4", "4"]),  # cpu
    st.sampled_from(["2Gi", "4Gi"]),  # memory
    st.sampled_from([2, 3, 5, 110]),  # pods
    st.sampled_from([0, 0, 1, 2]),  # gpus
    st.sampled_from(["", "", "", "", "tainted", "cordoned"]),
)
_pod = st.tuples(
    st.integers(0, 7),  # node
    st.integers(0, 4),  # priority
    st.sampled_from(["0", "250m", "500m", "1", "1", "1", "2"]),  # cpu
    st.sampled_from([None, "512Mi", "1Gi", "3Gi"]),  # memory
    st.sampled_from([0, 0, 0, 1]),  # gpus
    st.sampled_from(["x", "x", "y"]),  # app label
    st.sampled_from([None, T0, T1, T2]),  # start
)
_preemptor = st.tuples(
    st.integers(2, 5),  # priority
    st.sampled_from(["500m", "1", "2", "2", "3", "5"]),
    st.sampled_from([None, "1Gi", "3Gi"]),
    st.sampled_from([0, 0, 0, 0, 1, 3]),
    st.booleans(),  # tolerates the taint
    st.sampled_from(["", "", "", "z0"]),  # nodeSelector on the zone
)
_budgets = st.lists(
    st.tuples(st.sampled_from(["x", "y"]), st.integers(0, 2), st.booleans()), max_size=2
)


def _pod_of(
    name: str, drawn: tuple[int, int, str, str | None, int, str, str | None], node: str
) -> Pod:
    _, priority, cpu, memory, gpus, app, started = drawn
    return pod(
        name,
        priority=priority,
        node=node,
        labels={"app": app},
        started=started,
        spec={"containers": [_container(cpu, memory, gpus)]},
    )


def _build(
    nodes_drawn: Sequence[tuple[str, str, int, int, str]],
    placed: Sequence[Any],
    nominated: Sequence[Any],
    budgets: Sequence[tuple[str, int, bool]],
    preemptor: tuple[int, str, str | None, int, bool, str],
    *,
    seed: int = 0,
    extra: Sequence[str] = (),
    explode: int | None = None,
) -> tuple[Env, PodInfo]:
    nodes = []
    for i, (cpu, memory, max_pods, gpus, kind) in enumerate(nodes_drawn):
        labels = {"topology.kubernetes.io/zone": f"z{i % 2}"}
        if explode == i:
            labels["explode"] = "true"
        nodes.append(
            make_node(
                f"n{i}",
                cpu=cpu,
                memory=memory,
                pods=max_pods,
                labels=labels,
                taints=[TAINT] if kind == "tainted" else [],
                unschedulable=kind == "cordoned",
                extra={GPU: gpus} if gpus else None,
            )
        )
    pods = [_pod_of(f"p{i}", d, f"n{d[0] % len(nodes)}") for i, d in enumerate(placed)]
    by_node: dict[str, list[PodInfo]] = {}
    for i, d in enumerate(nominated):
        # Now and then a pod nominated to a node it already runs on.
        name = f"p{i}" if i < len(placed) and d[6] == T2 else f"nom{i}"
        by_node.setdefault(f"n{d[0] % len(nodes)}", []).append(PodInfo(_pod_of(name, d, "")))
    pdbs = [
        pdb(f"b{i}", {"app": app}, allowed, disrupted=["p0"] if disrupted else [])
        for i, (app, allowed, disrupted) in enumerate(budgets)
    ]
    env = setup(
        nodes, pods, pdbs=pdbs, nominated=by_node, seed=seed, extra_plugins=[*FILTERS, *extra]
    )
    priority, cpu, wanted_memory, gpus, tolerates, zone = preemptor
    spec: dict[str, Any] = {"containers": [_container(cpu, wanted_memory, gpus)]}
    if tolerates:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if zone:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": zone}
    incoming = pod("incoming", priority=priority, spec=spec)
    return env, PodInfo(incoming)


def _container(cpu: str, memory: str | None, gpus: int) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": cpu}
    if memory:
        requests["memory"] = memory
    if gpus:
        requests[GPU] = gpus
    return {"name": "c", "resources": {"requests": requests, "limits": {GPU: gpus} if gpus else {}}}


def _pre_filtered(env: Env, incoming: PodInfo) -> CycleState:
    state = CycleState()
    _, status = env.fw.run_pre_filter(state, incoming, env.table)
    assert status.is_success()
    return state


def _status(status: Status) -> tuple[Code, list[str], str]:
    """A Status as compared (the error object aside, which has no equality)."""
    return status.code, status.reasons, status.plugin


def _same(a: Sequence[PodInfo], b: Sequence[PodInfo]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _one_by_one(
    env: Env, state: CycleState, incoming: PodInfo, rows: Sequence[int]
) -> list[tuple[list[PodInfo], int, Status]]:
    return [
        env.plugin.select_victims_on_node(state.clone(), incoming, env.table, row, env.handle.pdbs)
        for row in rows
    ]


def _candidates(found: Sequence[Candidate]) -> list[tuple[str, int, list[int], int]]:
    return [(c.name, c.row, [id(v) for v in c.victims], c.num_pdb_violations) for c in found]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes_drawn=st.lists(_node, min_size=1, max_size=8),
    placed=st.lists(_pod, min_size=4, max_size=24),
    nominated=st.lists(_pod, max_size=6),
    budgets=_budgets,
    preemptor=_preemptor,
    seed=st.integers(0, 7),
    rows_seed=st.randoms(use_true_random=False),
)
def test_batch_gives_the_victims_of_the_node_by_node_dry_run(
    nodes_drawn: list[tuple[str, str, int, int, str]],
    placed: list[Any],
    nominated: list[Any],
    budgets: list[tuple[str, int, bool]],
    preemptor: tuple[int, str, str | None, int, bool, str],
    seed: int,
    rows_seed: Any,
) -> None:
    env, incoming = _build(nodes_drawn, placed, nominated, budgets, preemptor, seed=seed)
    state = _pre_filtered(env, incoming)
    assert env.plugin.dry_run.amounts_only(state, incoming)
    rows = env.table.order().tolist()
    rows_seed.shuffle(rows)
    rows = rows[: rows_seed.randint(1, len(rows))]
    before = fingerprint(env.table)
    batched = env.plugin.dry_run.select_victims_batch(
        state, incoming, env.table, rows, env.handle.pdbs
    )
    assert fingerprint(env.table) == before
    expected = _one_by_one(env, state, incoming, rows)
    if batched is None:
        event("batch declined")
        return
    for (victims, violations, status), (want_victims, want_violations, want_status) in zip(
        batched, expected, strict=True
    ):
        event(f"{Code(status.code).name} with {len(victims)} victims, {violations} violations")
        assert _same(victims, want_victims)
        assert violations == want_violations
        assert _status(status) == _status(want_status)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes_drawn=st.lists(_node, min_size=1, max_size=6),
    placed=st.lists(_pod, min_size=4, max_size=16),
    budgets=_budgets,
    preemptor=_preemptor,
    changes=st.lists(st.tuples(st.booleans(), _pod), min_size=1, max_size=4),
)
def test_the_rows_kept_between_dry_runs_follow_the_pods(
    nodes_drawn: list[tuple[str, str, int, int, str]],
    placed: list[Any],
    budgets: list[tuple[str, int, bool]],
    preemptor: tuple[int, str, str | None, int, bool, str],
    changes: list[tuple[bool, Any]],
) -> None:
    """The plugin keeps each row's pods in importance order between dry runs: after
    pods come and go, it still gives what the node-by-node dry run gives."""
    env, incoming = _build(nodes_drawn, placed, [], budgets, preemptor)
    rows = env.table.order().tolist()
    state = _pre_filtered(env, incoming)
    env.plugin.dry_run.select_victims_batch(state, incoming, env.table, rows, env.handle.pdbs)
    for i, (remove, drawn) in enumerate(changes):
        row = rows[drawn[0] % len(rows)]
        on_row = list(env.table.pods_on(row))
        if remove and on_row:
            env.table.remove_pod(on_row[drawn[1] % len(on_row)], row)
        else:
            new = _pod_of(f"new{i}", drawn, env.table.names[row])
            env.table.add_pod(PodInfo(new), row)
    state = _pre_filtered(env, incoming)
    batched = env.plugin.dry_run.select_victims_batch(
        state, incoming, env.table, rows, env.handle.pdbs
    )
    if batched is None:
        event("batch declined")
        return
    expected = _one_by_one(env, state, incoming, rows)
    for (victims, violations, status), (want_victims, want_violations, want_status) in zip(
        batched, expected, strict=True
    ):
        assert _same(victims, want_victims)
        assert violations == want_violations
        assert _status(status) == _status(want_status)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes_drawn=st.lists(_node, min_size=1, max_size=8),
    placed=st.lists(_pod, min_size=4, max_size=24),
    nominated=st.lists(_pod, max_size=6),
    budgets=_budgets,
    preemptor=_preemptor,
    seed=st.integers(0, 7),
    offset=st.integers(0, 7),
    count=st.integers(1, 8),
    min_batch=st.sampled_from([1, 2, 16]),
)
def test_batched_dry_run_and_choice_match_node_by_node(
    nodes_drawn: list[tuple[str, str, int, int, str]],
    placed: list[Any],
    nominated: list[Any],
    budgets: list[tuple[str, int, bool]],
    preemptor: tuple[int, str, str | None, int, bool, str],
    seed: int,
    offset: int,
    count: int,
    min_batch: int,
) -> None:
    env, incoming = _build(nodes_drawn, placed, nominated, budgets, preemptor, seed=seed)
    state = _pre_filtered(env, incoming)
    potential = env.table.order().tolist()
    offset %= len(potential)
    plugin = env.plugin
    pdbs = env.handle.pdbs

    # Small batches: the nodes come in several, sized by the candidates found so far.
    with mock.patch.object(evaluator_module, "_MIN_BATCH", min_batch):
        batched, batched_statuses = plugin.evaluator.dry_run_preemption(
            state, incoming, potential, pdbs, offset, count
        )
    plugin.dry_run.amounts_only = lambda state, pod: False  # type: ignore[method-assign]
    general, general_statuses = plugin.evaluator.dry_run_preemption(
        state, incoming, potential, pdbs, offset, count
    )
    assert _candidates(batched) == _candidates(general)
    assert [(r, _status(s)) for r, s in batched_statuses.items()] == [
        (r, _status(s)) for r, s in general_statuses.items()
    ]
    event(f"{len(general)} candidates")
    if any(c.num_pdb_violations for c in general):
        event("a candidate violates a PDB")
    if general:
        best = plugin.evaluator.select_candidate(batched)
        assert best is not None
        assert best.name == plugin.evaluator.select_candidate(general).name  # type: ignore[union-attr]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes_drawn=st.lists(_node, min_size=1, max_size=6),
    placed=st.lists(_pod, max_size=16),
    nominated=st.lists(_pod, max_size=4),
    budgets=_budgets,
    preemptor=_preemptor,
    seed=st.integers(0, 7),
)
def test_post_filter_outcome_is_the_same_batched_or_not(
    nodes_drawn: list[tuple[str, str, int, int, str]],
    placed: list[Any],
    nominated: list[Any],
    budgets: list[tuple[str, int, bool]],
    preemptor: tuple[int, str, str | None, int, bool, str],
    seed: int,
) -> None:
    outcomes = []
    for batched in (True, False):
        env, incoming = _build(nodes_drawn, placed, nominated, budgets, preemptor, seed=seed)
        if not batched:
            env.plugin.dry_run.amounts_only = lambda state, pod: False  # type: ignore[method-assign]
        state = _pre_filtered(env, incoming)
        feasible, diagnosis = env.fw.run_filters_with_nominated_pods(
            state, incoming, env.table, env.table.order()
        )
        if len(feasible):
            return
        result, status = env.fw.run_post_filter(state, incoming, diagnosis)
        # The eviction task, not run: _preempt(node, victims, preemptor).
        evictions = []
        for coro in env.spawned:
            frame = getattr(coro, "cr_frame", None)
            if frame is not None:
                evictions.append(
                    (frame.f_locals["node"], [v.key for v in frame.f_locals["victims"]])
                )
        outcomes.append((None if result is None else result.nominated_node_name, status, evictions))
    event(f"nominated: {outcomes[0][0]!r}")
    assert outcomes[0] == outcomes[1]


# --- when the batch is not used -----------------------------------------------------------


def _simple(extra: Sequence[str] = (), explode: int | None = None) -> tuple[Env, PodInfo]:
    return _build(
        [("2", "4Gi", 110, 0, "")] * 3,
        [(n, 0, "1", None, 0, "x", T0) for n in range(3)] * 2,
        [],
        [],
        (3, "2", None, 0, False, ""),
        extra=extra,
        explode=explode,
    )


def test_only_amount_filters_and_no_prefilter_extensions_allow_the_batch() -> None:
    env, incoming = _simple()
    assert env.plugin.dry_run.amounts_only(_pre_filtered(env, incoming), incoming)
    # A pod with a host port: NodePorts looks at the pods' ports.
    with_port = PodInfo(
        pod(
            "ported",
            priority=3,
            spec={
                "containers": [
                    {
                        "name": "c",
                        "resources": {"requests": {"cpu": "2"}},
                        "ports": [{"containerPort": 80, "hostPort": 80}],
                    }
                ]
            },
        )
    )
    assert not env.plugin.dry_run.amounts_only(_pre_filtered(env, with_port), with_port)
    # A PreFilterExtensions plugin that runs for the pod.
    env, incoming = _simple(extra=["test-CountBlockers"])
    assert not env.plugin.dry_run.amounts_only(_pre_filtered(env, incoming), incoming)
    # An unknown filter.
    env, incoming = _simple(extra=["test-Explodes"])
    assert not env.plugin.dry_run.amounts_only(_pre_filtered(env, incoming), incoming)


def test_a_filter_error_leaves_the_table_and_is_reported_per_node() -> None:
    env, incoming = _simple(extra=["test-Explodes"], explode=1)
    state = _pre_filtered(env, incoming)
    rows = env.table.order().tolist()
    before = fingerprint(env.table)
    assert env.plugin.dry_run.select_victims_batch(state, incoming, env.table, rows, []) is None
    # Forced, although test-Explodes is no amounts-only filter: the error it raises
    # makes the batch decline, the table as it was, and the nodes go one by one.
    fit = env.fw.instances["NodeResourcesFit"]
    assert isinstance(fit, FilterPlugin)
    env.plugin.dry_run._amount_filters = lambda state, pod: [fit]  # type: ignore[method-assign]
    assert env.plugin.dry_run.select_victims_batch(state, incoming, env.table, rows, []) is None
    assert fingerprint(env.table) == before
    candidates, statuses = env.plugin.evaluator.dry_run_preemption(state, incoming, rows, [], 0, 3)
    assert fingerprint(env.table) == before
    assert [c.name for c in candidates] == ["n0", "n2"]
    assert statuses[rows[1]].code == Code.ERROR


@pytest.mark.parametrize("nominated_on_its_node", [False, True])
def test_pod_nominated_where_it_runs_sends_the_batch_node_by_node(
    nominated_on_its_node: bool,
) -> None:
    drawn = (0, 4, "1", None, 0, "x", T2)
    env, incoming = _build(
        [("2", "4Gi", 110, 0, "")],
        [drawn, (0, 0, "1", None, 0, "x", T0)],
        [drawn] if nominated_on_its_node else [],
        [],
        (3, "1", None, 0, False, ""),
    )
    state = _pre_filtered(env, incoming)
    found = env.plugin.dry_run.select_victims_batch(state, incoming, env.table, [0], [])
    if nominated_on_its_node:
        assert found is None
    else:
        assert found is not None
        assert [v.name for v in found[0][0]] == ["p1"]


# --- Framework.run_filters_with_nominated_pods: the nominated rows all at once ---------------

_ported = st.tuples(
    st.integers(0, 5),  # node
    st.integers(0, 4),  # priority
    st.sampled_from(["0", "500m", "1", "2"]),  # cpu
    st.sampled_from([0, 0, 80, 443]),  # host port
)


def _ported_pod(name: str, drawn: tuple[int, int, str, int], node: str) -> Pod:
    _, priority, cpu, port = drawn
    container: dict[str, Any] = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    return pod(name, priority=priority, node=node, spec={"containers": [container]})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node_cpus=st.lists(st.sampled_from(["1", "2", "4"]), min_size=1, max_size=6),
    placed=st.lists(_ported, max_size=12),
    nominated=st.lists(_ported, max_size=10),
    incoming=_ported,
)
def test_nominated_rows_at_once_match_one_by_one(
    node_cpus: list[str],
    placed: list[tuple[int, int, str, int]],
    nominated: list[tuple[int, int, str, int]],
    incoming: tuple[int, int, str, int],
) -> None:
    nodes = [make_node(f"n{i}", cpu=cpu, pods=4) for i, cpu in enumerate(node_cpus)]
    pods = [_ported_pod(f"p{i}", d, f"n{d[0] % len(nodes)}") for i, d in enumerate(placed)]
    by_node: dict[str, list[PodInfo]] = {}
    for i, d in enumerate(nominated):
        name = f"p{i}" if i < len(placed) and d[3] == 443 else f"nom{i}"
        by_node.setdefault(f"n{d[0] % len(nodes)}", []).append(PodInfo(_ported_pod(name, d, "")))
    env = setup(nodes, pods, nominated=by_node, extra_plugins=FILTERS)
    info = PodInfo(_ported_pod("incoming", incoming, ""))
    rows = env.table.order()
    before = fingerprint(env.table)
    outcomes = []
    fw = env.fw
    natural = fw._widest_scope(_pre_filtered(env, info), info)
    assert natural <= FilterScope.ROW
    # AMOUNTS (no host port asked for: NodePorts skips) adds the nominated pods as
    # amounts; ROW adds them to the rows; CLUSTER tries the rows one by one.
    event(f"scope {natural.name}")
    for widest in (natural, FilterScope.ROW, FilterScope.CLUSTER):
        fw._widest_scope = lambda state, pod, w=widest: w  # type: ignore[method-assign,misc]
        state = _pre_filtered(env, info)
        with mock.patch.object(
            TableCopy, "shift_requested", autospec=True, side_effect=TableCopy.shift_requested
        ) as shifted:
            feasible, diagnosis = fw.run_filters_with_nominated_pods(state, info, env.table, rows)
        if shifted.called:
            assert widest == FilterScope.AMOUNTS
            event("nominated pods added as amounts")
        assert fingerprint(env.table) == before
        statuses = [_status(diagnosis.status_of(int(r)) or Status()) for r in diagnosis.rows]
        outcomes.append(
            (
                feasible.tolist(),
                diagnosis.rows.tolist(),
                statuses,
                diagnosis.reason_counts(),
                diagnosis.unschedulable_plugins,
            )
        )
    event(f"{min(len(by_node), 3)}+ nodes with nominated pods")
    event("fits nowhere" if not outcomes[0][0] else "fits somewhere")
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_rows_with_pod_group_members_and_overridden_rules_ask_pod_by_pod() -> None:
    """A lower priority pod of a known PodGroup is no victim (is_preemption_allowed):
    its row is not cut by priority alone. A subclass with a rule of its own is asked
    about every pod."""
    two_cpus = {"containers": [_container("2", None, 0)]}
    member = pod("member", priority=0, node="n0", labels={POD_GROUP_LABEL: "g"}, spec=two_cpus)
    loner = pod("loner", priority=1, node="n0", spec=two_cpus)  # reprieved first if it could be
    env = setup([make_node("n0", cpu="4")], [member, loner], extra_plugins=FILTERS)
    env.handle.pod_groups.upsert_group(
        PodGroup(
            metadata=ObjectMeta(name="g", namespace="default"), spec=PodGroupSpec(min_member=1)
        )
    )
    incoming = PodInfo(pod("incoming", priority=5, spec=two_cpus))
    state = _pre_filtered(env, incoming)
    rows = env.table.order().tolist()
    batched = env.plugin.dry_run.select_victims_batch(state, incoming, env.table, rows, [])
    assert batched is not None
    assert [v.key for v in batched[0][0]] == ["default/loner"]

    class OnlyMembers(type(env.plugin)):  # type: ignore[misc]
        def is_preemption_allowed(self, victim: PodInfo, preemptor: PodInfo) -> bool:
            return victim.key == "default/member"

    env.plugin.__class__ = OnlyMembers
    assert not env.plugin.victims_are_the_lower_priority_pods()
    batched = env.plugin.dry_run.select_victims_batch(state, incoming, env.table, rows, [])
    assert batched is not None
    assert [v.key for v in batched[0][0]] == ["default/member"]
