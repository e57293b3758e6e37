"""What every greedy step shares: fill pods of one type onto the best nodes, and count why
a pod fits nowhere the way kube-scheduler counts it."""

from __future__ import annotations

import numpy as np

from solver.problem._greedy import Tracker
from solver.problem._memo import FillMemo, slots_of
from solver.problem._problem import BoolArray, FloatArray, IntArray, Problem

__all__ = ["FillMemo", "NoLimits", "fill", "fit_report", "format_fit_error", "slots_of"]


def fill(
    problem: Problem,
    t: int,
    count: int,
    free: IntArray,
    nodes: IntArray | None = None,
    tracker: Tracker | None = None,
    memo: FillMemo | None = None,
) -> IntArray:
    """Node index for up to `count` pods of type `t` (on `nodes`, default all), best score
    first (ties: lower node index), each node filled to its slots; updates `free`.

    Placing pods of one type one by one gives the same nodes: only the node that just
    received a pod changes score, and binpack only raises it. Not so for a type whose pods
    constrain each other (`tracker`): those go one at a time. `memo` (the greedy run's,
    for its `free`) keeps the slots and scores of the type's shape between fills.
    """
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    if tracker is not None and tracker.involved(t):
        return _fill_tracked(problem, t, count, free, nodes, tracker)
    memoised = memo.rows(t, free) if memo is not None else None
    if memoised is None:
        slots = slots_of(problem, t, free, nodes)
        keep = slots > 0
        candidates = np.flatnonzero(keep) if nodes is None else nodes[keep]
        slots = slots[keep]
        if candidates.size == 0:
            return np.empty(0, dtype=np.int64)
        used = np.take(problem.capacity, candidates, axis=0) - np.take(free, candidates, axis=0)
        score = problem.node_scores(t, used, candidates)
    else:
        every_slot, every_score = memoised
        slots = every_slot if nodes is None else np.take(every_slot, nodes)
        keep = slots > 0
        candidates = np.flatnonzero(keep) if nodes is None else nodes[keep]
        if candidates.size == 0:
            return np.empty(0, dtype=np.int64)
        slots = slots[keep]
        score = np.take(every_score, candidates)
    order = _best_first(score, candidates, count)
    ordered, room = candidates[order], slots[order]
    take = np.minimum(room, np.maximum(count - (np.cumsum(room) - room), 0))
    chosen = ordered[take > 0]
    take = take[take > 0]
    free[chosen] -= take[:, None] * problem.type_demand[t][None, :]
    return np.repeat(chosen, take)


def _fill_tracked(
    problem: Problem, t: int, count: int, free: IntArray, nodes: IntArray | None, tracker: Tracker
) -> IntArray:
    """`fill`, one pod at a time among the nodes the tracker allows after each placement.
    Slots and scores move only on the node that received the pod."""
    pool = np.arange(problem.num_nodes) if nodes is None else nodes
    slots = slots_of(problem, t, free, pool)
    used = np.take(problem.capacity, pool, axis=0) - np.take(free, pool, axis=0)
    score = problem.node_scores(t, used, pool)
    demand = problem.type_demand[t]
    chosen: list[int] = []
    for _ in range(count):
        allowed = (slots > 0) & (tracker.verdict(t)[pool] == 0)
        if not allowed.any():
            break
        within = np.flatnonzero(allowed)
        moving = tracker.score(t)
        total = score if moving is None else score + moving[pool]
        best = within[np.lexsort((pool[within], -total[within]))[0]]
        node = int(pool[best])
        free[node] -= demand
        tracker.place(t, node)
        chosen.append(node)
        slots[best] = slots_of(problem, t, free, pool[best : best + 1])[0]
        used_row = problem.capacity[node : node + 1] - free[node : node + 1]
        score[best] = problem.node_scores(t, used_row, pool[best : best + 1])[0]
    return np.array(chosen, dtype=np.int64)


def _best_first(score: FloatArray, candidates: IntArray, count: int) -> IntArray:
    """Indices of the first `count` (or more) candidates by score descending, ties by lower
    node index: each holds at least one pod, so no later one is reached. Sorting only the
    candidates at or above the count-th best score is O(nodes), not O(nodes log nodes)."""
    if count < score.size:
        # one pod: the best score is the max (a pass, not a partition)
        kth = score.max() if count == 1 else np.partition(score, score.size - count)[-count]
        if np.isfinite(kth):
            within = np.flatnonzero(score >= kth)
            return within[np.lexsort((candidates[within], -score[within]))]
    return np.lexsort((candidates, -score))


def fit_report(
    problem: Problem, t: int, free: IntArray, tracker: Tracker | None = None
) -> tuple[BoolArray, dict[str, int]]:
    """Nodes where one pod of type `t` fits now, and kube-style counted reasons for the rest.

    A node lacking several resources counts once under each (`Insufficient cpu`,
    `Insufficient memory`), as kube-scheduler's FitError does; a node with room that the
    call's own pods rule out (`tracker`) counts under that rule.
    """
    demand = problem.type_demand[t]
    short = (free < demand) & (demand > 0)  # [N, R]
    eligible = problem.eligible[t]
    fits = eligible & ~short.any(axis=1)
    counts: dict[str, int] = {}
    codes, code_counts = np.unique(problem.ineligible_reason[t][~eligible], return_counts=True)
    for code, count in zip(codes.tolist(), code_counts.tolist(), strict=True):
        counts[problem.reason_texts[code]] = count
    lacking = short[eligible].sum(axis=0)
    for r, count in enumerate(lacking.tolist()):
        if count:
            counts[f"Insufficient {problem.resources[r]}"] = count
    if tracker is not None and tracker.involved(t):
        verdict = tracker.verdict(t)
        ruled_out = fits & (verdict > 0)
        codes, code_counts = np.unique(verdict[ruled_out], return_counts=True)
        for code, count in zip(codes.tolist(), code_counts.tolist(), strict=True):
            text = problem.reason_texts[code]
            counts[text] = counts.get(text, 0) + count
        fits = fits & ~ruled_out
    return fits, counts


def format_fit_error(num_nodes: int, counts: dict[str, int]) -> str:
    """`0/8 nodes are available: 3 Insufficient nvidia.com/gpu, 5 node(s) were unschedulable.`"""
    if not counts:
        return f"0/{num_nodes} nodes are available."
    parts = ", ".join(f"{n} {text}" for text, n in sorted(counts.items(), key=lambda kv: kv[0]))
    return f"0/{num_nodes} nodes are available: {parts}."


class NoLimits:
    """The ledger when no quota is in play."""

    def cap(self, t: int, count: int, card: int | None = None) -> tuple[int, str | None]:
        return count, None

    def charge(self, t: int, n: int, card: int | None = None) -> None:
        return None

    def admits(self, pod_node: dict[int, IntArray]) -> str | None:
        return None

    def charge_plan(self, pod_node: dict[int, IntArray]) -> None:
        return None

    def checkpoint(self) -> object:
        return None

    def restore(self, saved: object) -> None:
        return None

    def fill(
        self,
        problem: Problem,
        t: int,
        count: int,
        free: IntArray,
        tracker: Tracker | None,
        memo: FillMemo | None = None,
    ) -> tuple[IntArray, int, str | None]:
        return fill(problem, t, count, free, tracker=tracker, memo=memo), count, None
