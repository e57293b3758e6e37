"""Volcano's allocate loop under hierarchical DRF, as the greedy's step order.

Volcano's allocate action pops the best queue, pops its best job, allocates that job's
tasks until it is ready (its minMember; one task when it has none) or one more task when
it already is, pushes the job back while it has tasks left and the queue back always,
and sorts both again with the shares the allocation moved (`allocate.go`,
`allocateResources`). So an elastic job's optional tasks are interleaved with the other
queues' jobs, and two jobs of no minMember share the cluster task by task. `HdrfOrder`
gives the greedy (`GreedySteps.order`) that order, told after every step what it placed:

* **Queues** (`drf`'s `QueueOrderFn` with `enableHierarchy`, before any later plugin's):
  1. level by level down the two queues' hDRF paths (`hdrf.py`): a saturated node last,
     then the lower share / weight first;
  2. then the queue order the quota plugin gave at the start of the cycle (upstream: the
     next plugin's order, e.g. `proportion`'s share, then creation time).
* **Jobs of a queue**, as one sort key:
  1. priority, higher first;
  2. a nominated job first (`CompileContext.unit_key`);
  3. with the `gang` plugin listed: a job not yet ready first (`gang`'s `JobOrderFn`);
  4. with `drf`'s job order: the lower dominant share now first (its running pods and what
     this cycle gave it, over the cluster);
  5. creation time, then id.

The running pods of jobs outside the call count in their queues' nodes as saturated
leaves (a job whose pods all run has allocated = request), summed per queue: the same
shares as one leaf per job.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.config import Plugin
from solver.features._base import CompileContext
from solver.features.drf.hdrf import HdrfTree, hierarchy_path
from solver.model import job_queue
from solver.problem import Block, BoolArray, FloatArray, IntArray, Problem
from solver.quantity import PODS

__all__ = ["HdrfBlock", "HdrfOrder", "hdrf_block"]


@dataclass(frozen=True, eq=False)
class HdrfBlock(Block):
    """The hDRF tree's inputs for one call: Q queues (every queue the call's jobs or the
    running pods name), U units, R resources (`pods` never counts)."""

    total: FloatArray  # [R] the cluster's allocatable (0: the resource does not count)
    queue_parts: tuple[tuple[str, ...], ...]  # [Q] the queue's path below the root
    queue_weights: tuple[tuple[float, ...], ...]  # [Q] the weight of each part
    queue_others: FloatArray  # [Q, R] what running pods of jobs outside the call hold
    unit_queue: IntArray  # [U] the unit's queue; -1: none (a leaf under the root)
    unit_allocated: FloatArray  # [U, R] what the unit's running pods hold
    unit_request: FloatArray  # [U, R] that plus what its pending pods ask for
    unit_priority: IntArray  # [U]
    unit_nominated: BoolArray  # [U]
    unit_rank: IntArray  # [U] by creation time, then id
    unit_ready: BoolArray  # [U] requires no pod (minMember 0): ready from the start
    counted: BoolArray  # [R] resources that count (not `pods`)
    ready_last: bool  # `gang`'s job order: ready jobs after the others
    by_share: bool  # `drf`'s job order: the lower dominant share first


def hdrf_block(ctx: CompileContext) -> HdrfBlock:
    """The block of a call whose conf turns on `drf`'s `enableHierarchy`."""
    snapshot, resources = ctx.snapshot, ctx.resources
    counted = np.array([r != PODS for r in resources], dtype=bool)
    total = np.array(
        [0 if r == PODS else snapshot.nodes.total.get(r, 0) for r in resources],
        dtype=np.float64,
    )
    running = snapshot.running
    cols = {r: i for i, r in enumerate(running.resources)}
    pick = [cols.get(r, -1) for r in resources]

    def row(values: IntArray) -> FloatArray:
        out = np.array([values[i] if i >= 0 else 0 for i in pick], dtype=np.float64)
        return np.where(counted, out, 0.0)

    plan = ctx.gangs
    num_units = len(plan.unit_ids)
    unit_queue_name: list[str | None] = [None] * num_units
    allocated = np.zeros((num_units, len(resources)))
    request = np.zeros((num_units, len(resources)))
    need = np.zeros(num_units, dtype=np.int64)
    usage = snapshot.usage.gang_requests
    for g, gid in enumerate(plan.gang_ids):
        u = int(plan.unit[g])
        gang = ctx.workload.gangs[gid]
        if unit_queue_name[u] is None:
            unit_queue_name[u] = job_queue(gang, ctx.workload.members(gid))
        if 0 <= (r := running.gang_id(gid)) < usage.shape[0]:
            allocated[u] += row(usage[r])
        need[u] += int(plan.need[g])
    for t, g in enumerate(ctx.type_gang):
        u = int(plan.unit[g])
        request[u] += np.where(counted, ctx.type_demand[t], 0) * len(ctx.type_pods[t])
    request += allocated
    names = sorted({q for q in unit_queue_name if q} | _running_queues(ctx))
    index = {q: i for i, q in enumerate(names)}
    others = np.zeros((len(names), len(resources)))
    for q in range(len(running.queue_names)):
        name = running.queue_names.value(q)
        if name in index and q < snapshot.usage.queue_requests.shape[0]:
            others[index[name]] += row(snapshot.usage.queue_requests[q])
    unit_queue = np.array([index[q] if q else -1 for q in unit_queue_name], dtype=np.int64)
    for u, q in enumerate(unit_queue.tolist()):
        if q >= 0:
            others[q] -= allocated[u]
    parts, weights = [], []
    for name in names:
        spec = snapshot.queues.get(name)
        p, w = hierarchy_path(dict(spec.annotations) if spec is not None else {})
        parts.append(p)
        weights.append(w)
    created = sorted(range(num_units), key=lambda u: (ctx.unit_created[u], plan.unit_ids[u]))
    rank = np.empty(num_units, dtype=np.int64)
    rank[np.array(created, dtype=np.int64)] = np.arange(num_units)
    drf = ctx.conf.plugin(Plugin.DRF)
    return HdrfBlock(
        total=total,
        queue_parts=tuple(parts),
        queue_weights=tuple(weights),
        queue_others=np.maximum(others, 0.0),
        unit_queue=unit_queue,
        unit_allocated=allocated,
        unit_request=request,
        unit_priority=np.asarray(ctx.unit_priority, dtype=np.int64),
        unit_nominated=np.array(
            [bool(ctx.unit_nominated and ctx.unit_nominated[u]) for u in range(num_units)]
        ),
        unit_rank=rank,
        unit_ready=need == 0,
        counted=counted,
        ready_last=ctx.conf.enabled(Plugin.GANG),
        by_share=drf is None or drf.options.get("enableJobOrder") is not False,
    )


def _running_queues(ctx: CompileContext) -> set[str]:
    """Queues whose running pods hold something (they are in the tree as upstream's are)."""
    running = ctx.snapshot.running
    held = ctx.snapshot.usage.queue_requests
    return {
        running.queue_names.value(q)
        for q in range(min(len(running.queue_names), held.shape[0]))
        if held[q].any()
    }


class HdrfOrder:
    """The step order of one greedy run (`solver.problem.StepOrder`)."""

    @classmethod
    def of(cls, problem: Problem) -> HdrfOrder | None:
        block = problem.block(HdrfBlock)
        return cls(problem, block) if block is not None else None

    def __init__(self, problem: Problem, block: HdrfBlock) -> None:
        self.block = block
        tree = self.tree = HdrfTree(block.total)
        paths = [
            tree.path(p, w) for p, w in zip(block.queue_parts, block.queue_weights, strict=True)
        ]
        for q, held in enumerate(block.queue_others):
            if held.any():
                tree.job(paths[q][-1], held, held)
        self.leaf = [
            tree.job(paths[q][-1] if q >= 0 else 0, block.unit_allocated[u], block.unit_request[u])
            for u, q in enumerate(block.unit_queue.tolist())
        ]
        tree.refresh()
        self.path = [paths[q] if q >= 0 else (0,) for q in block.unit_queue.tolist()]
        self.ready = block.unit_ready.tolist()
        self.live: dict[int, list[int]] = {}  # queue (-1: none) -> its units left
        self.queue_rank: dict[int, int] = {}
        for rank, u in enumerate(problem.unit_order.tolist()):
            q = int(block.unit_queue[u])
            self.live.setdefault(q, []).append(u)
            self.queue_rank.setdefault(q, rank)

    def _job_key(self, u: int) -> tuple[int, bool, bool, float, int]:
        b = self.block
        return (
            -int(b.unit_priority[u]),
            not bool(b.unit_nominated[u]),
            self.ready[u] and b.ready_last,
            self.tree.share[self.leaf[u]] if b.by_share else 0.0,
            int(b.unit_rank[u]),
        )

    def next(self) -> int | None:
        best: int | None = None
        for q, units in self.live.items():
            if not units:
                continue
            if best is None:
                best = q
                continue
            c = self.tree.compare(self.path[units[0]], self.path[self.live[best][0]])
            if c < 0 or (c == 0 and self.queue_rank[q] < self.queue_rank[best]):
                best = q
        if best is None:
            return None
        return min(self.live[best], key=self._job_key)

    def stepped(self, unit: int, placed: IntArray, more: bool) -> None:
        self.ready[unit] = True
        amounts = np.where(self.block.counted, placed, 0).astype(np.float64)
        if amounts.any():
            self.tree.allocate(self.leaf[unit], amounts)
        if not more:
            self.live[int(self.block.unit_queue[unit])].remove(unit)
