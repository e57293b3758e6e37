"""KAI's queue order (`queue_order.go` `GetQueueOrderResult`), criteria 1-8 of `mode.py`.

Sibling queues are compared, each with its subtree's use, its fair share, quota and limit,
and the best job of its subtree (what it asks for to start: its gang's minMember pods, or
one pod) — as KAI walks its queue tree from the top (`kai_order`), re-sorting after every
job it pops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cmp_to_key
from typing import TYPE_CHECKING, Protocol

import numpy as np

from solver.features.queues import ROOT, QueueTree
from solver.features.queues.mode import MAX_COMPARISONS
from solver.model import KAI_RESOURCES, KAI_UNLIMITED

if TYPE_CHECKING:
    from solver.features._base import CompileContext

__all__ = [
    "MAX_COMPARISONS",
    "KaiOrder",
    "allocatable_share",
    "dominant_share",
    "kai_order",
    "less_equal",
]

NO_SHARE_PENALTY = 1000.0
"""KAI's `noFairShareDrfMultiplier`: the dominant share of a use with no allocatable share."""

Amounts = Mapping[str, float]


class KaiNumbers(Protocol):
    """What the order reads of the call's `KaiMode`."""

    fair: dict[str, dict[str, float]]

    def from_dims(self, amounts: Mapping[str, int]) -> dict[str, float]: ...

    def kai_numbers(self, tree: QueueTree, name: str, field: str) -> dict[str, float]: ...


def allocatable_share(quota: Amounts, fair: Amounts, limit: Amounts) -> dict[str, float]:
    """`GetAllocatableShare`: max(quota, fair share) capped by the limit; an unlimited
    quota gives the limit (-1: unlimited)."""
    out = {}
    for r in KAI_RESOURCES:
        if quota[r] == KAI_UNLIMITED:
            out[r] = limit[r]
            continue
        value = max(quota[r], fair.get(r, 0.0))
        out[r] = value if limit[r] == KAI_UNLIMITED else min(limit[r], value)
    return out


def dominant_share(allocated: Amounts, allocatable: Amounts, total: Amounts) -> float:
    """`GetDominantResourceShare`: the largest allocated / allocatable over the resources."""
    best = 0.0
    for r in KAI_RESOURCES:
        room = total[r] if allocatable[r] == KAI_UNLIMITED else allocatable[r]
        value = allocated[r] * NO_SHARE_PENALTY if room == 0 else allocated[r] / room
        best = max(best, value)
    return best


def _compare(a: float, b: float) -> int:
    """`compareQuantities`: -1 (unlimited) is the largest."""
    if a == KAI_UNLIMITED or b == KAI_UNLIMITED:
        return 0 if a == b else (1 if a == KAI_UNLIMITED else -1)
    return (a > b) - (a < b)


def less_equal(a: Amounts, b: Amounts) -> bool:
    return all(_compare(a[r], b[r]) <= 0 for r in KAI_RESOURCES)


def _first(a: bool, b: bool) -> int:
    """-1 when only a holds, 1 when only b holds, else 0."""
    return (b and not a) - (a and not b)


class KaiOrder:
    """Criteria 1-8 between two queues, each with the job it would start (none: zeros)."""

    def __init__(self, mode: KaiNumbers, tree: QueueTree) -> None:
        self.mode, self.tree = mode, tree
        self.total = mode.from_dims(tree.queues[ROOT].capability)
        self._numbers: dict[str, tuple[Amounts, Amounts, Amounts, Amounts]] = {}
        self._keys: dict[str, dict[int, tuple[bool, bool, bool, float, float]]] = {}

    def count(self, leaf: str, ask: Amounts) -> None:
        """A job of `leaf` allocated: its ask counts in the leaf and every ancestor."""
        for name in self.tree.path(leaf):
            if name == ROOT:
                continue
            self._keys.pop(name, None)
            held, fair, quota, allocatable = self._of(name)
            self._numbers[name] = (
                {r: held[r] + ask.get(r, 0.0) for r in KAI_RESOURCES},
                fair,
                quota,
                allocatable,
            )

    def _of(self, name: str) -> tuple[Amounts, Amounts, Amounts, Amounts]:
        """(allocated, fair share, quota, allocatable share) of a queue's subtree."""
        if name not in self._numbers:
            mode, tree = self.mode, self.tree
            fair = mode.fair.get(name, {})
            quota = mode.kai_numbers(tree, name, "quota")
            limit = mode.kai_numbers(tree, name, "limit")
            held = mode.from_dims(tree.queues[name].allocated)
            self._numbers[name] = (held, fair, quota, allocatable_share(quota, fair, limit))
        return self._numbers[name]

    def _kept(self, name: str, job: int, ask: Amounts) -> tuple[bool, bool, bool, float, float]:
        mine = self._keys.setdefault(name, {})
        if job not in mine:
            mine[job] = self._key(name, ask)
        return mine[job]

    def _key(self, name: str, ask: Amounts) -> tuple[bool, bool, bool, float, float]:
        held, fair, quota, allocatable = self._of(name)
        with_job = {r: held[r] + ask.get(r, 0.0) for r in KAI_RESOURCES}
        return (
            all(fair.get(r, 0.0) < held[r] for r in KAI_RESOURCES),  # 1 over its fair share
            less_equal(with_job, quota),  # 2 within its quota with the job
            any(allocatable[r] == 0 and with_job[r] > 0 for r in KAI_RESOURCES),  # 4
            dominant_share(with_job, allocatable, self.total),  # 5
            dominant_share(held, allocatable, self.total),  # 6
        )

    def compare(
        self, qa: str, qb: str, ask_a: Amounts, ask_b: Amounts, jobs: tuple[int, int] | None = None
    ) -> int:
        """Negative: the job of `qa` first (compared where the queues' paths part). With
        `jobs` (the two jobs' ids) the queues are siblings and their keys are kept until
        `count` changes what the queue holds."""
        if jobs is None:
            a, b = self.tree.parting(qa, qb)
            ka, kb = self._key(a, ask_a), self._key(b, ask_b)
        else:
            a, b = qa, qb
            ka, kb = self._kept(a, jobs[0], ask_a), self._kept(b, jobs[1], ask_b)
        sa, sb = self.tree.queues[a], self.tree.queues[b]
        steps = (
            _first(not ka[0], not kb[0]),  # 1
            _first(ka[1], kb[1]),  # 2
            _first(sa.priority > sb.priority, sb.priority > sa.priority),  # 3
            _first(not ka[2], not kb[2]),  # 4
            (ka[3] > kb[3]) - (ka[3] < kb[3]),  # 5
            (ka[4] > kb[4]) - (ka[4] < kb[4]),  # 6
            _smaller_share(self._of(a)[3], self._of(b)[3]),  # 7
        )
        for step in steps:
            if step:
                return step
        created = [q.spec.kai.created if q.spec and q.spec.kai else "" for q in (sa, sb)]
        ta, tb = (created[0] or "~", a), (created[1] or "~", b)  # 8
        return (ta > tb) - (ta < tb)


def kai_order(
    mode: KaiNumbers, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
) -> list[int]:
    """Units in KAI's order (`JobsOrderByQueues.PopNextJob`): from the root, the best child
    queue by criteria 1-8 (each with the best job of its subtree), down to a leaf, whose
    next job in job order goes next; that job's ask is then counted in its queue and every
    ancestor before the next pick, as KAI re-sorts after each allocation (each job taken to
    be allocated). Units of no leaf queue of the tree come last, in job order."""
    ask = _unit_asks(mode, ctx)
    in_tree = [  # jobs of a queue with children wait (KAI schedules leaf queues only)
        u
        for u, q in enumerate(unit_queue)
        if q in tree.queues and q != ROOT and not tree.queues[q].children
    ]
    others = sorted((u for u in range(len(unit_queue)) if u not in set(in_tree)), key=ctx.unit_key)
    jobs: dict[str, list[int]] = {}
    for u in sorted(in_tree, key=ctx.unit_key, reverse=True):  # popped from the end
        jobs.setdefault(str(unit_queue[u]), []).append(u)
    left: dict[str, int] = {}
    for leaf, units in jobs.items():
        for name in tree.path(leaf):
            left[name] = left.get(name, 0) + len(units)
    widest = max((len(q.children) for q in tree.queues.values()), default=1)
    order = KaiOrder(mode, tree)
    if len(in_tree) * max(widest, 1) > MAX_COMPARISONS:

        def once(u: int, v: int) -> int:
            if unit_queue[u] != unit_queue[v]:
                return order.compare(str(unit_queue[u]), str(unit_queue[v]), ask[u], ask[v])
            ku, kv = ctx.unit_key(u), ctx.unit_key(v)
            return (ku > kv) - (ku < kv)

        return sorted(in_tree, key=cmp_to_key(once)) + others
    best: dict[str, str] = {}  # queue -> its best child with jobs (invalidated on a pop)

    def head(name: str) -> int:
        while name in best or tree.queues[name].children:
            name = pick(name)
        return jobs[name][-1]

    def pick(name: str) -> str:
        if name not in best:
            kids = [c for c in tree.queues[name].children if left.get(c, 0) > 0]
            choice = kids[0]
            for c in kids[1:]:
                hc, hb = head(c), head(choice)
                if order.compare(c, choice, ask[hc], ask[hb], (hc, hb)) < 0:
                    choice = c
            best[name] = choice
        return best[name]

    out: list[int] = []
    while left.get(ROOT, 0) > 0:
        name = ROOT
        while tree.queues[name].children:
            name = pick(name)
        u = jobs[name].pop()
        out.append(u)
        for q in tree.path(name):
            left[q] -= 1
            best.pop(q, None)
        order.count(name, ask[u])
    return out + others


def _unit_asks(mode: KaiNumbers, ctx: CompileContext) -> list[dict[str, float]]:
    """What each unit asks to start: its gangs' minMember pods still to place (one pod
    without all-or-nothing), in KAI amounts."""
    plan = ctx.gangs
    demand = np.asarray(ctx.type_demand, dtype=np.int64).reshape(ctx.num_types, len(ctx.resources))
    asks = np.zeros((len(plan.unit_ids), len(ctx.resources)), dtype=np.int64)
    left = [
        need if need > 0 else min(1, pending)
        for need, pending in zip(plan.need, plan.pending, strict=True)
    ]
    for t, g in enumerate(ctx.type_gang):
        n = min(left[g], len(ctx.type_pods[t]))
        left[g] -= n
        asks[plan.unit[g]] += demand[t] * n
    return [mode.from_dims(dict(zip(ctx.resources, row.tolist(), strict=True))) for row in asks]


def _smaller_share(a: Amounts, b: Amounts) -> int:
    """Criterion 7 (`prioritizeBasedOnAllocatableShare`)."""
    a_less = not less_equal(b, a) and less_equal(a, b)
    b_less = not less_equal(a, b) and less_equal(b, a)
    return _first(a_less, b_less)
