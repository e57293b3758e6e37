"""Volcano's hierarchy-aware reclaim (capacity plugin, reference/volcano.md §3.5).

A pending job in leaf queue R may take room from pods of *other* queues when:

* **R may reclaim** (`PreemptiveFn`): R is Open, `allocated + request ≤ realCapability` on
  the requested resources, and on some requested resource (not ~0 on both sides)
  `allocated + request ≤ deserved` — or, with `ancestorReclaimLevel` L > 0, the same holds
  for an ancestor of R at depth 1..L (never root).
* **Victim order**, one sort key:
  1. pods whose queue shares a *deeper* common ancestor with R first;
  2. then the queue with the higher share;
  3. then queue name;
  4. in one queue: lower job priority first, then job (gang), then pod name (the reverse of
     the allocation order; pod name is the stable tie-break).
* **Victim eligibility** (`ReclaimableFn`), on copies of the queues' usage updated as
  victims are chosen: the victim's request shares a resource with R's request; its queue
  keeps its guarantee after the eviction; and its queue is an *immediate victim* (its
  deserved covers none of the victim's resources) or is over deserved on a resource the
  victim uses; with L > 0 every victim ancestor at depth 1..L not shared with R must be
  an immediate victim or over deserved too. Pods labelled not preemptible never qualify.

The engine evicts in this order only until R's job fits, or nothing at all: victims are
yielded lazily, so a reclaim that fits early never looks at the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from solver.config import SchedulerConf
from solver.features.preemption.victims import evictable
from solver.features.queues import QueueTree, QuotaMode, build_queue_tree
from solver.problem import IntArray
from solver.quantity import PODS, UNLIMITED
from solver.snapshot import NONE, Snapshot, charged_queue

__all__ = ["ReclaimPlanner", "reclaim_planner"]


@dataclass
class ReclaimPlanner:
    tree: QueueTree
    level: int  # ancestorReclaimLevel
    snapshot: Snapshot
    rows: IntArray  # [V] evictable snapshot rows charged to a queue of the tree
    queue: list[str]  # [V] their queue

    def _path(self, queue: str) -> list[str]:
        q = self.tree.queues[queue]
        return [*q.ancestors, queue]

    def may_reclaim(self, queue: str, request: dict[str, int]) -> str | None:
        """None when `queue` may reclaim for `request`, else why not."""
        q = self.tree.queues[queue]
        if q.state != "Open":
            return f"queue {queue} is {q.state}"
        dims = _dims(request)
        future = {r: q.allocated.get(r, 0) + request.get(r, 0) for r in dims}
        if any(future[r] > q.real(r) for r in dims if q.real(r) < UNLIMITED):
            return f"queue {queue} would exceed its realCapability"
        levels = [queue, *[a for a in reversed(q.ancestors) if a != "root"][: self.level]]
        for name in levels:
            node = self.tree.queues[name]
            for r in dims:
                used = node.allocated.get(r, 0) + request.get(r, 0)
                deserved = node.deserved.get(r, 0)
                if used == 0 and deserved == 0:
                    continue
                if used <= deserved:
                    return None
        return f"queue {queue} is already at or over its deserved share on every requested resource"

    def order(self, reclaimer: str) -> list[int]:
        """Victim indices (other queues only) in the victim order (module docstring)."""
        rpath = self._path(reclaimer)

        def shared(queue: str) -> int:
            path = self._path(queue)
            depth = 0
            while depth < min(len(path), len(rpath)) and path[depth] == rpath[depth]:
                depth += 1
            return depth

        names = sorted(set(self.queue) - {reclaimer})
        rank = {
            name: i
            for i, name in enumerate(
                sorted(names, key=lambda n: (-shared(n), -self.tree.queues[n].share(), n))
            )
        }
        others = [v for v, q in enumerate(self.queue) if q != reclaimer]
        running = self.snapshot.running
        rows = self.rows
        gang_names = [
            running.gang_name(g) if g != NONE else running.key(int(rows[v]))
            for v, g in enumerate(running.gang[rows].tolist())
        ]
        return sorted(
            others,
            key=lambda v: (
                rank[self.queue[v]],
                int(running.priority[rows[v]]),
                gang_names[v],
                running.key(int(rows[v])),
            ),
        )

    def eligible_in_order(self, reclaimer: str, request: dict[str, int]) -> Iterator[int]:
        """The victims ReclaimableFn accepts, in order, as if each accepted one were evicted."""
        wanted = _dims(request)
        allocated = {name: dict(q.allocated) for name, q in self.tree.queues.items()}
        rpath = self._path(reclaimer)
        running = self.snapshot.running
        names = running.resources
        requests = running.requests()
        for i in self.order(reclaimer):
            queue = self.queue[i]
            row = int(self.rows[i])
            req = {
                r: int(v)
                for r, v in zip(names, requests[row].tolist(), strict=False)
                if v and r != PODS
            }
            dims = _dims(req)
            if not dims & wanted:
                continue
            q = self.tree.queues[queue]
            after = {r: allocated[queue].get(r, 0) - req.get(r, 0) for r in dims}
            if any(q.guarantee.get(r, 0) > after[r] for r in dims):
                continue
            if not self._over_or_immediate(queue, dims, allocated):
                continue
            vpath = self._path(queue)
            blocked = False
            for d in range(1, self.level + 1):
                if d >= len(vpath) - 1:
                    break
                ancestor = vpath[d]
                if ancestor == "root" or (d < len(rpath) and rpath[d] == ancestor):
                    continue
                if not self._over_or_immediate(ancestor, dims, allocated):
                    blocked = True
                    break
            if blocked:
                continue
            for name in vpath:
                for r in dims:
                    allocated[name][r] = allocated[name].get(r, 0) - req.get(r, 0)
            yield i

    def _over_or_immediate(
        self, queue: str, dims: set[str], allocated: dict[str, dict[str, int]]
    ) -> bool:
        deserved = self.tree.queues[queue].deserved
        relevant = {r for r in dims if deserved.get(r, 0) > 0}
        if not relevant:
            return True  # an immediate victim: its deserved covers none of these resources
        return any(allocated[queue].get(r, 0) > deserved[r] for r in relevant)


def _dims(request: dict[str, int]) -> set[str]:
    return {r for r, v in request.items() if v > 0 and r != PODS}


def reclaim_planner(snapshot: Snapshot, conf: SchedulerConf) -> ReclaimPlanner | None:
    """None without the reclaim action or a (valid) capacity queue tree."""
    if "reclaim" not in conf.actions or not conf.enabled("capacity"):
        return None
    tree = build_queue_tree(snapshot, QuotaMode(conf))
    if tree is None or tree.broken:
        return None
    level = conf.arguments("capacity").get("ancestorReclaimLevel", 0)
    level = level if isinstance(level, int) and not isinstance(level, bool) and level > 0 else 0
    rows = evictable(snapshot)
    queue_ids = charged_queue(snapshot.running, rows, snapshot.gang_queue)
    names = snapshot.running.queue_names
    keep = [
        v for v, q in enumerate(queue_ids.tolist()) if q != NONE and names.value(q) in tree.queues
    ]
    return ReclaimPlanner(
        tree,
        level,
        snapshot,
        rows[np.array(keep, dtype=np.int64)],
        [names.value(int(queue_ids[v])) for v in keep],
    )
