"""DefaultPreemption's dry runs leave the node table exactly as it was (a property test
on random clusters with nominated pods, host ports, PDBs and a PreFilter plugin with
per-cycle state), and a victim set is minimal: with any one victim back the pod does
not fit.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node
from tests.plugins.defaultpreemption.test_defaultpreemption import (
    COUNT_KEY,
    T0,
    T1,
    T2,
    _Blockers,
    _close_unrun_evictions,  # noqa: F401 (autouse: closes the evictions left unrun)
    fingerprint,
    pdb,
    pod,
    setup,
)

# --- the table is left exactly as it was --------------------------------------------------------


_pods = st.lists(
    st.tuples(
        st.integers(0, 3),  # node
        st.integers(0, 4),  # priority
        st.sampled_from(["0", "500m", "1", "2"]),  # cpu
        st.sampled_from([0, 0, 80, 443]),  # host port
        st.booleans(),  # block=true
        st.sampled_from([None, T0, T1, T2]),
    ),
    max_size=14,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node_cpus=st.lists(st.sampled_from(["1", "2", "4"]), min_size=1, max_size=4),
    placed=_pods,
    nominated=_pods,
    preemptor=st.tuples(
        st.integers(1, 5), st.sampled_from(["500m", "1", "2", "3"]), st.sampled_from([0, 80])
    ),
    wants_alone=st.booleans(),
    budget=st.integers(0, 2),
    seed=st.integers(0, 5),
)
def test_dry_runs_leave_the_table_exactly_as_it_was(
    node_cpus: list[str],
    placed: list[tuple[int, int, str, int, bool, str | None]],
    nominated: list[tuple[int, int, str, int, bool, str | None]],
    preemptor: tuple[int, str, int],
    wants_alone: bool,
    budget: int,
    seed: int,
) -> None:
    nodes = [make_node(f"n{i}", cpu=cpu, pods=6) for i, cpu in enumerate(node_cpus)]

    def build(
        prefix: str, i: int, spec: tuple[int, int, str, int, bool, str | None], bound: bool
    ) -> Pod:
        node, priority, cpu, port, block, started = spec
        extra: dict[str, Any] = {}
        if port:
            extra["containers"] = [
                {
                    "name": "c",
                    "resources": {"requests": {"cpu": cpu}},
                    "ports": [{"containerPort": port, "hostPort": port}],
                }
            ]
        return pod(
            f"{prefix}{i}",
            cpu=cpu,
            priority=priority,
            node=f"n{node % len(nodes)}" if bound else "",
            labels={"block": "true", "app": "x"} if block else {"app": "x"},
            started=started,
            spec=extra,
        )

    pods = [build("p", i, drawn, True) for i, drawn in enumerate(placed)]
    by_node: dict[str, list[PodInfo]] = {}
    for i, drawn in enumerate(nominated):
        by_node.setdefault(f"n{drawn[0] % len(nodes)}", []).append(
            PodInfo(build("nom", i, drawn, False))
        )
    env = setup(
        nodes,
        pods,
        pdbs=[pdb("budget", {"app": "x"}, allowed=budget)],
        nominated=by_node,
        seed=seed,
        extra_plugins=["test-CountBlockers"],
    )
    priority, cpu, port = preemptor
    incoming_spec: dict[str, Any] = {}
    if port:
        incoming_spec["containers"] = [
            {
                "name": "c",
                "resources": {"requests": {"cpu": cpu}},
                "ports": [{"containerPort": port, "hostPort": port}],
            }
        ]
    incoming = PodInfo(
        pod(
            "incoming",
            cpu=cpu,
            priority=priority,
            labels={"wants-alone": "true"} if wants_alone else {},
            spec=incoming_spec,
        )
    )
    before = fingerprint(env.table)
    generation = env.table.generation
    state = CycleState()
    env.fw.run_pre_filter(state, incoming, env.table)
    counts = state.read(COUNT_KEY, _Blockers).clone().per_row
    feasible, diagnosis = env.fw.run_filters_with_nominated_pods(
        state, incoming, env.table, env.table.order()
    )
    assert fingerprint(env.table) == before
    for row in env.table.order().tolist():
        victims, _, status = env.plugin.select_victims_on_node(
            state.clone(), incoming, env.table, row, env.handle.pdbs
        )
        assert fingerprint(env.table) == before
        event(f"dry run: {Code(status.code).name}")
        if status.is_success():
            # Without its victims the pod fits; with any one of them back, it does not.
            saved = env.table.save_row(row)
            for victim in victims:
                env.table.remove_pod(victim, row)
            trial = state.clone()
            for victim in victims:
                env.fw.run_pre_filter_extension_remove_pod(trial, incoming, victim, env.table, row)
            assert env.fw.filter_status_with_nominated_pods(
                trial, incoming, env.table, row
            ).is_success()
            for victim in victims:
                env.table.add_pod(victim, row)
                env.fw.run_pre_filter_extension_add_pod(trial, incoming, victim, env.table, row)
                assert not env.fw.filter_status_with_nominated_pods(
                    trial, incoming, env.table, row
                ).is_success()
                env.table.remove_pod(victim, row)
                env.fw.run_pre_filter_extension_remove_pod(trial, incoming, victim, env.table, row)
            env.table.restore_row(saved)
            assert fingerprint(env.table) == before
    if len(feasible) == 0:
        _, status = env.fw.run_post_filter(state, incoming, diagnosis)
        event(f"preemption: {'nominated' if status.is_success() else 'no'}")
        assert fingerprint(env.table) == before
    assert state.read(COUNT_KEY, _Blockers).per_row == counts
    assert env.table.generation >= generation
