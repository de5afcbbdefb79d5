"""A live cluster's state, read once for `simulate --from-cluster` (read-only).

The kinds are api/kinds.py's: what kube-scheduler watches, and what admission and
the controllers read before it. Not read: Deployments (their ReplicaSets carry the
replicas and selectors) and Jobs (a finished Job's pods are not listed, so the
loader would make them again). A kind the API server does not serve (an alpha API
such as the Workload API, or a CRD that is not installed) is left out with a note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import kinds
from kubesched.api.kinds import Kind
from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.config import load_connection
from kubesched.kube.informers import LIVE_PODS

SNAPSHOT_KINDS: tuple[Kind, ...] = (
    *(k for k in kinds.SIMULATOR_KINDS if k not in (kinds.DEPLOYMENT, kinds.JOB, kinds.POD)),
    kinds.POD,
)


@dataclass
class ClusterSnapshot:
    """The objects as one `kind: List` document for the manifest loader, and notes."""

    documents: list[tuple[str, int, object]]
    notes: list[str] = field(default_factory=list)


async def read_cluster(kubeconfig: str | None, context: str | None) -> ClusterSnapshot:
    """The cluster's objects, with GETs only."""
    connection = await load_connection(kubeconfig, context)
    client = KubeClient(connection)
    notes: list[str] = []
    try:
        items: list[Any] = []
        for kind in SNAPSHOT_KINDS:
            params = {"fieldSelector": LIVE_PODS} if kind is kinds.POD else {}
            try:
                listed = await client.list(kind.list_path, params)
            except ApiError as err:
                if err.status != 404:
                    raise
                notes.append(
                    f"the cluster does not serve {kind.kind} ({kind.api_version}): none read; "
                    f"it matters for {kind.reads}"
                )
                continue
            for raw in listed.items:
                obj = json.loads(bytes(raw))
                obj.setdefault("kind", kind.kind)
                obj.setdefault("apiVersion", kind.api_version)
                items.append(obj)
    finally:
        await client.aclose()
    source = f"cluster {connection.host}"
    return ClusterSnapshot(
        [(source, 1, {"apiVersion": "v1", "kind": "List", "items": items})], notes
    )
