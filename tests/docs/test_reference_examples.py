"""The examples in the docstrings docs/reference/plugin-api.md renders run, and do what
they say (issue #31).

Each object the page renders (`::: kubesched...`) must carry an example: a ```python
block in its docstring or in one of its methods'. Each example runs as a module of its
own; its check below then runs the plugin it defines through the in-memory scheduler
(`kubesched.simulation.simulator.simulate`) and asserts what the example promises, most often a
placement the default profile alone would not make (its control run says so).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubesched.api.objects import Namespace, Node, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    EXTENSION_POINTS,
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterScope,
    NodeFilterPlugin,
    Plugin,
    QueueingHint,
)
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo, Resource
from kubesched.plugins.registry import default_registry
from kubesched.simulation.simulator import SimulationResult, simulate
from kubesched.testing import make_node, make_pod, make_table

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "plugin-api.md"
EXAMPLE = re.compile(r"```python\n(.*?)^\s*```", re.S | re.M)
GPU = "nvidia.com/gpu"

Namespace_ = dict[str, Any]


# --- the page and its examples ----------------------------------------------------------


def documented() -> list[str]:
    """The objects the page renders, by dotted path, in page order."""
    return re.findall(r"^::: (kubesched\.[\w.]+)$", PAGE.read_text(), re.M)


def resolve(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def examples_of(path: str) -> list[str]:
    """The ```python blocks of the object's docstring and of its own methods'."""
    obj = resolve(path)
    # __doc__, not inspect.getdoc: a class without a docstring would show its base's.
    docs = [obj.__doc__ or ""]
    if inspect.isclass(obj):
        docs += [m.__doc__ or "" for m in vars(obj).values() if inspect.isfunction(m)]
    return [textwrap.dedent(code) for doc in docs for code in EXAMPLE.findall(doc)]


class Calls:
    """Which methods of the example's plugins the scheduler called."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def wrap(self, cls: type[Plugin]) -> None:
        for attr, fn in list(vars(cls).items()):
            if attr.startswith("_") or not inspect.isfunction(fn):
                continue
            setattr(cls, attr, self._recording(cls.__name__, attr, fn))

    def _recording(self, owner: str, attr: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_call(*args: Any, **kwargs: Any) -> Any:
                self.seen.append((owner, attr))
                return await fn(*args, **kwargs)

            return async_call

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.seen.append((owner, attr))
            return fn(*args, **kwargs)

        return call


def run_example(path: str) -> tuple[Namespace_, Calls]:
    """The object's example run as a module; its plugin classes' methods recorded."""
    [code] = examples_of(path)
    name = "reference_example_" + path.rsplit(".", 1)[1]
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(code, f"<example of {path}>", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    calls = Calls()
    for value in list(vars(module).values()):
        if isinstance(value, type) and issubclass(value, Plugin) and value.__module__ == name:
            calls.wrap(value)
    return vars(module), calls


# --- running plugins ----------------------------------------------------------------------


def run(
    plugins: Sequence[type[Plugin]],
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    *,
    weight: int = 10,
    args: Mapping[str, Mapping[str, Any]] | None = None,
    points: Mapping[str, PluginSet] | None = None,
    namespaces: Mapping[str, Namespace] | None = None,
) -> SimulationResult:
    """The default profile with `plugins` enabled at every point they implement (Score
    at `weight`), as `simulate --plugin ... --enable Name:weight` runs them."""
    profile = ProfileConfig.default()
    profile.plugins["multiPoint"].enabled += [PluginRef(p.name, weight) for p in plugins]
    profile.plugins.update(points or {})
    profile.plugin_config.update(args or {})
    registry = default_registry(plugins)
    return simulate(nodes, pods, [profile], registry=registry, seed=0, namespaces=namespaces)


def placements(result: SimulationResult) -> dict[str, str | None]:
    return {key.split("/", 1)[1]: node for key, node in result.placements.items()}


def node(name: str, *, cpu: str = "4", memory: str = "16Gi", **fields: Any) -> Node:
    """A node with more than make_node sets (conditions, say), in API spelling."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": 110, **fields.pop("extra", {})}
    data = {
        "metadata": {"name": name, "labels": fields.pop("labels", {})},
        "spec": fields.pop("spec", {}),
        "status": {"allocatable": allocatable, "capacity": allocatable, **fields},
    }
    return msgspec.convert(data, Node)


BIG, SMALL = make_node("big", cpu="64", memory="64Gi"), make_node("small", cpu="4")


def labelled(name: str, labels: Mapping[str, str], cpu: str = "4") -> Node:
    return make_node(name, cpu=cpu, labels=labels)


# --- the checks, one per documented object -------------------------------------------------


def check_plugin(ns: Namespace_, calls: Calls) -> None:
    busy = make_pod("running", node_name="big")
    nodes, pods = [BIG, SMALL], [busy, make_pod("web")]
    assert placements(run([], nodes, pods))["web"] == "big"  # control: the emptier share
    result = run([ns["MaxPods"]], nodes, pods, args={"MaxPods": {"limit": 1}})
    assert placements(result)["web"] == "small"


def check_queue_sort(ns: Namespace_, calls: Calls) -> None:
    one_slot = make_node("one", pods=1)
    pods = [make_pod("batch"), make_pod("hotfix", labels={"example.com/urgent": "true"})]
    sort = {"queueSort": PluginSet([PluginRef("UrgentFirst")], [PluginRef("*")])}
    assert placements(run([], [one_slot], pods)) == {"batch": "one", "hotfix": None}
    result = run([ns["UrgentFirst"]], [one_slot], pods, points=sort)
    assert placements(result) == {"batch": None, "hotfix": "one"}
    assert ("UrgentFirst", "less") in calls.seen


def check_pre_enqueue(ns: Namespace_, calls: Calls) -> None:
    pods = [make_pod("draft"), make_pod("ok", labels={"example.com/approved": "true"})]
    result = run([ns["Approval"]], [SMALL], pods)
    assert placements(result) == {"draft": None, "ok": "small"}
    assert "default/draft" in result.not_attempted


def check_enqueue_extensions(ns: Namespace_, calls: Calls) -> None:
    nodes = [labelled("ready", {"example.com/ready": "true"}), BIG]
    result = run([ns["Ready"]], nodes, [make_pod("web")])
    assert placements(result)["web"] == "ready"
    [registered] = ns["Ready"]().events_to_register()
    assert registered.event.resource == Resource.NODE and registered.hint is None


def _gpu_filter(event: ClusterEventWithHint) -> type[Plugin]:
    """A plugin registering the example's event, as the example says a plugin does."""

    class GpuOnly(NodeFilterPlugin, EnqueueExtensions):
        name = "GpuOnly"

        def filter_node(self, state: CycleState, pod: PodInfo, info: Any) -> Status:
            return Status.success() if info.allocatable(GPU) else Status.unschedulable("no GPU")

        def events_to_register(self) -> list[ClusterEventWithHint]:
            return [event]

    return GpuOnly


def check_cluster_event_with_hint(ns: Namespace_, calls: Calls) -> None:
    event: ClusterEventWithHint = ns["NEW_GPU"]
    gpu_node = make_node("gpu", extra={GPU: 1})
    pod = PodInfo(make_pod("train"))
    assert event.hint is not None
    assert event.hint(pod, None, gpu_node) is QueueingHint.QUEUE
    assert event.hint(pod, None, SMALL) is QueueingHint.SKIP
    result = run([_gpu_filter(event)], [BIG, gpu_node], [make_pod("train")])
    assert placements(result)["train"] == "gpu"


def check_queueing_hint(ns: Namespace_, calls: Calls) -> None:
    hint = ns["node_ready"]
    pod = PodInfo(make_pod("web"))
    assert hint(pod, SMALL, labelled("n", {"example.com/ready": "true"})) is QueueingHint.QUEUE
    assert hint(pod, SMALL, labelled("n", {"example.com/ready": "false"})) is QueueingHint.SKIP


def check_cluster_event(ns: Namespace_, calls: Calls) -> None:
    taint = {"key": "example.com/dedicated", "value": "x", "effect": "NoSchedule"}
    tainted = make_node("tainted", cpu="64", taints=[taint])
    tolerant = make_pod("web", spec={"tolerations": [{"operator": "Exists"}]})
    assert placements(run([], [tainted, SMALL], [tolerant]))["web"] == "tainted"
    assert placements(run([ns["Untainted"]], [tainted, SMALL], [tolerant]))["web"] == "small"
    [registered] = ns["Untainted"]().events_to_register()
    assert registered.event.label == "NodeTaint"


def check_pre_filter(ns: Namespace_, calls: Calls) -> None:
    team_a = {"example.com/team": "a"}
    running = [make_pod(f"a{i}", labels=team_a, node_name="big") for i in range(2)]
    pods = [
        *running,
        make_pod("a3", labels=team_a),
        make_pod("b1", labels={"example.com/team": "b"}),
    ]
    result = run([ns["TeamQuota"]], [BIG], pods)
    assert placements(result)["a3"] is None and placements(result)["b1"] == "big"
    assert "team a is at its quota" in result.reasons["default/a3"]


def check_pre_filter_result(ns: Namespace_, calls: Calls) -> None:
    pods = [make_pod("pinned", labels={"example.com/node": "small"}), make_pod("free")]
    assert placements(run([], [BIG, SMALL], pods))["pinned"] == "big"
    result = run([ns["Pinned"]], [BIG, SMALL], pods)
    assert placements(result) == {"pinned": "small", "free": "big"}


def check_pre_filter_extensions(ns: Namespace_, calls: Calls) -> None:
    plugin_class = ns["OnePerNode"]
    pods = [make_pod(f"web-{i}", labels={"app": "web"}) for i in range(3)]
    result = run([plugin_class], [BIG, SMALL], pods)
    assert sorted(n or "-" for n in placements(result).values()) == ["-", "big", "small"]
    # A what-if change to a copy of the state (preemption's) leaves the cycle's alone.
    plugin = plugin_class()
    table = make_table([BIG, SMALL])
    rows = table.order()
    pod, other = PodInfo(pods[0]), PodInfo(pods[1])
    state = CycleState()
    plugin.pre_filter(state, pod, table)
    what_if = state.clone()
    plugin.add_pod(what_if, pod, other, table, int(rows[0]))
    assert plugin.filter(state, pod, table, rows).passed().tolist() == [True, True]
    assert plugin.filter(what_if, pod, table, rows).passed().tolist() == [False, True]
    plugin.remove_pod(what_if, pod, other, table, int(rows[0]))
    assert plugin.filter(what_if, pod, table, rows).passed().tolist() == [True, True]


def check_filter(ns: Namespace_, calls: Calls) -> None:
    nodes = [
        labelled("db", {"example.com/pool": "db"}, cpu="64"),
        labelled("web", {"example.com/pool": "web"}),
    ]
    pods = [make_pod("frontend", labels={"example.com/pool": "web"}), make_pod("any")]
    assert placements(run([], nodes, pods))["frontend"] == "db"
    assert placements(run([ns["SamePool"]], nodes, pods)) == {"frontend": "web", "any": "db"}


def check_node_filter(ns: Namespace_, calls: Calls) -> None:
    down = labelled("down", {"example.com/maintenance": "true"}, cpu="64")
    result = run([ns["NoMaintenance"]], [down, SMALL], [make_pod("web")])
    assert placements(result)["web"] == "small"
    assert ("NoMaintenance", "filter_node") in calls.seen


def check_node_verdicts(ns: Namespace_, calls: Calls) -> None:
    mid = make_node("mid", cpu="16", memory="16Gi")
    result = run([ns["BigNodes"]], [SMALL, mid, BIG], [make_pod("db")])
    assert placements(result)["db"] == "big"
    alone = run([ns["BigNodes"]], [SMALL, mid], [make_pod("db")])
    # Each node counts under each reason it carries.
    assert "1 node(s) have < 8 CPUs, 2 node(s) have < 32Gi" in alone.reasons["default/db"]


def check_filter_scope(ns: Namespace_, calls: Calls) -> None:
    spot = labelled("spot", {"example.com/capacity": "spot"}, cpu="64")
    assert ns["NoSpot"]().filter_scope(PodInfo(make_pod("web"))) == FilterScope.NODE
    assert placements(run([ns["NoSpot"]], [spot, SMALL], [make_pod("web")]))["web"] == "small"


def check_post_filter(ns: Namespace_, calls: Calls) -> None:
    result = run([ns["Hint"]], [SMALL], [make_pod("huge", cpu="8")])
    assert placements(result)["huge"] is None
    assert "ask #platform for a bigger node pool" in result.reasons["default/huge"]


def check_post_filter_result(ns: Namespace_, calls: Calls) -> None:
    overflow = make_node("overflow", cpu="1")
    result = run([ns["Overflow"]], [overflow], [make_pod("huge", cpu="8")])
    assert placements(result)["huge"] is None
    assert result.pods["default/huge"].status.nominated_node_name == "overflow"


def _half_full() -> tuple[list[Node], list[Pod]]:
    """`small` is emptier by share, `large` has more free CPU and memory in amount."""
    nodes = [
        make_node("small", cpu="4", memory="16Gi"),
        make_node("large", cpu="64", memory="64Gi"),
    ]
    filler = make_pod("filler", cpu="32", memory="40Gi", node_name="large")
    return nodes, [filler, make_pod("web")]


def check_pre_score(ns: Namespace_, calls: Calls) -> None:
    nodes, pods = _half_full()
    assert placements(run([], nodes, pods))["web"] == "small"
    assert placements(run([ns["Headroom"]], nodes, pods))["web"] == "large"
    assert ("Headroom", "pre_score") in calls.seen


def check_score(ns: Namespace_, calls: Calls) -> None:
    nodes, pods = _half_full()
    assert placements(run([ns["MostFreeCpu"]], nodes, pods))["web"] == "large"
    assert ("MostFreeCpu", "normalize_scores") in calls.seen


def check_node_score(ns: Namespace_, calls: Calls) -> None:
    running = [make_pod(f"r{i}", node_name="big") for i in range(20)]
    pods = [*running, make_pod("web", cpu="1")]
    assert placements(run([], [BIG, SMALL], pods))["web"] == "big"
    assert placements(run([ns["FewestPods"]], [BIG, SMALL], pods))["web"] == "small"


def check_reserve(ns: Namespace_, calls: Calls) -> None:
    result = run([ns["Ledger"]], [SMALL], [make_pod("a"), make_pod("b")])
    assert ns["Ledger"].placed == {"default/a": "small", "default/b": "small"}
    assert result.scheduled == 2


def check_permit(ns: Namespace_, calls: Calls) -> None:
    pods = [make_pod("frozen", labels={"example.com/frozen": "true"}), make_pod("web")]
    result = run([ns["Freeze"]], [SMALL], pods)
    assert placements(result) == {"frozen": None, "web": "small"}
    assert "deployments are frozen" in result.reasons["default/frozen"]


def check_pre_bind(ns: Namespace_, calls: Calls) -> None:
    result = run([ns["Announce"]], [SMALL], [make_pod("web")])
    placing = [(e.pod, e.message) for e in result.events if e.reason == "Placing"]
    assert placing == [("default/web", "to small")]


def check_bind(ns: Namespace_, calls: Calls) -> None:
    order = {"bind": PluginSet([PluginRef("GpuBinder"), PluginRef("DefaultBinder")])}
    gpu_node = make_node("gpu", extra={GPU: 1})
    pods = [make_pod("train", requests={GPU: 1}), make_pod("web")]
    result = run([ns["GpuBinder"]], [gpu_node], pods, points=order)
    assert placements(result) == {"train": "gpu", "web": "gpu"}
    assert result.pods["default/train"].spec.node_name == "gpu"
    assert calls.seen.count(("GpuBinder", "bind")) == 2  # one bound, one skipped


def check_post_bind(ns: Namespace_, calls: Calls) -> None:
    result = run([ns["Placements"]], [SMALL], [make_pod("a"), make_pod("b")])
    assert ns["Placements"].log == [("default/a", "small"), ("default/b", "small")]
    assert result.scheduled == 2


def check_pod_info(ns: Namespace_, calls: Calls) -> None:
    reserved = labelled("reserved", {"example.com/reserved": ""}, cpu="64")
    pods = [make_pod("batch"), make_pod("critical", priority=2000)]
    result = run([ns["ReservedForCritical"]], [reserved, SMALL], pods)
    assert placements(result) == {"batch": "small", "critical": "reserved"}


def check_node_info(ns: Namespace_, calls: Calls) -> None:
    tight, roomy = make_node("tight", cpu="2"), make_node("roomy", cpu="8")
    pods = [make_pod("web", cpu="1500m")]
    assert placements(run([ns["KeepHeadroom"]], [tight, roomy], pods))["web"] == "roomy"
    alone = run([ns["KeepHeadroom"]], [tight], pods)
    assert "1 node(s) would have under 1 CPU free" in alone.reasons["default/web"]


def check_node_table(ns: Namespace_, calls: Calls) -> None:
    nodes, pods = _half_full()
    assert placements(run([ns["MostFreeMemory"]], nodes, pods))["web"] == "large"


def check_status(ns: Namespace_, calls: Calls) -> None:
    pressured = node("pressured", cpu="64", conditions=[{"type": "DiskPressure", "status": "True"}])
    result = run([ns["DiskPressure"]], [pressured, SMALL], [make_pod("web")])
    assert placements(result)["web"] == "small"
    alone = run([ns["DiskPressure"]], [pressured], [make_pod("web")])
    assert "1 node(s) had disk pressure" in alone.reasons["default/web"]


def check_code(ns: Namespace_, calls: Calls) -> None:
    arm = labelled("arm", {"kubernetes.io/arch": "arm64"}, cpu="64")
    result = run([ns["NoArm"]], [arm, SMALL], [make_pod("web")])
    assert placements(result)["web"] == "small"
    alone = run([ns["NoArm"]], [arm], [make_pod("web")])
    # Unresolvable: preemption is not tried on that node.
    assert "Preemption is not helpful" in alone.reasons["default/web"]


def check_cycle_state(ns: Namespace_, calls: Calls) -> None:
    nodes = [labelled("gpu-tier", {"example.com/tier": "gpu"}, cpu="64"), SMALL]
    pods = [make_pod("web"), make_pod("train", labels={"example.com/tier": "gpu"})]
    assert placements(run([ns["Tier"]], nodes, pods)) == {"web": "small", "train": "gpu-tier"}


def check_handle(ns: Namespace_, calls: Calls) -> None:
    result = run([ns["Welcome"]], [SMALL], [make_pod("web")])
    [event] = [e for e in result.events if e.reason == "Welcome"]
    assert event.pod == "default/web" and event.message.startswith("placed on small at ")


def check_listers(ns: Namespace_, calls: Calls) -> None:
    frozen = msgspec.convert(
        {"metadata": {"name": "frozen", "labels": {"example.com/frozen": "true"}}}, Namespace
    )
    pods = [make_pod("web", namespace="frozen"), make_pod("api")]
    result = run([ns["FrozenNamespaces"]], [SMALL], pods, namespaces={"frozen": frozen})
    assert placements(result) == {"web": None, "api": "small"}
    assert "namespace frozen is frozen" in result.reasons["frozen/web"]


CHECKS: dict[str, Callable[[Namespace_, Calls], None]] = {
    "kubesched.framework.interfaces.Plugin": check_plugin,
    "kubesched.framework.interfaces.QueueSortPlugin": check_queue_sort,
    "kubesched.framework.interfaces.PreEnqueuePlugin": check_pre_enqueue,
    "kubesched.framework.interfaces.EnqueueExtensions": check_enqueue_extensions,
    "kubesched.framework.interfaces.ClusterEventWithHint": check_cluster_event_with_hint,
    "kubesched.framework.interfaces.QueueingHint": check_queueing_hint,
    "kubesched.framework.types.ClusterEvent": check_cluster_event,
    "kubesched.framework.interfaces.PreFilterPlugin": check_pre_filter,
    "kubesched.framework.interfaces.PreFilterResult": check_pre_filter_result,
    "kubesched.framework.interfaces.PreFilterExtensions": check_pre_filter_extensions,
    "kubesched.framework.interfaces.FilterPlugin": check_filter,
    "kubesched.framework.interfaces.NodeFilterPlugin": check_node_filter,
    "kubesched.framework.interfaces.NodeVerdicts": check_node_verdicts,
    "kubesched.framework.interfaces.FilterScope": check_filter_scope,
    "kubesched.framework.interfaces.PostFilterPlugin": check_post_filter,
    "kubesched.framework.interfaces.PostFilterResult": check_post_filter_result,
    "kubesched.framework.interfaces.PreScorePlugin": check_pre_score,
    "kubesched.framework.interfaces.ScorePlugin": check_score,
    "kubesched.framework.interfaces.NodeScorePlugin": check_node_score,
    "kubesched.framework.interfaces.ReservePlugin": check_reserve,
    "kubesched.framework.interfaces.PermitPlugin": check_permit,
    "kubesched.framework.interfaces.PreBindPlugin": check_pre_bind,
    "kubesched.framework.interfaces.BindPlugin": check_bind,
    "kubesched.framework.interfaces.PostBindPlugin": check_post_bind,
    "kubesched.framework.types.PodInfo": check_pod_info,
    "kubesched.framework.nodeinfo.NodeInfo": check_node_info,
    "kubesched.framework.state.node_table.NodeTable": check_node_table,
    "kubesched.framework.status.Status": check_status,
    "kubesched.framework.status.Code": check_code,
    "kubesched.framework.cycle_state.CycleState": check_cycle_state,
    "kubesched.framework.handle.Handle": check_handle,
    "kubesched.framework.handle.Listers": check_listers,
}


def plugin_classes(ns: Namespace_) -> Iterator[type[Plugin]]:
    module = ns["__name__"]
    for value in ns.values():
        if isinstance(value, type) and issubclass(value, Plugin) and value.__module__ == module:
            yield value


def test_the_page_renders_every_plugin_base_class() -> None:
    on_page = {path.rsplit(".", 1)[1] for path in documented()}
    bases = {base.__name__ for base in EXTENSION_POINTS.values()}
    assert bases | {"Plugin", "NodeFilterPlugin", "NodeScorePlugin"} <= on_page


def test_every_documented_object_has_one_example_and_a_check() -> None:
    paths = documented()
    assert [path for path in paths if len(examples_of(path)) != 1] == []
    assert set(paths) == set(CHECKS), "each example needs its check here"


@pytest.mark.parametrize("path", list(CHECKS), ids=lambda path: path.rsplit(".", 1)[1])
def test_example_runs_and_does_what_it_says(path: str) -> None:
    ns, calls = run_example(path)
    CHECKS[path](ns, calls)
    documented_class = resolve(path)
    examples = list(plugin_classes(ns))
    if isinstance(documented_class, type) and issubclass(documented_class, Plugin):
        # A base class's example is a plugin built on it.
        assert any(issubclass(cls, documented_class) for cls in examples), path
    for cls in examples:
        # The scheduler ran each plugin the example defines.
        assert any(owner == cls.__name__ for owner, _ in calls.seen), cls.__name__
