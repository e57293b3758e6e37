"""What a greedy fill reads of a pod type on every node — its slots and scores — and the
memo that keeps them per pod shape across one greedy run."""

from __future__ import annotations

import numpy as np

from solver.problem._problem import FloatArray, IntArray, Problem

__all__ = ["MAX_SHAPES", "FillMemo", "slots_of"]

MAX_SHAPES = 16
"""The most pod shapes one greedy run keeps slots and scores for."""


def slots_of(problem: Problem, t: int, free: IntArray, nodes: IntArray | None = None) -> IntArray:
    """Pods of type t each node (of `nodes`, default all) still takes alone: the minimum
    over requested resources of ⌊free / demand⌋, 0 where the type is not eligible."""
    demand = problem.type_demand[t]
    positive = demand > 0
    # np.take: a row gather several times faster than fancy indexing
    pool = free if nodes is None else np.take(free, nodes, axis=0)
    eligible = problem.eligible[t] if nodes is None else problem.eligible[t, nodes]
    if not positive.any():
        big = np.iinfo(np.int64).max
        return np.where(eligible, big, 0).astype(np.int64)
    slots = np.min(np.maximum(pool[:, positive], 0) // demand[positive], axis=1)
    return np.where(eligible, slots, 0).astype(np.int64)


class FillMemo:
    """Slots and scores of each pod shape on every node, kept across one greedy run's fills
    of one `free` array and brought up to date only on the nodes whose room changed since.

    A shape is what `fill` reads of a type: its demand, its eligibility row and its static
    score row (shared rows, `Rows.of_type`). 1,000 gangs of one shape in a call then pay for
    the nodes their predecessors used, not O(nodes × resources) each. A shape is kept from
    its second fill on, so a call with one gang of a shape pays nothing extra. Any change
    to `free` (fills, rollbacks, a feature's own step) is found by comparing rows, so the
    memo never needs to be told. At most `MAX_SHAPES` shapes are kept (each holds a copy of
    `free`: ~0.5 MB at 10,000 nodes), the first seen twice; the others are filled afresh.
    """

    def __init__(self, problem: Problem, free: IntArray) -> None:
        self.problem = problem
        self.free = free
        self._shapes: dict[tuple[int, int, bytes], _Shape | None] = {}
        self._kept = 0

    def rows(self, t: int, free: IntArray) -> tuple[IntArray, FloatArray] | None:
        """([N] slots, [N] scores) of type t now; None when not memoised (yet)."""
        if free is not self.free:
            return None
        problem = self.problem
        key = (
            int(problem.eligible.of_type[t]),
            int(problem.static_score.of_type[t]),
            problem.type_demand[t].tobytes(),
        )
        if key not in self._shapes:
            self._shapes[key] = None
            return None
        entry = self._shapes[key]
        if entry is None:
            if self._kept >= MAX_SHAPES:
                return None  # bounded memory: a call of many shapes fills them afresh
            self._kept += 1
            seen = free.copy()
            slots = slots_of(problem, t, free)
            score = problem.node_scores(t, problem.capacity - free)
            self._shapes[key] = _Shape(seen, slots, score)
            return slots, score
        # One flat comparison: `.any(axis=1)` over [N, R] booleans costs 8x more.
        width = free.shape[1]
        changed = np.unique(np.flatnonzero(free.reshape(-1) != entry.seen.reshape(-1)) // width)
        if changed.size:
            rows = np.take(free, changed, axis=0)
            entry.seen[changed] = rows
            entry.slots[changed] = slots_of(problem, t, free, changed)
            used = np.take(problem.capacity, changed, axis=0) - rows
            entry.score[changed] = problem.node_scores(t, used, changed)
        return entry.slots, entry.score


class _Shape:
    __slots__ = ("score", "seen", "slots")

    def __init__(self, seen: IntArray, slots: IntArray, score: FloatArray) -> None:
        self.seen, self.slots, self.score = seen, slots, score
