"""A quota plugin's compile step, shared by `capacity` and `capacity-card`.

1. The queue tree (memoised per snapshot generation) and each job's queue.
2. Admission (`enqueue`): jobs walk into their queues in the queue order at the start of
   the cycle (`QuotaMode.enqueue_order`: enqueuing moves no share); a job whose request
   does not fit is not enqueued this cycle, and its gangs are blocked with the reason.
3. The unit order of the allocation (`QuotaMode.order_units`): taken again after every
   job, each enqueued job counted in its queue's share (`order.resorted_order`); for a
   mode that runs Volcano's allocate loop (`QuotaMode.loop`), the order the cycle starts
   with, and the loop's blocks (`loop.py`) take the order again after every step.
4. The QuotaBlock: the queues on the paths of the call's jobs, the mode's dimensions, the
   headroom left at each, and what one pod of each type uses of each; then the mode's extra
   rows (`QuotaMode.extra_rows`), each counted by the pod types it names.
"""

from __future__ import annotations

import numpy as np

from solver.features._base import CompileContext
from solver.features.queues.admission import plan_enqueue
from solver.features.queues.block import QuotaBlock
from solver.features.queues.fairness import fair_targets
from solver.features.queues.loop import QuotaOrderBlock, loop_block, loop_fits
from solver.features.queues.mode import QuotaMode, TypeQuota, build_queue_tree, queue_dialect
from solver.features.queues.tree import QueueTree
from solver.quantity import PODS, UNLIMITED

__all__ = ["compile_quotas"]


def compile_quotas(ctx: CompileContext, mode: QuotaMode) -> QueueTree | None:
    """Run steps 1-4 for `mode`; the call's queue tree (None without queues, or when the
    snapshot's Queues are another scheduler's: each mode reads its own dialect's)."""
    if mode.dialect != queue_dialect(ctx.snapshot):
        return None
    plan = ctx.gangs
    gangs = ctx.workload.gangs
    queue_of = [mode.job_queue(gangs[gid], ctx.workload.members(gid)) for gid in plan.gang_ids]
    tree = build_queue_tree(ctx.snapshot, mode, (q for q in queue_of if q))
    if tree is not None:
        ctx.notes.extend(tree.notes)
        if not tree.broken:
            mode.settle(ctx.snapshot, ctx.workload, tree, queue_of)
    unit_queue: list[str | None] = [None] * len(plan.unit_ids)
    first = [True] * len(plan.unit_ids)
    for g, u in enumerate(plan.unit):
        if first[u]:
            unit_queue[u], first[u] = queue_of[g], False

    order = sorted(range(len(plan.unit_ids)), key=ctx.unit_key)
    valid = tree is not None and not tree.broken
    if valid:
        assert tree is not None
        order = mode.enqueue_order(ctx, tree, unit_queue)
    if tree is not None:
        unit_gangs = plan.unit_gangs()
        jobs = [
            (plan.gang_ids[g], gangs[plan.gang_ids[g]], ctx.workload.members(plan.gang_ids[g]))
            for u in order
            for g in unit_gangs[u]
        ]
        index = {gid: g for g, gid in enumerate(plan.gang_ids)}
        gates = ctx.enqueue_gates
        enqueued = plan_enqueue(ctx.snapshot, ctx.conf, tree, mode, jobs, gates)
        for gid, why in enqueued.rejected.items():
            ctx.not_enqueued[index[gid]] = why
        for gid, who in enqueued.behind.items():
            ctx.enqueued_ahead[index[gid]] = who
    if valid:
        assert tree is not None
        ctx.unit_order = mode.order_units(ctx, tree, unit_queue)
        if mode.loop and loop_fits(ctx):
            loop_block(ctx)
            ctx.add_block(QuotaOrderBlock(tree=tree, queue_cmp=mode.queue_cmp))

    queue_names: list[str] = []
    type_queues: list[tuple[int, ...]] = []
    if tree is not None:
        for g in sorted(set(ctx.type_gang)):
            q = queue_of[g]
            if q in tree.queues:
                for name in tree.path(q):
                    if name not in queue_names:
                        queue_names.append(name)
        q_index = {name: i for i, name in enumerate(queue_names)}
        for g in ctx.type_gang:
            q = queue_of[g]
            type_queues.append(tuple(q_index[n] for n in tree.path(q)) if q in tree.queues else ())
    else:
        type_queues = [() for _ in ctx.type_gang]
    quota: TypeQuota = mode.type_quota(ctx, tree)
    extra = (
        []
        if tree is None
        else mode.extra_rows(ctx, tree, [queue_of[g] for g in ctx.type_gang], quota)
    )
    shape = (len(queue_names), len(quota.dims))
    limit = np.array(
        [
            [
                UNLIMITED if r == PODS or tree is None else mode.allocate_limit(tree, q, r)
                for r in quota.dims
            ]
            for q in queue_names
        ],
        dtype=np.int64,
    ).reshape(shape)
    allocated = np.array(
        [
            [0 if tree is None else tree.queues[q].allocated.get(r, 0) for r in quota.dims]
            for q in queue_names
        ],
        dtype=np.int64,
    ).reshape(shape)
    if extra:
        start = len(queue_names)
        queue_names.extend(row.name for row in extra)
        limit = np.vstack([limit, np.array([row.limit for row in extra], dtype=np.int64)])
        allocated = np.vstack(
            [allocated, np.array([row.allocated for row in extra], dtype=np.int64)]
        )
        for i, row in enumerate(extra):
            for t in row.types:
                type_queues[t] = (*type_queues[t], start + i)
    headroom = np.where(limit >= UNLIMITED, UNLIMITED, np.maximum(limit - allocated, 0))
    fair = np.zeros(limit.shape, dtype=np.int64)
    if tree is not None and not tree.broken:
        for at, queue in enumerate(queue_names[: len(queue_names) - len(extra)]):
            shares = mode.fair_dims(tree, queue)
            fair[at] = [shares.get(d, 0) for d in quota.dims]
    target = fair_targets(
        tuple(type_queues), quota.demand, [len(p) for p in ctx.type_pods], fair, allocated
    )
    ctx.add_block(
        QuotaBlock(
            queue_names=tuple(queue_names),
            quota_dims=quota.dims,
            dim_reasons=tuple(mode.reason(d, quota.dims) for d in quota.dims),
            headroom=headroom,
            type_queues=tuple(type_queues),
            type_quota_demand=quota.demand,
            type_node_dims=quota.node_dims,
            type_node_dim_count=quota.node_dim_count,
            type_node_dim=quota.node_dim,
            limit=limit,
            allocated=allocated,
            fair_target=target,
            extra_rows=tuple((row.queue or row.name, row.noun) for row in extra),
        )
    )
    return tree
