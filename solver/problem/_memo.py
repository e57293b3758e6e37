"""What a greedy fill reads of a pod type on every node — its slots and scores — and the
memos that keep them per pod shape: across one greedy run (`FillMemo`), and across the
calls on one snapshot (`SharedRows`)."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from solver.problem._problem import Block, FloatArray, IntArray, Problem
from solver.problem._shared import SharedRows, _Entry

__all__ = ["MAX_SHAPES", "FillMemo", "SharedRows", "slots_of"]

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


def _shared_key(problem: Problem, t: int) -> Hashable | None:
    """What a type's rows depend on besides its eligibility and static score rows and the
    node table: the resource axis, its demand and every usage-dependent score's settings;
    None when a block scores by usage without saying what it reads (`Block.score_key`)."""
    scoring: list[Hashable] = []
    for block in problem.blocks.values():
        if type(block).node_scores is not Block.node_scores:
            key = block.score_key()
            if key is None:
                return None
            scoring.append((type(block).__name__, key))
    return (problem.resources, problem.type_demand[t].tobytes(), tuple(scoring))


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

    With the Problem's `shared_rows` (a snapshot's), a shape is looked up there on its
    first fill: a 1-pod call then pays for comparing rows, not for computing them.
    """

    def __init__(self, problem: Problem, free: IntArray) -> None:
        self.problem = problem
        self.free = free
        self.shared = problem.shared_rows if isinstance(problem.shared_rows, SharedRows) else None
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
            if self.shared is not None and self._kept < MAX_SHAPES:
                shared = self._from_shared(t, free)
                if shared is not None:
                    self._kept += 1
                    self._shapes[key] = shared
                    return shared.slots, shared.score
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
        entry.catch_up(problem, t, free)
        return entry.slots, entry.score

    def _from_shared(self, t: int, free: IntArray) -> _Shape | None:
        """The shape's rows from the snapshot's memo, brought up to `free`; computed and
        stored there when it has none for these rows. None: this Problem's scores cannot
        be shared."""
        assert self.shared is not None
        problem = self.problem
        key = _shared_key(problem, t)
        if key is None:
            return None
        eligible, static = problem.eligible[t], problem.static_score[t]
        found = self.shared.find(key, eligible, static)
        if found is None:
            slots = slots_of(problem, t, free)
            score = problem.node_scores(t, problem.capacity - free)
            found = _Entry(eligible.copy(), static.copy(), free.copy(), slots, score)
            self.shared.put(key, found)
            return _Shape(found.seen, found.slots, found.score, owned=False)
        shape = _Shape(found.seen, found.slots, found.score, owned=False)
        if shape.catch_up(problem, t, free) and np.array_equal(free, problem.free):
            # the call's own start differs from the entry's: keep the newer rows shared
            self.shared.put(key, _Entry(found.eligible, found.static, *shape.frozen_copy()))
        return shape


class _Shape:
    """A shape's rows in one greedy run; `owned` False while they are a shared entry's
    (copied before the first change)."""

    __slots__ = ("owned", "score", "seen", "slots")

    def __init__(
        self, seen: IntArray, slots: IntArray, score: FloatArray, *, owned: bool = True
    ) -> None:
        self.seen, self.slots, self.score = seen, slots, score
        self.owned = owned

    def catch_up(self, problem: Problem, t: int, free: IntArray) -> bool:
        """Bring the rows up to `free` on the nodes whose room changed; True if any did."""
        if np.array_equal(free, self.seen):
            return False
        # One flat comparison: `.any(axis=1)` over [N, R] booleans costs 8x more.
        width = free.shape[1]
        changed = np.unique(np.flatnonzero(free.reshape(-1) != self.seen.reshape(-1)) // width)
        if not self.owned:
            self.seen, self.slots, self.score = (
                self.seen.copy(),
                self.slots.copy(),
                self.score.copy(),
            )
            self.owned = True
        rows = np.take(free, changed, axis=0)
        self.seen[changed] = rows
        self.slots[changed] = slots_of(problem, t, free, changed)
        used = np.take(problem.capacity, changed, axis=0) - rows
        self.score[changed] = problem.node_scores(t, used, changed)
        return True

    def frozen_copy(self) -> tuple[IntArray, IntArray, FloatArray]:
        return self.seen.copy(), self.slots.copy(), self.score.copy()
