"""The greedy's search for a unit's sub-groups, each in one domain of its own
(`subgroups.py`), inside one of the unit's NodeGroups.

For every sub-group, outer first (KAI's `allocateSubGroupSet`):

1. its candidate domains are those of its level inside what its parent holds (the NodeGroup
   for a top sub-group), ordered by
   1. the unit's packing order of their free room (KAI's `sortTree`: most packed first),
   2. their name (KAI's tree order, `sortDomainInfos`);
   a domain whose free room cannot hold the sub-group's pods is tried last;
2. in the first domain, its own sub-groups are placed the same way, then its other pods
   fill the NodeGroup's circles inside the domain; the first domain where every pod below
   it lands wins; else the next is tried, after a rollback of what the try placed;
3. no domain holds it all: the domain where most of its pods land is taken (a gang may
   still be placed with fewer than all of its pods), and the first such shortfall is the
   unit's reason;
4. inside the domain (all the parent's nodes without a required level), a sub-group with a
   preferred level tries one domain of that level that holds it all, in the same order,
   then one of each coarser level, then the whole domain; its pods fill the domains of its
   preferred level there the most room first (KAI's node score for the sub-group).

then each leaf sub-group's minMember is filled first among the pods under no domain of
their own (`fill_minimums`), before the NodeGroup's usual fill takes the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.topology.godel.affinity import GodelPlan
from solver.features.topology.workload_api.subgroups import SubDomain
from solver.problem import BoolArray, IntArray, Problem, Tracker, fill

__all__ = ["NestedFill"]


@dataclass
class NestedFill:
    """One NodeGroup's try: `chosen` nodes per type, `free` room as pods land."""

    problem: Problem
    plan: GodelPlan
    circles: list[IntArray]
    free: IntArray
    tracker: Tracker
    metrics: tuple[IntArray, IntArray]  # Godel's [N, 3] allocatable and requested at the start
    chosen: dict[int, list[int]] = field(default_factory=dict)
    failure: str = ""

    def __post_init__(self) -> None:
        self.in_group = np.zeros(self.problem.num_nodes, dtype=bool)
        for circle in self.circles:
            self.in_group[circle] = True
        subs = self.plan.sub_domains
        self.children = {
            i: [j for j, s in enumerate(subs) if s.parent == i] for i in range(-1, len(subs))
        }
        self.below = {i: self._below(i) for i in range(len(subs))}

    def _below(self, i: int) -> set[int]:
        return set(self.plan.sub_domains[i].types)

    @property
    def nested_types(self) -> set[int]:
        return {t for s in self.plan.sub_domains for t in s.types}

    def run(self) -> None:
        """Every sub-group of the unit, top ones in order."""
        for i in self.children[-1]:
            self._place(i, self.in_group)

    # ------------------------------------------------------------------ one sub-group

    def _place(self, i: int, allowed: BoolArray) -> None:
        sub = self.plan.sub_domains[i]
        if sub.blocked:
            self.failure = self.failure or f"sub-group {sub.name}: {sub.blocked}"
            return
        usable = allowed & (sub.domain >= 0)
        best: tuple[int, int] = (-1, -1)
        fitting, short = self._order(sub, sub.domain, sub.names, usable)
        for d in fitting + short:  # the short ones only for a best partial placement
            mask = usable & (sub.domain == d)
            saved = self._save(i)
            self._fill_preferring(i, mask)
            placed = self._placed(i)
            if placed == self._wanted(i):
                return
            if placed > best[0]:
                best = (placed, d)
            self._restore(i, saved)
        want = self._wanted(i)
        if not self.failure and sub.required:
            self.failure = (
                f"sub-group {sub.name}: no {sub.level} domain holds its {want} pod(s)"
                + (f" (best {sub.names[best[1]]}: {best[0]})" if best[1] >= 0 else "")
            )
        if best[1] >= 0 and best[0] > 0:
            self._fill_preferring(i, usable & (sub.domain == best[1]))

    def _fill_preferring(self, i: int, mask: BoolArray) -> None:
        """Inside `mask`, one domain of the sub-group's finest preferred level whose room
        holds all of it, else one of the next level up, ..., else `mask` itself (KAI's
        relevant levels for a preference, `calculateRelevantDomainLevels`)."""
        sub = self.plan.sub_domains[i]
        for row, names in sub.preferred:
            fitting, _ = self._order(sub, row, names, mask & (row >= 0))
            for d in fitting:
                saved = self._save(i)
                self._fill_below(i, mask & (row == d))
                if self._placed(i) == self._wanted(i):
                    return
                self._restore(i, saved)
        self._fill_below(i, mask)

    def _fill_below(self, i: int, mask: BoolArray) -> None:
        for j in self.children[i]:
            self._place(j, mask)
        done = set().union(*(self.below[j] for j in self.children[i]))
        sub = self.plan.sub_domains[i]
        parts = [mask]
        if sub.preferred:  # its finest preferred domains, the most room first (KAI's score)
            row, names = sub.preferred[0]
            fitting, short = self._order(sub, row, names, mask & (row >= 0))
            parts = [mask & (row == d) for d in reversed(fitting + short)] + [mask & (row < 0)]
        for t in sub.types:
            if t not in done:
                for part in parts:
                    self.fill_type(t, part)

    def fill_minimums(self) -> None:
        """Each leaf sub-group's minMember first, for its pods under no domain of their own
        (KAI allocates a job's minimum before its elastic pods)."""
        nested = self.nested_types
        for m in self.plan.sub_minimums:
            left = m.need - sum(len(self.chosen.get(t, [])) for t in m.types)
            for t in m.types:
                if left > 0 and t not in nested:
                    before = len(self.chosen.get(t, []))
                    self.fill_type(t, limit=left)
                    left -= len(self.chosen[t]) - before

    def fill_type(self, t: int, mask: BoolArray | None = None, limit: int | None = None) -> None:
        """Type t's pods not yet placed (at most `limit`), circle by circle (inside `mask`)."""
        picked = self.chosen.setdefault(t, [])
        remaining = len(self.problem.type_pods[t]) - len(picked)
        if limit is not None:
            remaining = min(remaining, limit)
        for circle in self.circles:
            if remaining <= 0:
                break
            nodes = circle if mask is None else circle[mask[circle]]
            got = fill(self.problem, t, remaining, self.free, nodes, self.tracker)
            picked.extend(got.tolist())
            remaining -= int(got.size)

    def _order(
        self, sub: SubDomain, row: IntArray, names: tuple[str, ...], usable: BoolArray
    ) -> tuple[list[int], list[int]]:
        """The domains of `row` (the sub-group's required or a preferred level) in the module
        docstring's order: (those whose free room can hold the sub-group's pods, the
        others); one pass over the usable nodes."""
        at = np.flatnonzero(usable)
        if at.size == 0:
            return [], []
        values, ids = np.unique(row[at], return_inverse=True)
        k = values.size
        need = np.zeros(self.free.shape[1], dtype=np.int64)
        for t in sub.types:
            left = len(self.problem.type_pods[t]) - len(self.chosen.get(t, []))
            need += self.problem.type_demand[t] * left
        room = _sums(ids, np.maximum(self.free[at], 0), k)
        alloc, used = self.metrics
        cap, held = _sums(ids, alloc[at], k), _sums(ids, used[at], k)
        fits: BoolArray = np.all(room >= need, axis=1)
        keys = [
            (self.plan.domain_key(cap[i], held[i]), names[d], d, bool(fits[i]))
            for i, d in enumerate(values.tolist())
        ]
        keys.sort()
        return [k_[2] for k_ in keys if k_[3]], [k_[2] for k_ in keys if not k_[3]]

    # ------------------------------------------------------------------ bookkeeping

    def _placed(self, i: int) -> int:
        return sum(len(self.chosen.get(t, [])) for t in self.below[i])

    def _wanted(self, i: int) -> int:
        return sum(len(self.problem.type_pods[t]) for t in self.below[i])

    def _save(self, i: int) -> tuple[IntArray, object, dict[int, list[int]]]:
        kept = {t: list(self.chosen.get(t, [])) for t in self.below[i]}
        return self.free.copy(), self.tracker.checkpoint(), kept

    def _restore(self, i: int, saved: tuple[IntArray, object, dict[int, list[int]]]) -> None:
        free, tracked, kept = saved
        self.free[:] = free
        self.tracker.restore(tracked)
        self.chosen.update(kept)


def _sums(ids: IntArray, values: IntArray, k: int) -> IntArray:
    """[k, C] the rows of `values` summed by their id."""
    out = np.zeros((k, values.shape[1]), dtype=np.int64)
    np.add.at(out, ids, values)
    return out
