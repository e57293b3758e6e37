"""The objective every engine is scored by (DESIGN §3), as named tiers.

Tiers, highest first; a higher tier dominates every lower one:

1. `placed_groups` — Σ over gang groups with at least one pod placed of the group's
   priority rank (1 for the lowest distinct pending priority, 2 for the next, ...);
2. `placed_pods` — pods placed;
3. `opened_nodes` (fewer is better) — nodes without any bound pod that receive pods: the
   fragmentation tie-break, keeping whole nodes free for the next big job.

`objective = (placed_groups × (P + 1) + placed_pods) × (N + 1) − opened_nodes` for P
pending pods and N nodes, so each tier outweighs everything below it. The CP-SAT engine
maximises exactly this (`engines/cpsat/_terms.py`). Later features add their tiers here.
"""

from __future__ import annotations

import numpy as np

from solver.problem import IntArray, Problem

__all__ = ["evaluate", "unit_weights"]


def unit_weights(problem: Problem) -> IntArray:
    """Priority rank of each unit among the distinct unit priorities, starting at 1."""
    distinct = np.unique(problem.unit_priority)
    return np.searchsorted(distinct, problem.unit_priority).astype(np.int64) + 1


def evaluate(problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
    placed_per_unit = np.zeros(len(problem.unit_ids), dtype=np.int64)
    placed_pods = 0
    for t, nodes in enumerate(pod_node):
        count = int((nodes >= 0).sum())
        placed_pods += count
        placed_per_unit[problem.gang_unit[problem.type_gang[t]]] += count
    placed_groups = int(unit_weights(problem)[placed_per_unit > 0].sum())
    touched = np.zeros(problem.num_nodes, dtype=bool)
    for nodes in pod_node:
        touched[nodes[nodes >= 0]] = True
    empty = np.all(problem.free == problem.capacity, axis=1)
    opened = int((touched & empty).sum())
    num_pods, num_nodes = problem.num_pods, problem.num_nodes
    return {
        "objective": (placed_groups * (num_pods + 1) + placed_pods) * (num_nodes + 1) - opened,
        "placed_groups": placed_groups,
        "placed_pods": placed_pods,
        "opened_nodes": opened,
    }
