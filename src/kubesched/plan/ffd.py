"""cluster-autoscaler's answer to "how many nodes", as the comparison.

cluster-autoscaler's scale-up (core/scaleup/orchestrator) asks, for each node
group, its BinpackingNodeEstimator how many new nodes the pending pods need
(estimator/binpacking_estimator.go, Estimate): the pods are ordered by
DecreasingPodOrderer (a score of cpu and memory, each relative to the template
node's allocatable, largest first), and each pod goes on the first new node it
fits, else on a new node while the group's maximum allows; a pod that fits no
new node stays pending. An expander then picks one of the groups' options, the
group is scaled, and the next loop takes the pods still pending. Here every
option is computed on the same pods, and the choice is the lowest cost per pod
helped (nodes per pod when no pool has a price), then the most pods, then the
pool's order: a simplification in the spirit of the price expander, not a port
of it (which also weighs node sizes against the cluster's).

"Fits" is what the packing model says (resources per column, the pod count,
host ports, required anti-affinity between the pending pods), on classes whose
pools the profile's filters chose (demand.py), so that this answer is a
solution of the model: the solver starts from it and is never worse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from kubesched.plan.demand import HOSTNAME, Demands

Domain = tuple[str, str]  # (topology key, value); the hostname's value is the node's index


@dataclass(slots=True)
class NewNode:
    pool: int
    pods: dict[int, int] = field(default_factory=dict)  # class -> pods of it here
    free: dict[int, int] = field(default_factory=dict)  # column -> room left


@dataclass(slots=True)
class Packing:
    """New nodes and the pods on them (per class); the pods left out per class."""

    nodes: list[NewNode] = field(default_factory=list)
    left: dict[int, int] = field(default_factory=dict)
    # Pods of each class per anti-affinity domain (for the rules' checks).
    domains: dict[tuple[int, Domain], int] = field(default_factory=dict)

    def copy(self) -> Packing:
        return Packing(
            [NewNode(n.pool, dict(n.pods), dict(n.free)) for n in self.nodes],
            dict(self.left),
            dict(self.domains),
        )

    def count(self, pool: int) -> int:
        return sum(1 for n in self.nodes if n.pool == pool)


class Fit:
    """Whether a pod of a class may join a new node, as the packing model says."""

    def __init__(self, demands: Demands) -> None:
        self.demands = demands
        # The classes packed: some pool hosts them, and their constraints are modelled.
        self.packed = [c for c, cls in enumerate(demands.classes) if cls.pools and not cls.held]
        # The classes packed: some pool hosts them, and their constraints are modelled.
        self.packed = [c for c, cls in enumerate(demands.classes) if cls.pools and not cls.held]
        self.conflicts: dict[int, set[int]] = {}
        for i, j in demands.port_conflicts:
            self.conflicts.setdefault(i, set()).add(j)
            self.conflicts.setdefault(j, set()).add(i)
        self.rules_of: dict[int, list[int]] = {}
        for r, rule in enumerate(demands.rules):
            for c in {rule.owner, *rule.matched}:
                self.rules_of.setdefault(c, []).append(r)

    def domain(self, key: str, index: int, pool: int) -> Domain | None:
        """The anti-affinity domain of new node `index` (of `pool`) for `key`: the
        node itself for the hostname, the pool's label value otherwise (None: the
        node has no such label, and is in no domain)."""
        if key == HOSTNAME:
            return (key, f"#{index}")
        value = self.demands.labels[pool].get(key)
        return None if value is None else (key, value)

    def fits(self, packing: Packing, c: int, index: int) -> bool:
        node = packing.nodes[index]
        cls = self.demands.classes[c]
        if any(node.free.get(col, 0) < amount for col, amount in cls.requests.items()):
            return False
        if cls.host_ports and (
            node.pods.get(c, 0) or any(node.pods.get(j, 0) for j in self.conflicts.get(c, ()))
        ):
            return False
        for r in self.rules_of.get(c, ()):
            rule = self.demands.rules[r]
            domain = self.domain(rule.topology_key, index, node.pool)
            if domain is None:
                continue
            own = packing.domains.get((rule.owner, domain), 0) + (c == rule.owner)
            others = sum(packing.domains.get((m, domain), 0) for m in rule.matched)
            others += c in rule.matched
            if own and others > (rule.owner in rule.matched):
                return False
        return True

    def place(self, packing: Packing, c: int, index: int) -> None:
        node = packing.nodes[index]
        node.pods[c] = node.pods.get(c, 0) + 1
        for col, amount in self.demands.classes[c].requests.items():
            node.free[col] = node.free.get(col, 0) - amount
        for r in self.rules_of.get(c, ()):
            domain = self.domain(self.demands.rules[r].topology_key, index, node.pool)
            if domain is not None:
                packing.domains[(c, domain)] = packing.domains.get((c, domain), 0) + 1

    def new_node(self, packing: Packing, pool: int) -> int:
        packing.nodes.append(NewNode(pool, {}, dict(self.demands.room[pool])))
        return len(packing.nodes) - 1


def pod_order(demands: Demands, classes: Sequence[int], pool: int) -> list[int]:
    """DecreasingPodOrderer.calculatePodScore: cpu / the template's allocatable cpu +
    memory / its allocatable memory, largest first (stable, where upstream's
    sort.Slice is not). The requests are the pod's effective ones (init
    containers and overhead counted), where upstream sums its containers'."""
    cols = {name: col for col, name in demands.columns.items()}
    room = demands.room[pool]

    def score(c: int) -> float:
        total = 0.0
        for name in ("cpu", "memory"):
            col = cols.get(name)
            if col is not None and room.get(col, 0) > 0:
                total += demands.classes[c].requests.get(col, 0) / room[col]
        return total

    return sorted(classes, key=lambda c: -score(c))


def binpack(
    fit: Fit, packing: Packing, pool: int, wanted: Mapping[int, int], limit: int | None
) -> tuple[Packing, dict[int, int]]:
    """BinpackingNodeEstimator.Estimate for one pool: the pods of `wanted` (class ->
    count) on new nodes of `pool` added to `packing` (a copy is returned), at most
    `limit` of them; and the pods placed per class."""
    out = packing.copy()
    mine: list[int] = []
    placed: dict[int, int] = {}
    usable = [c for c in wanted if pool in fit.demands.classes[c].pools]
    for c in pod_order(fit.demands, usable, pool):
        # Nodes only fill up: one a pod of c did not fit will not take the next one.
        # The scan resumes where the last pod of c went (first fit all the same).
        at = 0
        for _ in range(wanted[c]):
            while at < len(mine) and not fit.fits(out, c, mine[at]):
                at += 1
            target = mine[at] if at < len(mine) else None
            if target is None:
                if limit is not None and len(mine) >= limit:
                    continue
                index = fit.new_node(out, pool)
                if not fit.fits(out, c, index):
                    # An empty node does not take it either (a domain is full): the
                    # estimator adds no node for it.
                    out.nodes.pop()
                    continue
                mine.append(index)
                target = index
            fit.place(out, c, target)
            placed[c] = placed.get(c, 0) + 1
    return out, placed


def estimate(
    fit: Fit,
    wanted: Mapping[int, int],
    prices: Sequence[Decimal | None],
    limits: Sequence[int | None],
    start: Packing | None = None,
) -> Packing:
    """cluster-autoscaler's scale-up loop over the pools (see the module's
    docstring): new nodes until every pod of `wanted` is placed or no pool helps;
    `limits` are the new nodes each pool may still get."""
    packing = Packing() if start is None else start.copy()
    left = {c: n for c, n in wanted.items() if n > 0}
    room = list(limits)
    while left:
        best: tuple[tuple[Decimal, int, int], Packing, dict[int, int], int] | None = None
        for pool in range(len(room)):
            limit = room[pool]
            if limit is not None and limit <= 0:
                continue
            option, placed = binpack(fit, packing, pool, left, limit)
            helped = sum(placed.values())
            if not helped:
                continue
            added = len(option.nodes) - len(packing.nodes)
            price = prices[pool]
            cost = Decimal(added) * (Decimal(1) if price is None else price)
            key = (cost / helped, -helped, pool)
            if best is None or key < best[0]:
                best = (key, option, placed, added)
        if best is None:
            break
        _, packing, placed, added = best
        pool = packing.nodes[-1].pool
        if room[pool] is not None:
            room[pool] = max(0, (room[pool] or 0) - added)
        for c, n in placed.items():
            left[c] -= n
            if not left[c]:
                del left[c]
    packing.left = left
    return packing
