"""What `kubesched run` checks before it starts its informers and the leader election:
that the API server serves every kind a profile needs, and that its ports are free.
Each failure is a StartupError: one line, and the process exits 1.

kube-scheduler v1.36.3 fails at start-up for a port that cannot be listened on
(SecureServingOptions.ApplyTo: "failed to create listener: failed to listen on
ADDRESS: ...", logged by component-base's cli.Run as "command failed", exit 1). For
a kind the API server does not serve it does not: the reflector logs "failed to
list" every few seconds and WaitForCacheSync waits for ever (scheduler-plugins'
Coscheduling without its CRD, DynamicResources without resource.k8s.io/v1). Here
that is a start-up failure too, saying which plugin needs the kind and what to do.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from kubesched.api import kinds
from kubesched.api.kinds import Kind
from kubesched.kube.client import ApiError, KubeClient

log = logging.getLogger("kubesched.run")

POD_GROUP_CRD = "deploy/crds/scheduling.x-k8s.io_podgroups.yaml"


class StartupError(Exception):
    """`kubesched run` cannot start: the message is the one line it exits with."""


@dataclass(frozen=True, slots=True)
class NeededKind:
    """A kind the informers will watch, who needs it, and how to do without it."""

    kind: Kind
    needed_by: str  # "plugin Coscheduling", "the GenericWorkload feature gate"
    fix: str  # what to do when the API server does not serve it


def coscheduling_needs() -> list[NeededKind]:
    return [
        NeededKind(
            kinds.COSCHEDULING_POD_GROUP,
            "plugin Coscheduling",
            f"install the CRD (kubectl apply -f {POD_GROUP_CRD}) or disable Coscheduling",
        )
    ]


def plugin_needs(group_kinds: Iterable[Kind], plugins: list[str]) -> list[NeededKind]:
    """Built-in kinds some plugins read (the volume or the DRA kinds)."""
    names = " and ".join(plugins)
    noun = "plugin" if len(plugins) == 1 else "plugins"
    return [
        NeededKind(
            kind,
            f"{noun} {names}",
            f"serve {kind.api_version} (kube-apiserver --runtime-config) or disable {names}",
        )
        for kind in group_kinds
    ]


def generic_workload_needs() -> list[NeededKind]:
    kind = kinds.WORKLOAD_POD_GROUP
    return [
        NeededKind(
            kind,
            "the GenericWorkload feature gate",
            f"serve {kind.api_version} (kube-apiserver --runtime-config="
            f"{kind.api_version}=true --feature-gates=GenericWorkload=true) "
            "or turn the gate off (--feature-gates=GenericWorkload=false)",
        )
    ]


class _Resource(msgspec.Struct):
    name: str


class _ResourceList(msgspec.Struct, rename="camel"):
    resources: list[_Resource] = []


async def require_served(client: KubeClient, needs: Iterable[NeededKind]) -> None:
    """One discovery request per group/version (GET /apis/GROUP/VERSION, as
    discovery's ServerResourcesForGroupVersion): a StartupError for the first
    needed kind it does not list. An API server that cannot be asked now (down,
    overloaded) is not a verdict: the informers retry as upstream's do."""
    by_version: dict[str, list[NeededKind]] = {}
    for need in needs:
        by_version.setdefault(need.kind.api_version, []).append(need)
    for api_version, wanted in by_version.items():
        prefix = "/apis" if "/" in api_version else "/api"
        try:
            found = msgspec.json.decode(
                await client.request("GET", f"{prefix}/{api_version}"), type=_ResourceList
            )
            served = {r.name for r in found.resources}
        except ApiError as err:
            if err.status != 404:
                log.warning("cannot check that %s is served: %s", api_version, err)
                continue
            served = set()
        except (OSError, TimeoutError, msgspec.DecodeError) as err:
            log.warning("cannot check that %s is served: %s", api_version, err)
            continue
        for need in wanted:
            if need.kind.resource not in served:
                raise StartupError(
                    f"{need.needed_by} needs {need.kind.kind} ({need.kind.api_version} "
                    f"{need.kind.resource}), which the API server does not serve: {need.fix}"
                )


def listen_error(address: str, port: int, flags: str, exc: OSError) -> StartupError:
    """A port that cannot be listened on, as kube-scheduler words it (CreateListener's
    "failed to listen on ADDRESS: ..."), with the flags that chose it."""
    reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
    host = f"[{address}]" if ":" in address else address
    return StartupError(f"failed to listen on {host}:{port} ({flags}): {reason}")
