"""DefaultPreemption: PostFilter that evicts lower priority pods to make room."""

from kubesched.plugins.defaultpreemption.args import ArgsError, DefaultPreemptionArgs
from kubesched.plugins.defaultpreemption.plugin import Candidate, DefaultPreemption

__all__ = ["ArgsError", "Candidate", "DefaultPreemption", "DefaultPreemptionArgs"]
