"""Volcano's allocate loop, as the greedy's step order (`GreedySteps.order`).

Volcano's allocate action pops the best queue, pops its best job, allocates that job's
tasks until it is ready (its minMember; one task when it has none) or one more task when
it already is, pushes the job back while it has tasks left and the queue back always,
and sorts both again with the shares the allocation moved (`allocate.go`,
`allocateResources`). So an elastic job's optional tasks are interleaved with the other
jobs of its queue and with the other queues, and two jobs of no minMember share the
cluster task by task. `VolcanoLoop` gives the greedy that order, told after every step
what it placed:

* **Queues**: the quota plugin's queue order on the shares as they move (`QuotaRanker`:
  `capacity`'s or `proportion`'s `queue_cmp` on a copy of the call's queue tree, each
  step's pods counted in their queue and its ancestors), or hierarchical DRF's
  (`features.drf`); two queues it cannot tell apart go by their best jobs, then by the
  order the cycle started with.
* **Jobs of a queue**, as one sort key:
  1. priority, higher first;
  2. a nominated job first (`CompileContext.unit_key`);
  3. with the `gang` plugin listed: a job not yet ready first (`gang`'s `JobOrderFn`);
  4. with `drf` listed (and its job order not switched off): the lower dominant share now
     first (its running pods and what this cycle gave it, over the cluster);
  5. creation time, then id.

The loop costs a comparison of the live queues per step; past `MAX_STEP_COMPARISONS`
(steps × queues) the quota plugin's whole-job order is used instead, as before.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext
from solver.features.queues.block import QuotaBlock
from solver.features.queues.tree import QueueTree, job_queue
from solver.problem import Block, BoolArray, FloatArray, IntArray, Problem
from solver.quantity import PODS

__all__ = [
    "MAX_STEP_COMPARISONS",
    "LoopBlock",
    "QuotaOrderBlock",
    "Ranker",
    "VolcanoLoop",
    "columns",
    "loop_block",
    "loop_fits",
    "picked",
    "quota_loop",
]

MAX_STEP_COMPARISONS = 200_000
"""Above this many (steps × queues with jobs) a call keeps the whole-job order (as
`order.resorted_order` sorts once past its `MAX_COMPARISONS`)."""


@dataclass(frozen=True, eq=False)
class LoopBlock(Block):
    """What the loop knows of the call's U units over its R resources (`pods` never
    counts in a share)."""

    unit_queue: tuple[str | None, ...]  # [U] the unit's queue (its first gang's)
    unit_allocated: FloatArray  # [U, R] what the unit's running pods hold
    unit_request: FloatArray  # [U, R] that plus what its pending pods ask for
    total: FloatArray  # [R] the cluster's allocatable (0 for `pods`)
    unit_priority: IntArray  # [U]
    unit_nominated: BoolArray  # [U]
    unit_rank: IntArray  # [U] by creation time, then id
    unit_ready: BoolArray  # [U] requires no pod this cycle: ready from the start
    ready_last: bool  # `gang`'s job order: ready jobs after the others
    by_share: bool  # `drf`'s job order: the lower dominant share first

    @property
    def counted(self) -> BoolArray:
        return self.total > 0

    def share(self, amounts: FloatArray) -> float:
        """The dominant share: max over the cluster's resources of amount / total."""
        cols = self.counted
        return float((amounts[cols] / self.total[cols]).max()) if cols.any() else 0.0


def loop_fits(ctx: CompileContext) -> bool:
    """Two units or more, and the loop's comparisons (steps × queues with jobs) within
    `MAX_STEP_COMPARISONS`: a step per unit and per optional member."""
    plan = ctx.gangs
    if len(plan.unit_ids) < 2:  # a job alone takes its turns back to back: the whole job
        return False
    extras = sum(max(0, p - n) for p, n in zip(plan.pending, plan.need, strict=True))
    queues = {
        job_queue(ctx.workload.gangs[gid], ctx.workload.members(gid)) for gid in plan.gang_ids
    }
    return (len(plan.unit_ids) + extras) * len(queues) <= MAX_STEP_COMPARISONS


def columns(names: Sequence[str], resources: Sequence[str]) -> IntArray:
    """For each of `resources`, its column among `names` (-1: not there), for `picked`."""
    at = {r: i for i, r in enumerate(names)}
    return np.array([at.get(r, -1) for r in resources], dtype=np.int64)


def picked(values: IntArray, pick: IntArray) -> FloatArray:
    """values[pick] with 0 where pick is -1 (a resource the row does not have)."""
    out = np.zeros(len(pick), dtype=np.float64)
    have = (pick >= 0) & (pick < len(values))
    out[have] = values[pick[have]]
    return out


def loop_block(ctx: CompileContext) -> LoopBlock:
    """The call's LoopBlock, made once (the quota plugin and `drf` both may ask for it)."""
    for block in ctx.blocks:
        if isinstance(block, LoopBlock):
            return block
    snapshot, resources = ctx.snapshot, ctx.resources
    counted = np.array([r != PODS for r in resources], dtype=bool)
    total = np.array(
        [0 if r == PODS else snapshot.nodes.total.get(r, 0) for r in resources], dtype=np.float64
    )
    running = snapshot.running
    pick = columns(running.resources, resources)
    plan = ctx.gangs
    num_units = len(plan.unit_ids)
    unit_queue: list[str | None] = [None] * num_units
    seen = [False] * num_units
    allocated = np.zeros((num_units, len(resources)))
    request = np.zeros((num_units, len(resources)))
    need = np.zeros(num_units, dtype=np.int64)
    usage = snapshot.usage.gang_requests
    for g, gid in enumerate(plan.gang_ids):
        u = int(plan.unit[g])
        if not seen[u]:
            unit_queue[u] = job_queue(ctx.workload.gangs[gid], ctx.workload.members(gid))
            seen[u] = True
        if 0 <= (r := running.gang_id(gid)) < usage.shape[0]:
            allocated[u] += np.where(counted, picked(usage[r], pick), 0)
        need[u] += int(plan.need[g])
    for t, g in enumerate(ctx.type_gang):
        u = int(plan.unit[g])
        request[u] += np.where(counted, ctx.type_demand[t], 0) * len(ctx.type_pods[t])
    created = sorted(range(num_units), key=lambda u: (ctx.unit_created[u], plan.unit_ids[u]))
    rank = np.empty(num_units, dtype=np.int64)
    rank[np.array(created, dtype=np.int64)] = np.arange(num_units)
    drf = ctx.conf.plugin(Plugin.DRF)
    block = LoopBlock(
        unit_queue=tuple(unit_queue),
        unit_allocated=allocated,
        unit_request=request + allocated,
        total=total,
        unit_priority=np.asarray(ctx.unit_priority, dtype=np.int64),
        unit_nominated=np.array(
            [bool(ctx.unit_nominated and ctx.unit_nominated[u]) for u in range(num_units)],
            dtype=bool,
        ),
        unit_rank=rank,
        unit_ready=need == 0,
        ready_last=ctx.conf.enabled(Plugin.GANG),
        by_share=drf is not None and drf.options.get("enableJobOrder") is not False,
    )
    ctx.add_block(block)
    return block


class Ranker(Protocol):
    """A queue order that moves as pods land."""

    def compare(self, a: str | None, b: str | None) -> float:
        """Negative when queue a goes first, 0 when this order cannot tell."""
        ...

    def charge(self, unit: int, placed: Mapping[int, int], amounts: FloatArray) -> None:
        """Unit `unit` (of the LoopBlock) got `placed` pods per type, holding `amounts`
        more of the call's resources (`pods` not counted)."""
        ...


class VolcanoLoop:
    """The step order of one greedy run (`solver.problem.StepOrder`). Each queue keeps its
    jobs in a heap by their sort key; a step changes only its own job's key (its share, its
    readiness), so a step costs O(log jobs) plus a comparison of the queues with jobs."""

    def __init__(self, problem: Problem, block: LoopBlock, ranker: Ranker) -> None:
        self.problem, self.block, self.ranker = problem, block, ranker
        self.allocated = block.unit_allocated.copy()
        self.ready = block.unit_ready.tolist()
        self.heaps: dict[str | None, list[tuple[tuple[int, bool, bool, float, int], int]]] = {}
        self.key: dict[int, tuple[int, bool, bool, float, int]] = {}
        self.rank: dict[str | None, int] = {}
        for at, u in enumerate(problem.unit_order.tolist()):
            q = block.unit_queue[u]
            self.key[u] = self._job_key(u)
            self.heaps.setdefault(q, []).append((self.key[u], u))
            self.rank.setdefault(q, at)
        for heap in self.heaps.values():
            heapq.heapify(heap)

    def _job_key(self, u: int) -> tuple[int, bool, bool, float, int]:
        b = self.block
        return (
            -int(b.unit_priority[u]),
            not bool(b.unit_nominated[u]),
            self.ready[u] and b.ready_last,
            b.share(self.allocated[u]) if b.by_share else 0.0,
            int(b.unit_rank[u]),
        )

    def _head(self, q: str | None) -> tuple[tuple[int, bool, bool, float, int], int] | None:
        """The queue's best live job (stale heap entries dropped)."""
        heap = self.heaps[q]
        while heap and self.key.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def next(self) -> int | None:
        best: str | None = None
        best_head: tuple[tuple[int, bool, bool, float, int], int] | None = None
        for q in self.heaps:
            head = self._head(q)
            if head is None:
                continue
            if best_head is None:
                best, best_head = q, head
                continue
            c = self.ranker.compare(q, best) if q != best else 0.0
            if c == 0:
                ka, kb = head[0], best_head[0]
                c = -1.0 if ka < kb else 1.0 if ka > kb else self.rank[q] - self.rank[best]
            if c < 0:
                best, best_head = q, head
        return best_head[1] if best_head is not None else None

    def alone(self) -> bool:
        return len(self.key) == 1

    def stepped(self, unit: int, placed: Mapping[int, int], more: bool) -> None:
        self.ready[unit] = True
        if placed:
            demand = self.problem.type_demand
            amounts = sum((demand[t] * n for t, n in placed.items()), np.zeros(demand.shape[1]))
            amounts = np.where(self.block.counted, amounts, 0.0)
            self.allocated[unit] += amounts
            if len(self.heaps) > 1:  # one queue: its order is never asked
                self.ranker.charge(unit, placed, amounts)
        if not more:
            self.key.pop(unit, None)
            return
        self.key[unit] = self._job_key(unit)
        heapq.heappush(self.heaps[self.block.unit_queue[unit]], (self.key[unit], unit))


@dataclass(frozen=True, eq=False)
class QuotaOrderBlock(Block):
    """The quota plugin's queue order for the loop: the call's queue tree as the cycle
    starts (copied per run) and the plugin's comparison of two queues on it."""

    tree: QueueTree
    queue_cmp: Callable[[QueueTree, str, str], int]


class QuotaRanker:
    """`Ranker` of a quota plugin: its queue order on the tree, each step's pods counted
    (their node-independent use of the quota dimensions) in their queue and ancestors."""

    def __init__(self, problem: Problem, block: LoopBlock, order: QuotaOrderBlock) -> None:
        self.tree = order.tree  # the call's; forked at the first charge
        self.forked = False
        self.cmp = order.queue_cmp
        self.queues = block.unit_queue
        self.quota = problem.block(QuotaBlock)

    def compare(self, a: str | None, b: str | None) -> float:
        if a is None or b is None or a not in self.tree.queues or b not in self.tree.queues:
            return 0.0
        return float(self.cmp(self.tree, a, b))

    def charge(self, unit: int, placed: Mapping[int, int], amounts: FloatArray) -> None:
        queue = self.queues[unit]
        if self.quota is None or queue is None or queue not in self.tree.queues:
            return
        if not self.forked:  # a copy of 1,000 queues costs ~1 ms: only when it moves
            self.tree, self.forked = self.tree.fork(), True
        use: dict[str, int] = {}
        for t, n in placed.items():
            for d, dim in enumerate(self.quota.quota_dims):
                if v := int(self.quota.type_quota_demand[t, d]) * n:
                    use[dim] = use.get(dim, 0) + v
        self.tree.bump(queue, "allocated", use)


def quota_loop(problem: Problem) -> VolcanoLoop | None:
    """The loop under a quota plugin's queue order (None when the call keeps whole jobs)."""
    order, block = problem.block(QuotaOrderBlock), problem.block(LoopBlock)
    if order is None or block is None:
        return None
    return VolcanoLoop(problem, block, QuotaRanker(problem, block, order))
