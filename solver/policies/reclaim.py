"""Volcano's hierarchy-aware reclaim (capacity plugin, reference/volcano.md §3.5).

A pending job in leaf queue R may take room from pods of *other* queues when:

* **R may reclaim** (`PreemptiveFn`): R is Open, `allocated + request ≤ realCapability` on
  the requested resources, and on some requested resource (not ~0 on both sides)
  `allocated + request ≤ deserved` — or, with `ancestorReclaimLevel` L > 0, the same holds
  for an ancestor of R at depth 1..L (never root).
* **Victim order**: pods whose queue shares a *deeper* common ancestor with R first; then
  the queue with the higher share; in one queue lower job priority first, then pod name
  (reverse of the allocation order).
* **Victim eligibility** (`ReclaimableFn`), on copies of the queues' usage updated as
  victims are chosen: the victim's request shares a resource with R's request; its queue
  keeps its guarantee after the eviction; and its queue is an *immediate victim* (its
  deserved covers none of the victim's resources) or is over deserved on a resource the
  victim uses; with L > 0 every victim ancestor at depth 1..L not shared with R must be
  an immediate victim or over deserved too. Pods labelled not preemptible never qualify.

The engine evicts in this order only until R's job fits, or nothing at all.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from solver.config import SchedulerConf
from solver.model import ClusterModel
from solver.policies.preemption import victim_eligible
from solver.policies.queues import INF, QueueTree, build_queue_tree, job_queue
from solver.quantity import PODS

__all__ = ["ReclaimPlanner", "reclaim_planner"]

_EPSILON = 0  # integer units: exact comparisons


def _dims(request: dict[str, int]) -> set[str]:
    return {r for r, v in request.items() if v > 0 and r != PODS}


@dataclass
class ReclaimPlanner:
    tree: QueueTree
    level: int  # ancestorReclaimLevel
    victims: list[
        tuple[str, str, str, int, dict[str, int]]
    ]  # (pod key, queue, job, priority, request)

    def depth(self, queue: str) -> int:
        return len(self.tree.queues[queue].ancestors)

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
        if any(future[r] > q.real(r) for r in dims if q.real(r) < INF):
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
        """Victim indices (other queues only) in Volcano's victim order."""
        rpath = self._path(reclaimer)

        def shared(queue: str) -> int:
            path = self._path(queue)
            depth = 0
            while depth < min(len(path), len(rpath)) and path[depth] == rpath[depth]:
                depth += 1
            return depth

        def cmp(a: int, b: int) -> int:
            qa, qb = self.victims[a][1], self.victims[b][1]
            if qa != qb:
                da, db = shared(qa), shared(qb)
                if da != db:
                    return -1 if da > db else 1
                sa, sb = self.tree.queues[qa].share(), self.tree.queues[qb].share()
                if sa != sb:
                    return -1 if sa > sb else 1
                return (qa > qb) - (qa < qb)
            ka = (self.victims[a][3], self.victims[a][2], self.victims[a][0])
            kb = (self.victims[b][3], self.victims[b][2], self.victims[b][0])
            return (ka > kb) - (ka < kb)

        candidates = [i for i, v in enumerate(self.victims) if v[1] != reclaimer]
        return sorted(candidates, key=functools.cmp_to_key(cmp))

    def eligible_in_order(self, reclaimer: str, request: dict[str, int]) -> list[int]:
        """The victims ReclaimableFn accepts, in order, as if each accepted one were evicted."""
        wanted = _dims(request)
        allocated = {name: dict(q.allocated) for name, q in self.tree.queues.items()}
        rpath = self._path(reclaimer)
        out: list[int] = []
        for i in self.order(reclaimer):
            _, queue, _, _, req = self.victims[i]
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
            out.append(i)
        return out

    def _over_or_immediate(
        self, queue: str, dims: set[str], allocated: dict[str, dict[str, int]]
    ) -> bool:
        deserved = self.tree.queues[queue].deserved
        relevant = {r for r in dims if deserved.get(r, 0) > 0}
        if not relevant:
            return True  # an immediate victim: its deserved covers none of these resources
        return any(allocated[queue].get(r, 0) > deserved[r] for r in relevant)


def reclaim_planner(model: ClusterModel, conf: SchedulerConf) -> ReclaimPlanner | None:
    """None without the reclaim action or a (valid) queue tree."""
    if "reclaim" not in conf.actions:
        return None
    tree = build_queue_tree(model, conf)
    if tree is None or tree.broken or tree.card_mode:
        return None
    level = conf.arguments("capacity").get("ancestorReclaimLevel", 0)
    level = level if isinstance(level, int) and not isinstance(level, bool) and level > 0 else 0
    victims = []
    for pod in model.bound_pods:
        queue = job_queue(model, pod.gang)
        if queue is None or queue not in tree.queues or not victim_eligible(pod):
            continue
        request = {r: v for r, v in pod.requests.items() if r != PODS}
        victims.append((pod.key, queue, pod.gang, pod.priority, request))
    return ReclaimPlanner(tree, level, sorted(victims))
