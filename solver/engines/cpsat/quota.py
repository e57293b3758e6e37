"""Queue quotas (Volcano capacity plugin): every queue level holds its realCapability.

    # Σ_{t : q ∈ queues(t)} d_tr · Σ_{c,k} x[t, c, k] ≤ headroom[q, r]
for every queue q on a pending job's path and every resource r with a finite headroom
(realCapability − allocated at the start of the cycle). Because the rows sum over every
job in the call, several jobs placed together share each queue's headroom exactly.
`guards[q]`, when given, enforces queue q's rows only if that literal holds (explanations).
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.engines.cpsat._terms import Term
from solver.engines.cpsat._vars import PlacementVars
from solver.problem import QUOTA_UNLIMITED, Problem

__all__ = ["build"]


def build(
    problem: Problem,
    model: cp_model.CpModel,
    v: PlacementVars,
    guards: dict[int, cp_model.IntVar] | None = None,
) -> list[Term]:
    for q in range(len(problem.queue_names)):
        types = [t for t in range(problem.num_types) if q in problem.type_queues[t]]
        for r in range(len(problem.resources)):
            limit = int(problem.queue_headroom[q, r])
            if limit >= QUOTA_UNLIMITED:
                continue
            terms = [
                (int(problem.type_demand[t, r]), t) for t in types if problem.type_demand[t, r] > 0
            ]
            if not terms:
                continue
            ct = model.add(
                cp_model.LinearExpr.sum([d * v.type_total(t) for d, t in terms]) <= limit
            )
            if guards is not None and q in guards:
                ct.only_enforce_if(guards[q])
    return []
