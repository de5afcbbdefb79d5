"""CycleState: data that plugins share during one scheduling attempt of one pod."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


class CycleState:
    """A per-attempt scratch space keyed by plugin-chosen strings.

    PreFilter writes what Filter reads, PreScore what Score reads; a new one is
    made for every attempt so nothing leaks between pods. `read(key, kind)` raises
    KeyError when the key holds no `kind`.

    Example:
        ```python
        from kubesched.framework.interfaces import NodeFilterPlugin, PreFilterPlugin
        from kubesched.framework.status import Status

        class Tier(PreFilterPlugin, NodeFilterPlugin):
            # Pods go to nodes of their tier (label example.com/tier, default "general").
            name = "Tier"

            def pre_filter(self, state, pod, nodes):
                state.write(self.name, pod.pod.metadata.labels.get("example.com/tier", "general"))
                return None, Status.success()

            def filter_node(self, state, pod, node):
                tier = state.read(self.name, str)  # worked out once, read per node
                if node.labels.get("example.com/tier", "general") != tier:
                    return Status.unschedulable(f"node(s) are not of tier {tier}")
                return Status.success()
        ```
    """

    __slots__ = (
        "_data",
        "explain",
        "pod_group_cycle",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # Whether this attempt's plugin durations are observed (SetRecordPluginMetrics
        # upstream: ScheduleOne samples pluginMetricsSamplePercent of the cycles).
        self.record_plugin_metrics = False
        # What this attempt computed, kept for an explanation when one is asked for
        # (a framework.explain.CycleCapture); None, the rule, keeps nothing.
        self.explain: Any = None
        # Whether this attempt is one pod's part of a pod group scheduling cycle
        # (SetPodGroupSchedulingCycle / IsPodGroupSchedulingCycle upstream).
        self.pod_group_cycle = False

    def write(self, key: str, value: object) -> None:
        self._data[key] = value

    def read(self, key: str, kind: type[T]) -> T:
        value = self._data.get(key)
        if not isinstance(value, kind):
            raise KeyError(f"{key!r} not found in CycleState")
        return value

    def get(self, key: str) -> Any:
        return self._data.get(key)

    def clone(self) -> CycleState:
        """A copy for what-if runs (preemption, nominated pods). As upstream's
        StateData.Clone, a value with a `clone()` method is cloned with it (plugins
        whose PreFilterExtensions change their state in place need one); other
        values are shared, so they must not be changed in place."""
        copy = CycleState()
        copy._data = {
            key: value.clone() if callable(getattr(value, "clone", None)) else value
            for key, value in self._data.items()
        }
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.record_plugin_metrics = self.record_plugin_metrics
        copy.pod_group_cycle = self.pod_group_cycle
        return copy
