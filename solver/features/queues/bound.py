"""The queue bound: a gang's queue (or an ancestor) has less quota left than the gang needs.

Every pod of a gang is charged to its leaf queue and each ancestor
(`QuotaBlock.type_queues`); a gang needs at least `need` × its smallest per-pod use of a
dimension. When that is more than a queue's headroom at the start of the cycle
(the allocate gate's limit − what its running pods hold), no placement exists:

    queue team-a: gang default/train needs 16 nvidia.com/gpu; its limit (32) leaves 8
    (24 held)

With preemption in the call, the bound is the limit itself (every running pod of the
queue evicted). Node-dependent dimensions (card alternatives) are left to the counted
reason.
"""

from __future__ import annotations

import numpy as np

from solver.decision import Certificate
from solver.features.queues.block import QuotaBlock
from solver.problem import IntArray, Problem
from solver.quantity import UNLIMITED, format_quantity

__all__ = ["queue_bound"]


def queue_bound(
    problem: Problem, gangs: list[int], free: IntArray, evicted: bool
) -> Certificate | None:
    """`evicted`: preemption is in the call, so the queue's limit is its room."""
    block = problem.block(QuotaBlock)
    if block is None or not block.type_queues:
        return None
    needed: dict[int, IntArray] = {}
    who: dict[int, list[int]] = {}
    for h in gangs:
        types = problem.gang_types(h)
        need = int(problem.gang_need[h])
        if need <= 0 or not types or any(block.node_dims(t) for t in types):
            continue
        queues = set(block.type_queues[types[0]])
        if any(set(block.type_queues[t]) != queues for t in types):
            continue
        use = block.type_quota_demand[types].min(axis=0) * need
        for q in queues:
            needed[q] = needed.get(q, np.zeros_like(use)) + use
            who.setdefault(q, []).append(h)
    for q in sorted(needed):
        room = block.limit[q] if evicted and block.limit.size else block.headroom[q]
        over = (block.headroom[q] < UNLIMITED) & (needed[q] > room)
        for d in np.flatnonzero(over).tolist():
            name = block.quota_dims[d]
            shown = name.removeprefix("card:")
            gang_names = ", ".join(problem.gang_ids[h] for h in who[q])
            limit = int(block.limit[q, d]) if block.limit.size else None
            held = int(block.allocated[q, d]) if block.allocated.size else None
            said = f"its limit ({format_quantity(name, limit)}) " if limit is not None else ""
            left = "leaves" if not evicted else "allows, with its running pods evicted,"
            sentence = (
                f"queue {block.queue_names[q]}: "
                f"{'gang' if len(who[q]) == 1 else 'gangs'} {gang_names} "
                f"need{'s' if len(who[q]) == 1 else ''} {format_quantity(name, int(needed[q][d]))} "
                f"{shown}; {said}{left} {format_quantity(name, max(0, int(room[d])))}"
                + (
                    f" ({format_quantity(name, held)} held)"
                    if held is not None and not evicted
                    else ""
                )
            )
            return Certificate(
                "quota",
                f"queue {block.queue_names[q]}",
                sentence,
                True,
                unit=name,
                needed=int(needed[q][d]),
                offered=max(0, int(room[d])),
                places=((block.queue_names[q], max(0, int(room[d]))),),
            )
    return None
