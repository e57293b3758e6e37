"""The objective every engine is scored by (DESIGN §3), as named tiers.

Tiers, highest first; a higher tier dominates every lower one:

1. `placed_groups` — Σ over gang groups with at least one pod placed of the group's
   priority rank (1 for the lowest distinct pending priority, 2 for the next, ...);
2. `placed_pods` — pods placed;
3. `affinity` — Σ over placed pods of round(100 × the static policy score of its node)
   (node-group affinity, ...), present when some score is non-zero;
4. `opened_nodes` (fewer is better) — nodes without any bound pod that receive pods: the
   fragmentation tie-break, keeping whole nodes free for the next big job.

Each tier is weighted by the product of (range + 1) of the tiers below it, so a unit of
any tier outweighs everything below it: with P pending pods, N nodes and affinity range A,
`objective = ((placed_groups × (P + 1) + placed_pods) × (A + 1) + affinity − A_min) × (N + 1) − opened_nodes`
(without scores A = 0 and the affinity factor vanishes). The CP-SAT engine maximises
exactly this (`engines/cpsat/_terms.py`). Later features add their tiers here.
"""

from __future__ import annotations

import numpy as np

from solver.problem import IntArray, Problem

__all__ = ["evaluate", "score_units", "unit_weights"]


def score_units(score: float) -> int:
    """A policy score as the integer the objective counts (hundredths)."""
    return round(100 * score)


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
    units = np.rint(100 * problem.static_score).astype(np.int64)
    affinity = sum(int(units[t, nodes[nodes >= 0]].sum()) for t, nodes in enumerate(pod_node))
    counts = np.array([len(p) for p in problem.type_pods], dtype=np.int64)
    lo = int((counts * np.minimum(units.min(axis=1, initial=0), 0)).sum()) if units.size else 0
    hi = int((counts * np.maximum(units.max(axis=1, initial=0), 0)).sum()) if units.size else 0
    top = (placed_groups * (num_pods + 1) + placed_pods) * (hi - lo + 1) + affinity - lo
    tiers = {
        "objective": top * (num_nodes + 1) - opened,
        "placed_groups": placed_groups,
        "placed_pods": placed_pods,
    }
    if hi or lo:
        tiers["affinity"] = affinity
    tiers["opened_nodes"] = opened
    return tiers
