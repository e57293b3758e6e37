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

from functools import partial

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
    paths: dict[tuple[int, ...], tuple[IntArray, list[int]]] = {}
    for h in gangs:
        types = problem.gang_types(h)
        need = int(problem.gang_need[h])
        if need <= 0 or not types or any(block.node_dims(t) for t in types):
            continue
        path = tuple(block.type_queues[types[0]])  # the leaf, then its ancestors
        if not path or any(tuple(block.type_queues[t]) != path for t in types):
            continue
        use = block.type_quota_demand[types].min(axis=0) * need
        total, who = paths.get(path, (np.zeros_like(use), []))
        paths[path] = (total + use, [*who, h])
    for path, (needed, who) in sorted(paths.items()):
        for d in np.flatnonzero(needed > 0).tolist():
            rooms = [
                (
                    int(block.limit[q, d])
                    if evicted and block.limit.size
                    else int(block.headroom[q, d]),
                    -i,
                    q,
                )
                for i, q in enumerate(path)
                if block.headroom[q, d] < UNLIMITED
            ]
            if not rooms or min(rooms)[0] >= needed[d]:
                continue
            room, _, q = min(rooms)  # the tightest; on a tie the highest ancestor sets it
            return _certificate(problem, block, path[0], q, d, int(needed[d]), room, who, evicted)
    return None


def _certificate(
    problem: Problem,
    block: QuotaBlock,
    leaf: int,
    q: int,
    d: int,
    needed: int,
    room: int,
    who: list[int],
    evicted: bool,
) -> Certificate:
    name = block.quota_dims[d]
    qty = partial(format_quantity, name)
    gangs = ", ".join(problem.gang_ids[h] for h in who)
    owner, noun = block.row_of(q)
    whose = "its" if owner == block.queue_names[leaf] else f"its ancestor {owner}'s"
    limit = f" ({qty(int(block.limit[q, d]))})" if block.limit.size else ""
    held = int(block.allocated[q, d]) if block.allocated.size else None
    if evicted:
        rest = f"{whose} {noun}{limit} allows {qty(max(0, room))} with its running pods evicted"
    else:
        rest = f"{whose} {noun}{limit} leaves {qty(max(0, room))}" + (
            f" ({qty(held)} held)" if held is not None else ""
        )
    sentence = (
        f"queue {block.queue_names[leaf]}: {'gang' if len(who) == 1 else 'gangs'} {gangs} "
        f"need{'s' if len(who) == 1 else ''} {qty(needed)} {name.removeprefix('card:')}; {rest}"
    )
    return Certificate(
        "quota",
        f"queue {owner}" + ("" if noun == "limit" else f" ({noun})"),
        sentence,
        True,
        unit=name,
        needed=needed,
        offered=max(0, room),
        places=((block.queue_names[q], max(0, room)),),
    )
