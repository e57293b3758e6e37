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

As Volcano's allocate action pops a queue, allocates one job and pushes the queue back
(its share now counting that job), the order is taken again after every job
(`resorted_order`): each job's pending pods are counted as allocated in its queue and every
ancestor before the next pick.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from solver.features.queues.tree import QueueTree

__all__ = ["capacity_cmp", "queue_order", "resorted_order"]


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


def resorted_order(
    tree: QueueTree,
    unit_queue: Sequence[str | None],
    unit_key: Callable[[int], tuple[int, bool, float, str, str]],
    queue_cmp: Callable[[QueueTree, str, str], int],
    unit_ask: Sequence[dict[str, int]],
) -> list[int]:
    """Units as Volcano's allocate action takes them: the best queue with jobs (criteria
    1-5 on the queues, 6 between their next jobs), its next job, that job's `unit_ask`
    counted in the queue and its ancestors (on a fork of the tree's usage), again. Walked
    from the root, each queue's best child with jobs kept until a job of its subtree is
    taken (a comparison inside a subtree reads only that subtree's usage). Units of no queue
    of the tree go last, in job order."""
    work = tree.fork()
    jobs: dict[str, list[int]] = {}
    others = []
    for u in sorted(range(len(unit_queue)), key=unit_key, reverse=True):  # popped from the end
        q = unit_queue[u]
        if q is not None and q in work.queues:
            jobs.setdefault(q, []).append(u)
        else:
            others.append(u)
    left: dict[str, int] = {}
    for leaf, units in jobs.items():
        for name in work.path(leaf):
            left[name] = left.get(name, 0) + len(units)
    best: dict[str, str] = {}  # queue -> the queue (itself or below) whose job goes next

    def better(a: str, b: str) -> bool:
        c = queue_cmp(work, a, b) if a != b else 0
        if c:
            return c < 0
        ka, kb = unit_key(jobs[a][-1]), unit_key(jobs[b][-1])
        return ka < kb

    def pick(name: str) -> str:
        if name not in best:
            own = [name] if jobs.get(name) else []
            kids = [pick(c) for c in work.queues[name].children if left.get(c, 0) > 0]
            choice = (own + kids)[0]
            for c in (own + kids)[1:]:
                if better(c, choice):
                    choice = c
            best[name] = choice
        return best[name]

    top = [q for q, info in work.queues.items() if info.parent is None]
    out: list[int] = []
    while any(left.get(q, 0) > 0 for q in top):
        heads = [pick(q) for q in top if left.get(q, 0) > 0]
        leaf = heads[0]
        for h in heads[1:]:
            if better(h, leaf):
                leaf = h
        u = jobs[leaf].pop()
        out.append(u)
        for name in work.path(leaf):
            left[name] -= 1
            best.pop(name, None)
        work.bump(leaf, "allocated", dict(unit_ask[u]))
    return out + sorted(others, key=unit_key)
