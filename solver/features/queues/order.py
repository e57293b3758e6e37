"""Volcano's order of competing jobs when queues are in play.

Units (gang groups) are ordered by their queue first, then as jobs:

1. the queue's priority, higher first;
2. leaf queues before others;
3. at the deepest common ancestor of the two queues, the child with the lower share
   (allocated / deserved, the largest ratio over deserved resources) first;
4. there, the child with a deserved share before one without;
5. queue name, ascending;
6. then, inside one queue (or without queues): job priority higher first, a job with a
   nominated pod first (after a preemption), the lower `drf` dominant share first (when
   listed), earlier PodGroup creationTimestamp first, GangGroup id (the stable tie-break).

Shares are those at the start of the cycle (Volcano re-sorts after every job).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from solver.features.queues.tree import QueueTree

__all__ = ["capacity_cmp", "queue_order"]


def capacity_cmp(tree: QueueTree, a: str, b: str) -> int:
    """Criteria 1-5 between two queues (negative: a first)."""
    qa, qb = tree.queues[a], tree.queues[b]
    if qa.priority != qb.priority:  # 1
        return -1 if qa.priority > qb.priority else 1
    if qa.leaf != qb.leaf:  # 2
        return -1 if qa.leaf else 1
    pa, pb = tree.parting(a, b)
    ca, cb = tree.queues[pa], tree.queues[pb]
    sa, sb = ca.share(), cb.share()
    if sa != sb:  # 3
        return -1 if sa < sb else 1
    da, db = bool(ca.deserved), bool(cb.deserved)
    if da != db:  # 4
        return -1 if da else 1
    return (a > b) - (a < b)  # 5


def queue_order(
    tree: QueueTree,
    unit_queue: Sequence[str | None],
    unit_key: Callable[[int], tuple[int, bool, float, str, str]],
    queue_cmp: Callable[[QueueTree, str, str], int] = capacity_cmp,
) -> list[int]:
    """Unit indices in Volcano's order (see the module docstring); `queue_cmp` replaces
    criteria 1-5 (a quota plugin's own queue order, `QuotaMode.queue_cmp`)."""

    def cmp(u: int, v: int) -> int:
        qu, qv = unit_queue[u], unit_queue[v]
        if qu != qv and qu in tree.queues and qv in tree.queues:
            assert qu is not None and qv is not None
            c = queue_cmp(tree, qu, qv)
            if c:
                return c
        ku, kv = unit_key(u), unit_key(v)  # 6
        return (ku > kv) - (ku < kv)

    return sorted(range(len(unit_queue)), key=functools.cmp_to_key(cmp))
