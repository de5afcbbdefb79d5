"""Capacity planning: `kubesched plan --add-nodes` (planner.py), which new nodes the
pending pods need, and `kubesched plan --remove-nodes` (removal.py), which nodes
can go."""

from kubesched.plan.planner import PlanResult, plan_add_nodes
from kubesched.plan.pools import NodePool, PoolsError, load_pools, parse_pools
from kubesched.plan.removal import RemovalResult, plan_remove_nodes

__all__ = [
    "NodePool",
    "PlanResult",
    "PoolsError",
    "RemovalResult",
    "load_pools",
    "parse_pools",
    "plan_add_nodes",
    "plan_remove_nodes",
]
