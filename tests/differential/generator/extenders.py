"""The `extenders` feature: 1–3 scheduler extenders (the configuration file's
`extenders:`), each a deterministic rule held as plain data in the scenario, so that
the scenario file alone says what every extender answers (harness/extenders.py
serves them; both schedulers call the same servers).

A spec (dict) holds:

* ``name``: ``e0``, ``e1``... (for reading only; the configuration names an
  extender by its URL).
* ``filter``: ``{"reject": [logical nodes], "message": str, "unresolvable": bool}``
  (the nodes it refuses, with FailedNodes' or FailedAndUnresolvableNodes' message),
  or absent.
* ``prioritize``: ``{"scores": {logical node: 0..10}, "weight": 1..5}``, or absent.
* ``preempt``: ``{"keep": [logical nodes]}``: of the candidates preemption offers,
  the ones it keeps (with their victims unchanged), or absent.
* ``nodeCacheCapable``: whether it is sent node names (else whole Nodes).
* ``managedResources``: ``[]`` or ``[{"name": example.com/gpu, "ignoredByScheduler":
  bool}]``: only pods asking for the GPU are sent to it; with ignoredByScheduler,
  NodeResourcesFit leaves the GPU to it. At most one spec manages the GPU
  (kube-scheduler refuses a resource managed twice).
* ``ignorable``: whether its failures are skipped.
* ``fails``: absent, or ``{"how": "error"|"timeout", "pods": [pod names] | None}``:
  for those pods (None: every pod) each of its verbs answers HTTP 500, or answers
  only after ``SLOW_SECONDS``, past its ``httpTimeout`` (``TIMEOUT``).

No spec has a bindVerb: a binding extender must create the pods/binding itself
(tests/integration/test_run_extenders.py covers that).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from tests.differential.generator.vocabulary import GPU

# A timing-out extender's httpTimeout, and how long its rule waits before answering.
# Short, so that runs stay fast; far apart, so that a loaded machine neither makes a
# prompt answer late nor a late one in time.
TIMEOUT = "300ms"
SLOW_SECONDS = 1.0

MESSAGES = (
    "node(s) are outside the extender's pool",
    "node(s) failed the extender's licence check",
    "node(s) are drained by the extender",
)


def _some(rng: random.Random, names: Sequence[str], most: int) -> list[str]:
    return sorted(rng.sample(list(names), k=rng.randint(0, min(most, len(names)))))


def extender_spec(
    rng: random.Random,
    i: int,
    nodes: Sequence[str],
    pods: Sequence[str],
    *,
    manage_gpu: bool,
) -> dict[str, Any]:
    """Extender I of a scenario with logical NODES and PODS."""
    spec: dict[str, Any] = {"name": f"e{i}"}
    verbs = rng.choice((("filter",), ("prioritize",), ("filter", "prioritize"), ("preempt",)))
    if rng.random() < 0.3 and "preempt" not in verbs:
        verbs = (*verbs, "preempt")
    if "filter" in verbs:
        spec["filter"] = {
            # Never all of them: a scenario where no node passes says little.
            "reject": _some(rng, nodes, max(1, len(nodes) // 2)),
            "message": rng.choice(MESSAGES),
            "unresolvable": rng.random() < 0.3,
        }
    if "prioritize" in verbs:
        spec["prioritize"] = {
            "scores": {n: rng.randint(0, 10) for n in nodes},
            "weight": rng.randint(1, 5),
        }
    if "preempt" in verbs:
        spec["preempt"] = {"keep": _some(rng, nodes, len(nodes))}
    spec["nodeCacheCapable"] = rng.random() < 0.5
    spec["managedResources"] = (
        [{"name": GPU, "ignoredByScheduler": rng.random() < 0.4}] if manage_gpu else []
    )
    spec["ignorable"] = rng.random() < 0.35
    roll = rng.random()
    if roll < 0.2:
        spec["fails"] = {"how": "error", "pods": _some(rng, pods, 2) or [pods[0]]}
    elif roll < 0.28:
        spec["fails"] = {"how": "error", "pods": None}
    elif roll < 0.42:
        spec["fails"] = {"how": "timeout", "pods": _some(rng, pods, 2) or [pods[-1]]}
    return spec


def extenders(
    rng: random.Random, nodes: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """1–3 extender specs for a scenario's nodes and pods."""
    node_names = [n["name"] for n in nodes]
    pod_names = [p["name"] for p in pods]
    count = rng.randint(1, 3)
    gpu_owner = rng.randrange(count) if rng.random() < 0.5 else -1
    return [
        extender_spec(rng, i, node_names, pod_names, manage_gpu=i == gpu_owner)
        for i in range(count)
    ]


def extender_config(spec: dict[str, Any], url: str) -> dict[str, Any]:
    """The configuration file's entry (Extender in config/v1) for SPEC served at URL."""
    entry: dict[str, Any] = {"urlPrefix": url}
    if "filter" in spec:
        entry["filterVerb"] = "filter"
    if "prioritize" in spec:
        entry["prioritizeVerb"] = "prioritize"
        entry["weight"] = spec["prioritize"]["weight"]
    if "preempt" in spec:
        entry["preemptVerb"] = "preempt"
    entry["nodeCacheCapable"] = spec["nodeCacheCapable"]
    if spec["managedResources"]:
        entry["managedResources"] = [dict(r) for r in spec["managedResources"]]
    entry["ignorable"] = spec["ignorable"]
    if (spec.get("fails") or {}).get("how") == "timeout":
        entry["httpTimeout"] = TIMEOUT
    return entry


def extender_configs(specs: Sequence[dict[str, Any]], urls: Sequence[str]) -> list[dict[str, Any]]:
    """The `extenders:` list for SPECS served at URLS (one each, in order)."""
    if len(specs) != len(urls):
        raise ValueError(f"{len(specs)} extenders but {len(urls)} URLs")
    return [extender_config(s, u) for s, u in zip(specs, urls, strict=True)]
