"""Status: what an extension point says about a pod (framework.Status upstream)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    """A Status's code. UNSCHEDULABLE: the pod may fit once the cluster changes;
    UNSCHEDULABLE_AND_UNRESOLVABLE: preemption would not help; WAIT: Permit holds
    the pod; SKIP: the plugin has nothing to do for the pod.

    Example:
        ```python
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Code, Status

        class NoArm(NodeFilterPlugin):
            name = "NoArm"

            def filter_node(self, state, pod, node):
                if node.labels.get("kubernetes.io/arch") == "arm64":
                    # Evicting pods would not turn the node into amd64.
                    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) are arm64"])
                return Status(Code.SUCCESS)
        ```
    """

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


# Code.String() upstream (kube-scheduler/framework/interface.go: `codes`), indexed
# by Code: the status label of the framework's metrics.
CODE_NAMES = (
    "Success",
    "Error",
    "Unschedulable",
    "UnschedulableAndUnresolvable",
    "Wait",
    "Skip",
    "Pending",
)


def code_name(code: int) -> str:
    """Code.String(): 0 -> "Success", 3 -> "UnschedulableAndUnresolvable"."""
    return CODE_NAMES[code] if 0 <= code < len(CODE_NAMES) else f"Unknown Code({code})"


@dataclass(slots=True)
class Status:
    """What a plugin says at an extension point: a Code and the reasons shown to
    users (the FailedScheduling event, the pod's condition). Build one with the
    class methods; `success()` and `skip()` are shared and never change.

    Example:
        ```python
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Status

        class DiskPressure(NodeFilterPlugin):
            name = "DiskPressure"

            def filter_node(self, state, pod, node):
                for condition in node.node.status.conditions:
                    if condition.type == "DiskPressure" and condition.status == "True":
                        return Status.unschedulable("node(s) had disk pressure")
                return Status.success()
        ```
    """

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""
    error: BaseException | None = None

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, list(reasons), plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons), plugin)

    @classmethod
    def as_error(cls, error: BaseException | str, plugin: str = "") -> Status:
        exc = error if isinstance(error, BaseException) else RuntimeError(error)
        return cls(Code.ERROR, [str(exc)], plugin, exc)

    @classmethod
    def skip(cls) -> Status:
        return _SKIP

    @classmethod
    def wait(cls, plugin: str = "") -> Status:
        return cls(Code.WAIT, [], plugin)

    @classmethod
    def pending(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.PENDING, list(reasons), plugin)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable, unresolvable or pending: the pod cannot go on for now."""
        return self.code in (
            Code.UNSCHEDULABLE,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            Code.PENDING,
        )

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin:
            return self
        if self is _SUCCESS or self is _SKIP:
            return Status(self.code, [], plugin)  # the shared ones stay as they are
        self.plugin = plugin
        return self


# What Status.success() and Status.skip() return: a plugin returns one of them for
# nearly every pod at several extension points, and a new Status each time was
# ~3 % of a scheduling cycle. Nothing changes a status once made except
# with_plugin, which copies these instead.
_SUCCESS = Status()
_SKIP = Status(Code.SKIP)
