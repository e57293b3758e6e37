"""PodDisruptionBudgets (`pdb`), re-derived from the budgets and the running pods.

For every budget: the running pods of its namespace its selector matches (a missing or empty
selector matches none), less those in its `status.disruptedPods`; the Decision's victims
among them are at most its allowance (`status.disruptionsAllowed`, else the disruption
controller's derivation from the spec over the selected pods, `allowed_disruptions`).
"""

from __future__ import annotations

import numpy as np

from solver.model import allowed_disruptions
from solver.snapshot import TERMINATING
from solver.verify._context import VerifyContext

__all__ = ["disruption_budgets"]


def disruption_budgets(ctx: VerifyContext) -> list[str]:
    if not ctx.evicted or not ctx.snapshot.budgets:
        return []
    running = ctx.snapshot.running
    rows = running.rows()
    sets = running.label_sets
    problems = []
    for key, budget in ctx.snapshot.budgets.items():
        selector = budget.selector
        if selector is None or selector.empty:
            continue
        ns = running.namespace_names.get(budget.namespace)
        here = rows[running.namespace[rows] == ns]
        matching = {
            i: selector.matches(sets[i])
            for i in np.unique(running.label_set[here]).tolist()
            if i >= 0
        }  # each distinct label set once
        selected = [r for r in here.tolist() if matching.get(int(running.label_set[r]), False)]
        healthy = sum(1 for r in selected if not running.flags[r] & TERMINATING)
        gone = set(budget.disrupted_pods)
        evicted = [
            k
            for r in selected
            if (k := running.key(r)) in ctx.evicted and k.partition("/")[2] not in gone
        ]
        allowed = allowed_disruptions(budget, healthy)
        if len(evicted) > allowed:
            problems.append(
                f"PodDisruptionBudget {key}: {len(evicted)} pod(s) evicted "
                f"({', '.join(sorted(evicted)[:3])}), {allowed} allowed"
            )
    return problems
