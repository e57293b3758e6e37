"""PodDisruptionBudgets (`pdb`), re-derived from the budgets and the running pods.

For every budget: the running pods of its namespace its selector matches (a missing or empty
selector matches none), less those in its `status.disruptedPods`; the Decision's victims
among them are at most its allowance (`status.disruptionsAllowed`, else the disruption
controller's derivation from the spec over the selected pods, `allowed_disruptions`).
"""

from __future__ import annotations

import numpy as np

from solver.model import DisruptionBudget, allowed_disruptions
from solver.snapshot import TERMINATING, Snapshot
from solver.verify._context import VerifyContext

__all__ = ["budget_pods", "disruption_budgets"]


def budget_pods(snapshot: Snapshot, budget: DisruptionBudget) -> tuple[list[str], int]:
    """The keys of the running pods the budget counts (its namespace, its selector — a
    missing or empty one matches none —, not in its `disruptedPods`) and its allowance."""
    selector = budget.selector
    if selector is None or selector.empty:
        return [], 0
    running = snapshot.running
    rows = running.rows()
    here = rows[running.namespace[rows] == running.namespace_names.get(budget.namespace)]
    sets = running.label_sets
    matching = {
        i: selector.matches(sets[i]) for i in np.unique(running.label_set[here]).tolist() if i >= 0
    }  # each distinct label set once
    selected = [r for r in here.tolist() if matching.get(int(running.label_set[r]), False)]
    healthy = sum(1 for r in selected if not running.flags[r] & TERMINATING)
    gone = set(budget.disrupted_pods)
    counted = [k for r in selected if (k := running.key(r)).partition("/")[2] not in gone]
    return counted, allowed_disruptions(budget, healthy)


def disruption_budgets(ctx: VerifyContext) -> list[str]:
    if not ctx.evicted or not ctx.snapshot.budgets:
        return []
    problems = []
    for key, budget in ctx.snapshot.budgets.items():
        counted, allowed = budget_pods(ctx.snapshot, budget)
        evicted = [k for k in counted if k in ctx.evicted]
        if len(evicted) > allowed:
            problems.append(
                f"PodDisruptionBudget {key}: {len(evicted)} pod(s) evicted "
                f"({', '.join(sorted(evicted)[:3])}), {allowed} allowed"
            )
    return problems
