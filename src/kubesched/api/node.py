"""node.k8s.io/v1 RuntimeClass, as far as scheduling reads it: the RuntimeClass
admission plugin copies its overhead into the pods that name it, and merges its
scheduling constraints into their node selector and tolerations."""

from __future__ import annotations

import msgspec

from kubesched.api.objects import ObjectMeta, ResourceList, Toleration


class _Api(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class Overhead(_Api):
    pod_fixed: ResourceList = {}


class Scheduling(_Api):
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] = []


class RuntimeClass(_Api):
    api_version: str = "node.k8s.io/v1"
    kind: str = "RuntimeClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    handler: str = ""
    overhead: Overhead | None = None
    scheduling: Scheduling | None = None
