"""Volcano's hierarchy-aware reclaim (capacity plugin, reference/volcano.md §3.5).

A pending job in leaf queue R may take room from pods of *other* queues when:

* **R may reclaim** (`PreemptiveFn`): R is Open, `allocated + request ≤ realCapability` on
  the requested resources, and on some requested resource (not ~0 on both sides)
  `allocated + request ≤ deserved` — or, with `ancestorReclaimLevel` L > 0, the same holds
  for an ancestor of R at depth 1..L above it (never root).
* **Victim order**, one sort key:
  1. pods whose queue shares a *deeper* common ancestor with R first;
  2. then the queue with the higher share;
  3. then queue name;
  4. in one queue, the reverse of the task order (`BuildVictimsPriorityQueue`): lower
     priority first, then the higher pod index (`<job>-<task>-<index>`), then the later
     pod key (upstream: newer creationTimestamp, then the higher UID).
* **Victim eligibility** (`ReclaimableFn`), on copies of the queues' usage from which each
  chosen victim's request is released at its queue and every ancestor (upstream's
  `DeallocateFunc` on `Evict`), so later victims and the reclaimer's own quota check see
  the room already freed:
  - the victim's request shares a resource with R's request;
  - its queue keeps its whole guarantee (every guaranteed resource) after the eviction;
  - its queue is an *immediate victim* (its deserved covers none of the victim's
    resources) — except, with L > 0, when it shares a non-root ancestor within L levels
    with R and R's own deserved covers none of R's request (no real contention) — or it
    is over deserved on a relevant resource (cpu/memory with deserved > 0, a scalar
    resource its deserved names);
  - with L > 0, every ancestor of the victim's queue at depth 1..L above it that is not
    root and not R's ancestor at that same depth must be an immediate victim or over
    deserved too.
  Pods labelled not preemptible never qualify.

The engine evicts in this order only until R's job fits, or nothing at all: victims are
yielded lazily, so a reclaim that fits early never looks at the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Protocol

from solver.config import Plugin, SchedulerConf
from solver.features.drf import HdrfReclaim, hierarchical
from solver.features.kaishare import kai_reclaim
from solver.features.preemption.victims import evictable
from solver.features.proportion import ProportionReclaim, proportion_reclaim
from solver.features.queues import QueueTree, QuotaMode, build_queue_tree, queue_dialect
from solver.features.queues.victims import GangGuard, gang_reclaimable, in_tree, victim_cmp
from solver.problem import IntArray
from solver.quantity import CPU, MEMORY, PODS, UNLIMITED
from solver.snapshot import Snapshot, Workload

__all__ = ["ReclaimPlanner", "Reclaimer", "reclaim_planner"]


@dataclass
class ReclaimPlanner:
    tree: QueueTree
    level: int  # ancestorReclaimLevel
    snapshot: Snapshot
    rows: IntArray  # [V] evictable snapshot rows charged to a queue of the tree
    queue: list[str]  # [V] their queue
    gangs: bool = False  # the gang plugin's rule (`GangGuard`): never below a job's minMember
    refused: str = ""  # `Reclaimer.refused`: set by a rule wrapped around it

    def _path(self, queue: str) -> list[str]:
        q = self.tree.queues[queue]
        return [*q.ancestors, queue]

    def may_reclaim(
        self, queue: str, request: dict[str, int], priority: int = 0, gangs: Sequence[str] = ()
    ) -> str | None:
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

    def _above(self, queue: str, depth: int) -> str | None:
        """The ancestor `depth` levels above `queue` (1 = its parent), None past root."""
        ancestors = self.tree.queues[queue].ancestors  # root first, parent last
        return ancestors[-depth] if 0 < depth <= len(ancestors) else None

    def _shares_ancestor_within_level(self, a: str, b: str) -> bool:
        """Some non-root queue is an ancestor of both within `level` levels above each."""
        above_a = {self._above(a, d) for d in range(1, self.level + 1)} - {None, "root"}
        return any(self._above(b, d) in above_a for d in range(1, self.level + 1))

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

        def before(a: int, b: int) -> int:
            """-1 when victim a goes before victim b (module docstring, victim order 4)."""
            if rank[self.queue[a]] != rank[self.queue[b]]:
                return -1 if rank[self.queue[a]] < rank[self.queue[b]] else 1
            return victim_cmp(running, int(rows[a]), int(rows[b]))

        return sorted(others, key=cmp_to_key(before))

    def eligible_in_order(
        self,
        reclaimer: str,
        request: dict[str, int],
        gangs: Sequence[str] = (),
        accept: Callable[[int], bool] | None = None,
    ) -> Iterator[int]:
        """The victims ReclaimableFn accepts, in order, as if each accepted one were evicted
        (its request released at its queue and every ancestor); `accept`: another
        plugin's rule of the same tier, asked before a victim counts as evicted."""
        wanted = _dims(request)
        allocated = {name: dict(q.allocated) for name, q in self.tree.queues.items()}
        no_contention = bool(self.level) and not _relevant(
            wanted, self.tree.queues[reclaimer].deserved
        )
        running = self.snapshot.running
        names = running.resources
        requests = running.requests()
        guard = GangGuard(self.snapshot) if self.gangs else None
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
            if any(
                v > allocated[queue].get(r, 0) - req.get(r, 0)
                for r, v in q.guarantee.items()
                if r != PODS
            ):
                continue  # its queue would fall below its guarantee
            if not _relevant(dims, q.deserved):  # an immediate victim
                if no_contention and self._shares_ancestor_within_level(reclaimer, queue):
                    continue
            elif not _over(allocated[queue], q.deserved, dims):
                continue
            if not self._ancestors_eligible(reclaimer, queue, dims, allocated):
                continue
            if accept is not None and not accept(i):
                continue
            if guard is not None and not guard.take(row):
                continue
            for name in self._path(queue):
                for r in dims:
                    allocated[name][r] = allocated[name].get(r, 0) - req.get(r, 0)
            yield i

    def _ancestors_eligible(
        self, reclaimer: str, queue: str, dims: set[str], allocated: dict[str, dict[str, int]]
    ) -> bool:
        """With L > 0: each ancestor of the victim's queue 1..L levels above it, unless root
        or the reclaimer's ancestor at the same level, is an immediate victim or over
        deserved."""
        for depth in range(1, self.level + 1):
            ancestor = self._above(queue, depth)
            if ancestor is None or ancestor == "root" or ancestor == self._above(reclaimer, depth):
                continue
            deserved = self.tree.queues[ancestor].deserved
            if _relevant(dims, deserved) and not _over(allocated[ancestor], deserved, dims):
                return False
        return True


def _relevant(dims: set[str], deserved: dict[str, int]) -> bool:
    """Some resource of `dims` has a positive deserved (upstream `hasRelevantDeserved`)."""
    return any(deserved.get(r, 0) > 0 for r in dims)


def _over(allocated: dict[str, int], deserved: dict[str, int], dims: set[str]) -> bool:
    """allocated > deserved on a relevant resource of `dims`: cpu/memory with a positive
    deserved, a scalar resource deserved names (upstream `GreaterPartlyWithRelevantDimensions`)."""
    relevant = {
        r for r in dims if deserved.get(r, 0) > 0 or (r not in (CPU, MEMORY) and r in deserved)
    }
    return any(allocated.get(r, 0) > deserved[r] for r in relevant)


def _dims(request: dict[str, int]) -> set[str]:
    return {r for r, v in request.items() if v > 0 and r != PODS}


class Reclaimer(Protocol):
    """What the engines ask of a quota plugin's reclaim (`ReclaimPlanner` for capacity,
    `features.proportion.ProportionReclaim`, `features.kaishare.KaiReclaim`)."""

    tree: QueueTree
    rows: IntArray  # [V] the running rows it may take, charged to a queue of the tree
    refused: str  # after `eligible_in_order`: why another plugin's rule of the tier
    #   refused victims this one allowed ("" none), for the reason a reclaim failed

    def may_reclaim(
        self, queue: str, request: dict[str, int], priority: int = 0, gangs: Sequence[str] = ()
    ) -> str | None:
        """None when `queue` may reclaim for a job of `priority` (its `gangs`) asking
        `request`."""

    def eligible_in_order(
        self, reclaimer: str, request: dict[str, int], gangs: Sequence[str] = ()
    ) -> Iterator[int]:
        """The victims in the order they are taken, each counted as evicted once yielded
        (`gangs`: the reclaiming job's)."""


def reclaim_planner(
    snapshot: Snapshot, conf: SchedulerConf, workload: Workload
) -> Reclaimer | None:
    """None without a (valid) queue tree: of KAI's Queues whenever preemption runs (KAI
    always runs its reclaim; `features.kaishare.KaiReclaim`), else, with the reclaim action,
    of `capacity` or `proportion` (whose deserved shares depend on the call's `workload`)."""
    if queue_dialect(snapshot) == "kai":  # KAI's Queues: KAI's own reclaim, which KAI
        # always runs beside its preempt action (here: whenever preemption runs at all)
        return kai_reclaim(
            snapshot, conf, workload, evictable(snapshot, conf.enabled(Plugin.CONFORMANCE))
        )
    if "reclaim" not in conf.actions or queue_dialect(snapshot) == "kueue":
        return None  # Kueue's queues: no Kueue preemption is planned (noted)
    planner = _quota_planner(snapshot, conf, workload)
    if planner is not None and hierarchical(conf, snapshot):
        return HdrfReclaim(planner, snapshot, workload)  # drf's rule in the same tier
    return planner


def _quota_planner(
    snapshot: Snapshot, conf: SchedulerConf, workload: Workload
) -> ReclaimPlanner | ProportionReclaim | None:
    """The reclaim of `proportion` or `capacity` (None without one, or without a valid
    queue tree)."""
    if conf.enabled(Plugin.PROPORTION):
        rows = evictable(snapshot, conf.enabled(Plugin.CONFORMANCE))
        return proportion_reclaim(snapshot, conf, workload, rows)
    if not conf.enabled(Plugin.CAPACITY):
        return None
    tree = build_queue_tree(snapshot, QuotaMode(conf))
    if tree is None or tree.broken:
        return None
    level = conf.arguments(Plugin.CAPACITY).get("ancestorReclaimLevel", 0)
    level = level if isinstance(level, int) and not isinstance(level, bool) and level > 0 else 0
    rows, queues = in_tree(snapshot, evictable(snapshot, conf.enabled(Plugin.CONFORMANCE)), tree)
    return ReclaimPlanner(tree, level, snapshot, rows, queues, gangs=gang_reclaimable(conf))
