"""What queueing hints share: reading the objects an event carries (util.As upstream)."""

from __future__ import annotations

from kubesched.api.objects import Node, Pod
from kubesched.api.objects import same_pod as same_pod  # shared with the queue
from kubesched.framework.types import PodInfo


def as_pod(obj: object) -> Pod | None:
    """The Pod an event carries (a Pod or a PodInfo), or None."""
    if isinstance(obj, Pod):
        return obj
    if isinstance(obj, PodInfo):
        return obj.pod
    return None


def as_node(obj: object) -> Node | None:
    return obj if isinstance(obj, Node) else None
