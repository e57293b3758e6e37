"""Gangs and GangGroups in the CP-SAT model: all or nothing, minMember shares, the tiers.

    # Σ_{c,k} x[t, c, k] ≤ |pods of type t|
    # placed_g = Σ_{t ∈ g} Σ_{c,k} x[t, c, k]
    # gang_on[g] ⇒ placed_g ≥ need_g;   placed_g ≤ pending_g · gang_on[g]     (need_g > 0)
    # Σ_{t ∈ T_m} Σ_{c,k} x[t, c, k] ≥ need_m · gang_on[g]   for each minimum m of gang g
    #   (Volcano's task roles: `Problem.gang_minimums`)
    # placed_g > 0 ⇒ gang_on[h]  for every gang h that g requires (its `groups` list)
    # unit_on[u] ≤ Σ_{g ∈ u, need_g > 0} gang_on[g] + Σ_{g ∈ u, need_g = 0} placed_g
A blocked gang (too few members, missing group member) places nothing.

Objective terms: `placed_groups` = Σ_u rank(priority_u) · unit_on[u] and
`placed_pods` = Σ_g placed_g (objective.py defines the same tiers for every engine).
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.problem import Problem, unit_weights
from solver.sat import PlacementVars, Term

__all__ = ["build"]


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    # Σ_{c,k} x[t, c, k] ≤ pods of type t: each pod is placed at most once
    for t, pods in enumerate(problem.type_pods):
        model.add(v.type_total(t) <= len(pods))
    totals = [v.gang_total(g) for g in range(len(problem.gang_ids))]
    for g, placed in enumerate(totals):
        need = int(problem.gang_need[g])
        pending = int(problem.gang_pending[g])
        on = v.gang_on[g]
        if isinstance(on, int):
            continue  # no pending pods: nothing to place, `on` is a constant
        if problem.gang_blocked[g] is not None:
            model.add(placed == 0)
            model.add(on == 0)
            continue
        if need > 0:
            model.add(placed >= need).only_enforce_if(on)
            model.add(placed <= pending * on)
            for m in problem.minimums(g):
                role = cp_model.LinearExpr.sum([v.type_total(t) for t in m.types])
                model.add(role >= m.need * on)
        else:
            model.add(on == 1)
    for g, h in problem.gang_requires:
        model.add(totals[g] <= int(problem.gang_pending[g]) * v.gang_on[h])
    # unit_on[u] ≤ Σ_{g ∈ u, need_g > 0} gang_on[g] + Σ_{g ∈ u, need_g = 0} placed_g
    # (a placed pod lies in a satisfied gang, or in one placed pod by pod); tighter in the
    # LP relaxation than "unit_on ⇒ Σ placed ≥ 1", since gang_on forces need_g pods of room.
    witnesses: list[list[cp_model.LinearExprT]] = [[] for _ in problem.unit_ids]
    for g, placed in enumerate(totals):
        if problem.gang_pending[g] == 0 or problem.gang_blocked[g] is not None:
            continue
        on = v.gang_on[g]
        witnesses[int(problem.gang_unit[g])].append(on if problem.gang_need[g] > 0 else placed)
    for u, unit in enumerate(v.unit_on):
        if not isinstance(unit, int):
            model.add(unit <= cp_model.LinearExpr.sum(witnesses[u]))
    weights = unit_weights(problem).tolist()
    return [
        Term(
            "placed_groups",
            cp_model.LinearExpr.sum([w * on for w, on in zip(weights, v.unit_on, strict=True)]),
        ),
        Term("placed_pods", cp_model.LinearExpr.sum(totals)),
    ]
