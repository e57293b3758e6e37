"""Node-group resource limits in the CP-SAT model: one row per (queue, group) limit and
listed resource.

    # Σ_{t : queue(t) = q} use[t, d] · Σ_{c ⊆ g, k} x[t, c, k] ≤ headroom[(q, g), d]
for every limit (q, g) and resource d it lists (headroom = limit − running use), and, when a
group is already over its limit on some listed resource (the limit was lowered), no pod of
q on g at all — the compile step has already made such nodes ineligible, so those rows only
guard. Node classes never span two groups (`class_split`), so every x lies in one group.
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from solver.features.nodegroup.limits import NodeGroupLimitBlock
from solver.problem import IntArray, Problem
from solver.sat import PlacementVars, Term

__all__ = ["build", "class_split"]


def class_split(problem: Problem) -> list[IntArray]:
    """A node class lies within one node group when limits are in play."""
    block = problem.block(NodeGroupLimitBlock)
    return [block.node_group] if block is not None else []


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    block = problem.block(NodeGroupLimitBlock)
    if block is None:
        return []
    keys: dict[int, IntArray] = {}  # queue row -> [N] limit per node
    on_key: dict[int, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for (t, c, _k), var in v.x.items():
        row = int(block.type_queue[t])
        if row < 0:
            continue
        if row not in keys:
            keys[row] = block.node_key(t)
        key = int(keys[row][v.classes[c].nodes[0]])
        if key >= 0:
            on_key[key].append((t, var))
    finite = block.finite
    for key, items in sorted(on_key.items()):
        for d in range(len(block.dims)):
            if not finite[key, d]:
                continue
            limit = int(block.headroom[key, d])
            if limit < 0:
                for _t, var in items:
                    model.add(var == 0)
                continue
            parts = [int(block.type_use[t, d]) * var for t, var in items if block.type_use[t, d]]
            if parts:
                model.add(cp_model.LinearExpr.sum(parts) <= limit)
    return []
