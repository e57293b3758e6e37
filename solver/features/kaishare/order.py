"""KAI's queue order (`queue_order.go` `GetQueueOrderResult`), criteria 1-8 of `mode.py`.

Two jobs of different queues are compared at the level where their queue paths part: the
two sibling queues there, each with its subtree's use, its fair share, quota and limit, and
the job (what it asks for to start: its gang's minMember pods, or one pod) — as KAI walks
its queue tree from the top, comparing siblings by their next job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from solver.features.queues import ROOT, QueueTree
from solver.model import KAI_RESOURCES, KAI_UNLIMITED

if TYPE_CHECKING:
    from solver.features._base import CompileContext

__all__ = [
    "KaiOrder",
    "allocatable_share",
    "dominant_share",
    "kai_unit_cmp",
    "less_equal",
    "parting",
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

    def compare(self, qa: str, qb: str, ask_a: Amounts, ask_b: Amounts) -> int:
        """Negative: the job of `qa` first (compared where the queues' paths part)."""
        a, b = parting(self.tree, qa, qb)
        ka, kb = self._key(a, ask_a), self._key(b, ask_b)
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


def kai_unit_cmp(
    mode: KaiNumbers, ctx: CompileContext, tree: QueueTree, unit_queue: Sequence[str | None]
) -> Callable[[int, int], int]:
    """The comparison of two units of different queues (negative: u first); a unit's job is
    what its gangs need to start (their minMember pods still to place, else one pod)."""
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
    job = [mode.from_dims(dict(zip(ctx.resources, row.tolist(), strict=True))) for row in asks]
    order = KaiOrder(mode, tree)

    def cmp(u: int, v: int) -> int:
        qa, qb = unit_queue[u], unit_queue[v]
        assert qa is not None and qb is not None
        return order.compare(qa, qb, job[u], job[v])

    return cmp


def _smaller_share(a: Amounts, b: Amounts) -> int:
    """Criterion 7 (`prioritizeBasedOnAllocatableShare`)."""
    a_less = not less_equal(b, a) and less_equal(a, b)
    b_less = not less_equal(a, b) and less_equal(b, a)
    return _first(a_less, b_less)


def parting(tree: QueueTree, qa: str | None, qb: str | None) -> tuple[str, str]:
    """The two sibling queues where the paths of `qa` and `qb` part."""
    assert qa is not None and qb is not None
    pa = [*tree.queues[qa].ancestors, qa]
    pb = [*tree.queues[qb].ancestors, qb]
    depth = 0
    while depth < min(len(pa), len(pb)) and pa[depth] == pb[depth]:
        depth += 1
    return (pa[depth] if depth < len(pa) else qa), (pb[depth] if depth < len(pb) else qb)
