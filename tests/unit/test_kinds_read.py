"""`run` and `simulate` read the same kinds: those of api/kinds.py.

`run`'s informers are built by its own code (kube/informers.py) for a profile with
every plugin that reads a kind (the default profile, GenericWorkload on, and
Coscheduling); no request is sent. `simulate`'s loader must read a document of each
of those kinds (no "skipped kind" note), and `--from-cluster` must list each."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from kubesched.api import kinds
from kubesched.cluster.manifests import load_documents
from kubesched.framework.clock import SimClock
from kubesched.framework.features import FeatureGates
from kubesched.framework.handle import Listers
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig, default_multi_point
from kubesched.kube.client import KubeClient
from kubesched.kube.config import load_connection
from kubesched.kube.informers import scheduler_informers
from kubesched.kube.runner import Runner, RunOptions, default_config
from kubesched.kube.snapshot import SNAPSHOT_KINDS
from kubesched.simulation.memory import InMemoryCluster

GATES = FeatureGates({**FeatureGates().enabled, "GenericWorkload": True, "GangScheduling": True})


def _kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    cluster = {"server": "https://127.0.0.1:1/", "insecure-skip-tls-verify": True}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


def run_informer_paths(tmp_path: Path, profile: ProfileConfig) -> set[str]:
    """The list paths of the informers `run` starts for `profile`."""
    config = default_config(GATES)
    config.profiles = [profile]
    runner = Runner(RunOptions(seed=1, gates=GATES), config)
    listers = Listers()
    sched = runner.new_scheduler(InMemoryCluster(), SimClock(), listers)
    connection = asyncio.run(load_connection(_kubeconfig(tmp_path)))
    informers = scheduler_informers(
        KubeClient(connection),
        sched,
        listers,
        generic_workload=GATES.generic_workload,
        may_write_pod_groups=lambda: True,
    )
    return {informer.path for informer in informers.all}


def every_plugin() -> ProfileConfig:
    return ProfileConfig(
        "kubesched",
        {
            "multiPoint": PluginSet([*default_multi_point(GATES), PluginRef("Coscheduling")]),
            "queueSort": PluginSet([PluginRef("Coscheduling")], [PluginRef("*")]),
        },
    )


def test_run_watches_exactly_the_scheduler_kinds(tmp_path: Path) -> None:
    expected = {k.list_path for k in (*kinds.SCHEDULER_KINDS, *kinds.PLUGIN_KINDS)}
    assert run_informer_paths(tmp_path, every_plugin()) == expected


def test_without_the_plugins_that_read_them_run_leaves_kinds_out(tmp_path: Path) -> None:
    """As upstream's informer factory starts only the informers asked for."""
    bare = ProfileConfig(
        "kubesched",
        {
            "multiPoint": PluginSet(
                [PluginRef("PrioritySort"), PluginRef("NodeName"), PluginRef("DefaultBinder")]
            )
        },
    )
    paths = run_informer_paths(tmp_path, bare)
    assert kinds.PERSISTENT_VOLUME.list_path not in paths
    assert kinds.RESOURCE_CLAIM.list_path not in paths
    assert kinds.COSCHEDULING_POD_GROUP.list_path not in paths
    assert {kinds.NODE.list_path, kinds.POD.list_path, kinds.SERVICE.list_path} <= paths


def _minimal(kind: kinds.Kind) -> dict[str, object]:
    meta: dict[str, object] = {"name": f"x-{kind.resource}"}
    if kind.namespaced:
        meta["namespace"] = "default"
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}


@pytest.mark.parametrize(
    "kind",
    [*kinds.SCHEDULER_KINDS, *kinds.PLUGIN_KINDS, *kinds.ADMISSION_KINDS, *kinds.CONTROLLER_KINDS],
    ids=lambda k: f"{k.kind}.{k.group or 'core'}",
)
def test_simulate_reads_every_kind(kind: kinds.Kind) -> None:
    """No kind of the list is skipped by the loader (a bad minimal object is a
    problem, not a skip: the loader did read it)."""
    state = load_documents([("input", 1, _minimal(kind))])
    assert not [n for n in state.notes if "skipped kind" in n], state.notes
    # Read by its own reader: no crash caught by the loader's safety net.
    assert not [p for p in state.problems if p.message.startswith("cannot read")], [
        str(p) for p in state.problems
    ]


def test_from_cluster_lists_every_kind_run_watches() -> None:
    listed = {k.list_path for k in SNAPSHOT_KINDS}
    assert {k.list_path for k in (*kinds.SCHEDULER_KINDS, *kinds.PLUGIN_KINDS)} <= listed
    assert {k.list_path for k in kinds.ADMISSION_KINDS} <= listed


def test_a_kind_outside_the_list_is_noted_not_dropped() -> None:
    state = load_documents(
        [("input", 1, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})]
    )
    assert any("skipped kind ConfigMap (v1)" in n for n in state.notes)
