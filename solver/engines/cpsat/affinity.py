"""Soft affinities (DESIGN §3 tier 4): the static policy scores of the chosen nodes.

    # affinity = Σ_{t,c,k} round(100 · score[t, c]) · x[t, c, k]
Scores come from `Problem.static_score` (node-group +100/+50/−1, ...), identical on every
node of a class; `solver.objective` scores every engine's answer the same way.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.problem import Problem, score_units
from solver.sat import PlacementVars, Term

__all__ = ["build"]


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    parts = []
    for (t, c, _k), var in v.x.items():
        weight = score_units(float(problem.static_score[t, v.classes[c].nodes[0]]))
        if weight:
            parts.append(weight * var)
    return [Term("affinity", cp_model.LinearExpr.sum(parts))] if parts else []
