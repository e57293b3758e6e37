"""Capacity: per node and resource, placed pods fit the node's free room.

Aggregated class c (one pod type t, K nodes of s slots each):
    # x[t, c] ≤ K · ⌊free_r / d_tr⌋  for every resource r the type requests
(the minimum over r is exactly K·s). Virtual node k of a multi-type class c:
    # Σ_t x[t, c, k] · d_tr ≤ free_cr  for every resource r some type requests
`guards[r]`, when given, enforces resource r's rows only if that literal holds (used to
explain infeasibility).
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.problem import Problem
from solver.sat import PlacementVars, Term

__all__ = ["build"]


def build(
    problem: Problem,
    model: cp_model.CpModel,
    v: PlacementVars,
    guards: dict[int, cp_model.IntVar] | None = None,
) -> list[Term]:
    for c, klass in enumerate(v.classes):
        if klass.mode == "patterns":
            continue  # every pattern fits one node by construction
        if klass.aggregated:
            (t,) = klass.types
            for r, d in enumerate(problem.type_demand[t].tolist()):
                if d > 0:
                    ct = model.add(v.x[t, c, 0] <= len(klass.nodes) * (int(klass.free[r]) // d))
                    if guards is not None:
                        ct.only_enforce_if(guards[r])
            continue
        for r in range(len(problem.resources)):
            demands = [(t, int(problem.type_demand[t, r])) for t in klass.types]
            if all(d <= 0 for _, d in demands):
                continue
            for k in range(klass.virtual):
                ct = model.add(
                    sum(d * v.x[t, c, k] for t, d in demands if d > 0) <= int(klass.free[r])
                )
                if guards is not None:
                    ct.only_enforce_if(guards[r])
    return []
