"""DefaultPreemption: PostFilter that evicts lower priority pods to make room."""

from kubesched.plugins.defaultpreemption.plugin import (
    ArgsError,
    Candidate,
    DefaultPreemption,
    DefaultPreemptionArgs,
)

__all__ = ["ArgsError", "Candidate", "DefaultPreemption", "DefaultPreemptionArgs"]
