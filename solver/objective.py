"""The objective every engine is scored by (DESIGN §3), as named tiers.

Tiers, highest first; a higher tier dominates every lower one:

1. `placed_groups` — Σ over gang groups with at least one pod placed of the group's
   priority rank (1 for the lowest distinct pending priority, 2 for the next, ...);
2. `placed_pods` — pods placed.

`objective = placed_groups × (pending pods + 1) + placed_pods`, so one more group of
any priority outweighs every extra pod. Later features add their tiers here.
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
    return {
        "objective": placed_groups * (problem.num_pods + 1) + placed_pods,
        "placed_groups": placed_groups,
        "placed_pods": placed_pods,
    }
