"""The node pools `kubesched plan --add-nodes` may add nodes from: a YAML file.

    apiVersion: kubesched.io/v1alpha1
    kind: NodePools
    pools:
      - name: gpu              # new nodes are named gpu-1, gpu-2, ...
        price: 2.5             # per node, any unit (optional; none: fewest nodes)
        max: 4                 # the most new nodes of this pool (optional)
        node:                  # a Node: labels, taints, capacity / allocatable
          metadata: {labels: {node.kubernetes.io/instance-type: g4}}
          spec: {taints: [{key: gpu, value: "true", effect: NoSchedule}]}
          status: {allocatable: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}}

The file is refused whole, before anything runs, with one line naming the file
and the field (`pools.yaml: pools[1].price: must be >= 0`). The pool's own
fields are msgspec Structs that forbid unknown fields; the node is checked as
the manifest loader checks a Node (the apiserver's strict field decoding,
ValidateNode, and the quantities parsed as resource.Quantity), with its
defaults: allocatable from capacity (SetDefaults_NodeStatus) and, when neither
says, kubelet's default of 110 pods.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from kubesched.api.input_files import (
    InputFileError,
    StrictRecord,
    decode_document,
    field_and_message,
    file_refusal,
    read_yaml_file,
)
from kubesched.api.names import dns1123_label_errors
from kubesched.api.objects import Node
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.cluster.validation.fields import check_fields, refusal
from kubesched.cluster.validation.scheduling_objects import validate_node

API_VERSION = "kubesched.io/v1alpha1"
KIND = "NodePools"
# kubelet's --max-pods default: a template that says nothing of pods gets it.
DEFAULT_MAX_PODS = "110"
# The suffix `-<n>` of a new node's name leaves a pool name this long at most
# (a node name is a DNS subdomain, but its hostname label must be a label).
MAX_POOL_NAME = 50


class PoolsError(InputFileError):
    """A pools file that is refused: str() is the one line to print."""


class _PoolDoc(StrictRecord):
    name: str
    node: dict[str, Any]
    price: float | None = None
    max: int | None = None


class _PoolsDoc(StrictRecord):
    api_version: str
    kind: str
    pools: list[_PoolDoc]


@dataclass(frozen=True, slots=True)
class NodePool:
    """A node template and what it costs."""

    name: str
    node: Node  # the template: no name of its own (each new node gets `<name>-<n>`)
    price: Decimal | None  # per node; None when the file gives none
    max: int | None  # the most new nodes; None: no limit

    def node_named(self, index: int) -> Node:
        """The template as the node `<pool>-<index>`, with its hostname label, as
        cluster-autoscaler's template nodes get theirs (SanitizeNodeInfo)."""
        name = f"{self.name}-{index}"
        meta = msgspec.structs.replace(
            self.node.metadata,
            name=name,
            uid=f"plan-{name}",
            labels={**self.node.metadata.labels, "kubernetes.io/hostname": name},
        )
        return msgspec.structs.replace(self.node, metadata=meta)


def load_pools(path: Path) -> list[NodePool]:
    """The pools of the file; PoolsError naming the file and the field."""
    _, raw = read_yaml_file(path, PoolsError)
    return parse_pools(raw, str(path))


def parse_pools(raw: object, source: str) -> list[NodePool]:
    """The pools of a decoded document; PoolsError `source: field: message`."""

    def fail(field: str, message: str) -> InputFileError:
        return file_refusal(PoolsError, source, field, message)

    doc = decode_document(raw, _PoolsDoc, source, API_VERSION, KIND, PoolsError)
    if not doc.pools:
        raise fail("pools", "at least one pool is needed")
    pools: list[NodePool] = []
    seen: set[str] = set()
    for i, pool in enumerate(doc.pools):
        at = f"pools[{i}]"
        errors = dns1123_label_errors(pool.name)
        if errors:
            raise fail(f"{at}.name", f"{pool.name!r}: {errors[0]}")
        if len(pool.name) > MAX_POOL_NAME:
            raise fail(f"{at}.name", f"must be at most {MAX_POOL_NAME} characters")
        if pool.name in seen:
            raise fail(f"{at}.name", f"duplicate pool name {pool.name!r}")
        seen.add(pool.name)
        if pool.price is not None and not pool.price >= 0:  # NaN too
            raise fail(f"{at}.price", "must be >= 0")
        if pool.price is not None and pool.price == float("inf"):
            raise fail(f"{at}.price", "must be finite")
        if pool.max is not None and pool.max < 0:
            raise fail(f"{at}.max", "must be >= 0")
        node, error = _node(pool.node, pool.name)
        if error is not None:
            field, message = error
            raise fail(f"{at}.node.{field}" if field else f"{at}.node", message)
        assert node is not None
        if (pool.price is None) != (doc.pools[0].price is None):
            # A pool without a price beside priced ones would be free to the solver.
            raise fail(f"{at}.price", "give every pool a price, or none")
        price = None if pool.price is None else Decimal(repr(pool.price))
        pools.append(NodePool(pool.name, node, price, pool.max))
    return pools


def _node(raw: dict[str, Any], pool: str) -> tuple[Node | None, tuple[str, str] | None]:
    """The template node, or (None, (field, message)): the checks the manifest
    loader makes of a Node (add_node), on a node named after the pool."""
    obj = {"apiVersion": "v1", "kind": "Node", **raw}
    if obj["apiVersion"] != "v1" or obj["kind"] != "Node":
        return None, ("apiVersion", "must be v1 Node")
    problems = check_fields(obj, "v1", "Node")
    if problems:
        problem = refusal(problems)
        return None, (problem.field, problem.message)
    try:
        node = msgspec.convert(obj, Node)
    except msgspec.ValidationError as exc:
        return None, field_and_message(exc)
    if node.metadata.name:
        return None, ("metadata.name", "must be empty: new nodes are named <pool>-<n>")
    status = node.status
    for field, resources in (("capacity", status.capacity), ("allocatable", status.allocatable)):
        for resource, quantity in resources.items():
            try:
                parse_quantity(quantity)
            except QuantityError as exc:
                return None, (f"status.{field}[{resource}]", str(exc))
    if not status.allocatable:
        status.allocatable = dict(status.capacity)  # SetDefaults_NodeStatus
    if not status.allocatable:
        return None, ("status.allocatable", "the template has no resources")
    status.allocatable.setdefault("pods", DEFAULT_MAX_PODS)
    node.metadata.name = f"{pool}-1"  # as a new node would be named, for ValidateNode
    for field, message in validate_node(node):
        return None, (field, message)
    node.metadata.name = ""
    return node, None
