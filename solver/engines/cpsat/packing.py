"""Fragmentation tie-break: open as few empty nodes as possible (keep whole nodes free).

Aggregated empty class c with slots s:      # opened_c · s ≥ x[t, c],  0 ≤ opened_c ≤ K
Empty `patterns` class c:                    # opened_c = Σ_p n[c, p]
Virtual node k of an empty multi-type class: # used_ck ⇔ Σ_t x[t, c, k] ≥ 1
Symmetry breaking among virtual nodes:       # load_c,k ≥ load_c,k+1
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.problem import Problem
from solver.sat import PlacementVars, Term

__all__ = ["build"]


def build(problem: Problem, model: cp_model.CpModel, v: PlacementVars) -> list[Term]:
    opened: list[cp_model.LinearExprT] = []
    for c, klass in enumerate(v.classes):
        if klass.aggregated:
            if klass.empty:
                (t,) = klass.types
                o = model.new_int_var(0, len(klass.nodes), f"opened[{c}]")
                model.add(o * klass.slots >= v.x[t, c, 0])
                v.opened[c] = o
                opened.append(o)
            continue
        if klass.mode == "patterns":
            if klass.empty:  # opened_c = Σ_p n[c, p]
                v.opened[c] = cp_model.LinearExpr.sum(
                    [v.n[c, p] for p in range(len(klass.patterns))]
                )
                opened.append(v.opened[c])
            continue
        loads = [v.class_load(c, k) for k in range(klass.virtual)]
        for k in range(klass.virtual - 1):
            model.add(loads[k] >= loads[k + 1])
        if klass.empty:
            used = [model.new_bool_var(f"used[{c},{k}]") for k in range(klass.virtual)]
            v.used.update({(c, k): u for k, u in enumerate(used)})
            for k, load in enumerate(loads):
                model.add(load >= 1).only_enforce_if(used[k])
                model.add(load == 0).only_enforce_if(~used[k])
            v.opened[c] = sum(used, start=cp_model.LinearExpr.constant(0))
            opened.append(v.opened[c])
    return [Term("opened_nodes", cp_model.LinearExpr.sum(opened))]
