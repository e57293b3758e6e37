"""Volcano's `pdb` plugin: no victim set goes beyond a PodDisruptionBudget.

Ported from `pkg/scheduler/plugins/pdb/pdb.go`. A budget selects the running pods of its
namespace its selector matches (a missing or empty selector: none, as the plugin reads it);
a pod already in the budget's `status.disruptedPods` is not counted again. The budget
allows `status.disruptionsAllowed` evictions, or, for a manifest without status, what the
disruption controller would derive from its spec over the pods it selects
(`solver.model.allowed_disruptions`).

Volcano filters each node's candidate victims in turn against a fresh copy of the budgets
(`pdbFilterFn`), so victims on two nodes may together exceed one. gangplan keeps one
budget across the whole cycle: every plan of every job (preemption and reclaim, greedy and
CP-SAT) together evicts at most `allowed` pods a budget counts (`BudgetLedger`); `verify`
re-derives the budgets and checks the Decision's victims.

On when the conf lists `pdb` (Volcano's default conf does not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features._base import CompileContext, Feature
from solver.model import DisruptionBudget, allowed_disruptions
from solver.problem import BoolArray, IntArray
from solver.snapshot import TERMINATING, Snapshot

__all__ = ["FEATURE", "Budget", "BudgetLedger", "budget_rows", "victim_budgets"]


@dataclass(frozen=True)
class Budget:
    """One PodDisruptionBudget over the call's potential victims: `members` index the
    victims it counts; at most `allowed` of them may go."""

    key: str
    members: IntArray
    allowed: int


def budget_rows(snapshot: Snapshot, budget: DisruptionBudget) -> tuple[IntArray, IntArray]:
    """The live running rows the budget selects, and among them those it counts (not
    already in its `disruptedPods`); memoised per snapshot generation."""
    return snapshot.memo(("pdb", "rows", budget), lambda: _budget_rows(snapshot, budget))


def _budget_rows(snapshot: Snapshot, budget: DisruptionBudget) -> tuple[IntArray, IntArray]:
    running = snapshot.running
    if budget.selector is None or budget.selector.empty:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    namespace = running.namespace_names.get(budget.namespace)
    verdicts = running.label_set_verdicts(("pdb", budget.selector), budget.selector.matches)
    rows = running.rows()
    sets = running.label_set[rows]
    chosen = rows[(running.namespace[rows] == namespace) & (sets >= 0)]
    chosen = chosen[verdicts[running.label_set[chosen]]]
    gone = set(budget.disrupted_pods)
    counted = np.array(
        [r for r in chosen.tolist() if running.key(r).partition("/")[2] not in gone],
        dtype=np.int64,
    )
    return chosen, counted


def _counted(snapshot: Snapshot) -> list[IntArray]:
    return [budget_rows(snapshot, b)[1] for b in snapshot.budgets.values()]


def victim_budgets(snapshot: Snapshot, conf: SchedulerConf, rows: IntArray) -> tuple[Budget, ...]:
    """Each budget's members among the potential victims `rows` and its allowance; none
    unless the conf lists `pdb`."""
    if not conf.enabled(Plugin.PDB) or not snapshot.budgets:
        return ()
    running = snapshot.running
    high = int(max(rows.max(initial=-1), *(c.max(initial=-1) for c in _counted(snapshot))))
    position = np.full(high + 1, -1, dtype=np.int64)  # running row -> its victim index
    position[rows] = np.arange(rows.size, dtype=np.int64)
    out = []
    for key, budget in snapshot.budgets.items():
        selected, counted = budget_rows(snapshot, budget)
        healthy = int(((running.flags[selected] & TERMINATING) == 0).sum())
        members = np.sort(position[counted])
        members = members[members >= 0]
        if members.size:
            out.append(Budget(key, members, allowed_disruptions(budget, healthy)))
    return tuple(out)


class BudgetLedger:
    """What is left of each budget over one cycle's plans, and the potential victims it
    holds back: of a budget with k evictions left, only its k first members still
    standing (lower priority first, then pod key) stay candidates."""

    def __init__(
        self,
        budgets: tuple[Budget, ...],
        priority: IntArray,
        keys: Callable[[IntArray], list[str]],
    ) -> None:
        self.budgets = budgets
        self.left = [b.allowed for b in budgets]
        self._order: list[list[int]] = []
        for b in budgets:
            if b.allowed >= b.members.size:  # it can never hold a pod back
                self._order.append([])
                continue
            names = np.array(keys(b.members))
            self._order.append(b.members[np.lexsort((names, priority[b.members]))].tolist())

    def held(self, removed: BoolArray) -> BoolArray:
        """[V] the members no plan may take now (`removed`: victims already taken)."""
        out = np.zeros(removed.shape[0], dtype=bool)
        for order, left in zip(self._order, self.left, strict=True):
            standing = [v for v in order if not removed[v]]
            out[standing[max(left, 0) :]] = True
        return out

    def over(self, victims: Iterable[int]) -> str | None:
        """Why evicting `victims` goes beyond a budget, None when it does not."""
        chosen = set(victims)
        for b, left in zip(self.budgets, self.left, strict=True):
            taken = int(sum(1 for v in b.members.tolist() if v in chosen))
            if taken > left:
                return f"evicting {taken} pod(s) of PodDisruptionBudget {b.key} ({left} allowed)"
        return None

    def charge(self, victims: Iterable[int]) -> None:
        chosen = set(victims)
        for i, b in enumerate(self.budgets):
            self.left[i] -= int(sum(1 for v in b.members.tolist() if v in chosen))


def _compile(ctx: CompileContext) -> None:
    """Nothing per type (budgets bind the victims of preemption, `features.preemption`);
    budgets the conf does not act on are noted."""
    if ctx.snapshot.budgets and not ctx.conf.enabled(Plugin.PDB):
        ctx.notes.append(
            f"{len(ctx.snapshot.budgets)} PodDisruptionBudget(s) not acted on: the conf does "
            "not list the `pdb` plugin (with it, preemption keeps every victim set within them)"
        )


FEATURE = Feature(name="pdb", plugins=(Plugin.PDB,), compile=_compile, always=True)
