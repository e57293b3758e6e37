"""Queue quotas (Volcano capacity / capacity-card): every queue level holds its limit.

    # Σ_{t : q ∈ queues(t)} use_td · Σ_{c,k} x[t, c, k] ≤ headroom[q, d]
for every queue q on a pending job's path and every quota dimension d with a finite
headroom (realCapability − allocated at the start of the cycle), `use_td` being
`Problem.type_quota_demand`. A card dimension (capacity-card) counts the cards of the pods
on the node classes whose card type it is:

    # Σ_{t : q ∈ queues(t)} Σ_{c : card(t, c) = d} cards_t · Σ_k x[t, c, k] ≤ headroom[q, d]

so a pod with alternatives `A|B` uses the quota of the card type of the node it lands on.
Because the rows sum over every job in the call, several jobs placed together share each
queue's headroom exactly. `guards[q]`, when given, enforces queue q's rows only if that
literal holds (explanations).
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
    card_dims = {d for dims in problem.type_card_dims for d in dims}
    for q in range(len(problem.queue_names)):
        types = [t for t in range(problem.num_types) if q in problem.type_queues[t]]
        for d in range(len(problem.quota_dims)):
            limit = int(problem.queue_headroom[q, d])
            if limit >= QUOTA_UNLIMITED:
                continue
            parts = [
                int(problem.type_quota_demand[t, d]) * v.type_total(t)
                for t in types
                if problem.type_quota_demand[t, d] > 0
            ]
            if d in card_dims:
                cards = {t: int(problem.type_card_count[t]) for t in types}
                parts += [
                    cards[t] * var
                    for (t, c, _k), var in v.x.items()
                    if t in cards and problem.type_node_card[t, v.classes[c].nodes[0]] == d
                ]
            if not parts:
                continue
            ct = model.add(cp_model.LinearExpr.sum(parts) <= limit)
            if guards is not None and q in guards:
                ct.only_enforce_if(guards[q])
    return []
