"""Small scenarios and runs built by hand, for the tests of the generator and the
comparison logic (no cluster)."""

from __future__ import annotations

from typing import Any

from tests.differential import generator as gen
from tests.differential.harness import Run, Step


def _node(name: str, zone: str = "zone-a", cpu: str = "4") -> dict[str, Any]:
    return {
        "name": name,
        "labels": {gen.ZONE_LABEL: zone},
        "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
    }


def _pod(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": gen.DEFAULT_IMAGE, "resources": {"requests": {"cpu": cpu}}}
    return {"name": name, "labels": {"app": "web"}, "spec": {"containers": [container], **spec}}


def _scenario(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "t",
        "features": [],
        "profile": "default",
        "config": gen.profile_config("default", []),
        "nodes": nodes,
        "pods": pods,
    }


def _run(
    side: str,
    scenario: dict[str, Any],
    outcomes: list[tuple[str, str | None, str]],
    events: dict[str, list[str]] | None = None,
) -> Run:
    """A Run as the harness would record it: OUTCOMES is (outcome, node, message) per pod."""
    ns = "ns-" + side
    names = {n["name"]: n["name"] for n in scenario["nodes"]}
    run = Run(side, ns, events=events or {})
    run.nodes = [gen.node_manifest(n, n["name"]) for n in scenario["nodes"]]
    placements: dict[str, str | None] = {}
    for pod, (outcome, node, message) in zip(scenario["pods"], outcomes, strict=True):
        created = gen.pod_manifest(pod, ns, "differential", names)
        created["spec"]["priority"] = 0
        placements[pod["name"]] = node if outcome == "bound" else None
        run.steps.append(
            Step(
                pod["name"],
                outcome,
                node=node if outcome == "bound" else None,
                reason="Unschedulable" if outcome == "unschedulable" else "",
                message=message,
                placements=dict(placements),
                created=created,
            )
        )
    run.final = dict(placements)
    return run
