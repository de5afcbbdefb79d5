"""GangScheduling (framework/plugins/gangscheduling upstream): all-or-nothing for the
pods of a PodGroup with a gang scheduling policy."""

from kubesched.plugins.gangscheduling.plugin import PERMIT_TIMEOUT, GangScheduling

__all__ = ["PERMIT_TIMEOUT", "GangScheduling"]
