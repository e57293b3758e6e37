"""Volcano's `reclaim` action under `proportion` (`proportion.go`: `PreemptiveFn`,
`ReclaimableFn`, `OverusedFn`): a queue below its deserved share takes room back from
queues above theirs.

* **Who may reclaim**: the job's queue is Open, not overused (`deserved ≤ allocated` on
  every resource), and `allocated + request ≤ deserved` on the resources it requests.
* **Victim order**: pods of different queues in the reverse of the queue order
  (`BuildVictimsPriorityQueue` falls back to `!QueueOrderFn` when no plugin orders victim
  queues, and proportion does not): the lower queue priority first, then the higher share
  (allocated / deserved), then the later name; in one queue, the reverse of the task order
  (`features.queues.victims`).
* **Eligibility** (`ReclaimableFn`): running pods of *other* queues, evictable at all
  (`preemption.victims`: not protected, not terminating), while their queue's allocated
  — less the victims already taken from it — is not within its deserved share on every
  resource (upstream's `LessEqual` with its 0.1 tolerance); each victim's request is
  released at its queue before the next is judged. With the `gang` plugin (Volcano's
  gang `ReclaimableFn`), a pod is a victim only while its job keeps more than its
  minMember running pods after the earlier victims; a running pod without a PodGroup is a
  job of one with minMember 1 (Volcano's shadow PodGroup), so it is never reclaimed there.

The engine evicts in this order only until the job fits, or nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cmp_to_key

from solver.config import SchedulerConf
from solver.features.devices.quota import shares_in_play
from solver.features.proportion.mode import ProportionMode, settled_tree
from solver.features.proportion.waterfill import MIN_RESOURCE
from solver.features.queues import QueueTree
from solver.features.queues.victims import GangGuard, gang_reclaimable, in_tree, victim_cmp
from solver.problem import IntArray
from solver.quantity import PODS
from solver.snapshot import Snapshot, Workload

__all__ = ["ProportionReclaim", "proportion_reclaim"]


@dataclass
class ProportionReclaim:
    tree: QueueTree  # the call's, with deserved water-filled
    mode: ProportionMode
    snapshot: Snapshot
    rows: IntArray  # [V] evictable snapshot rows charged to a queue of the tree
    queue: list[str]  # [V] their queue
    gangs: bool = True  # the gang plugin's rule: never below a job's minMember
    refused: str = ""  # `Reclaimer.refused`: set by a rule wrapped around it

    def may_reclaim(
        self, queue: str, request: dict[str, int], priority: int = 0, gangs: Sequence[str] = ()
    ) -> str | None:
        """None when `queue` may reclaim for `request`, else why not."""
        q = self.tree.queues[queue]
        if q.state != "Open":
            return f"queue {queue} is {q.state}"
        if self.mode.is_overused(self.tree, queue):
            return f"queue {queue} is overused: it holds its deserved share on every resource"
        return self.mode.gate(self.tree, queue, request, enqueue=False)

    def order(self, reclaimer: str) -> list[int]:
        """Victim indices (other queues only) in the victim order (module docstring)."""
        running, rows = self.snapshot.running, self.rows

        def before(a: int, b: int) -> int:
            qa, qb = self.queue[a], self.queue[b]
            if qa != qb:
                return -self.mode.queue_cmp(self.tree, qa, qb)
            return victim_cmp(running, int(rows[a]), int(rows[b]))

        others = [v for v, q in enumerate(self.queue) if q != reclaimer]
        return sorted(others, key=cmp_to_key(before))

    def eligible_in_order(
        self,
        reclaimer: str,
        request: dict[str, int],
        gangs: Sequence[str] = (),
        accept: Callable[[int], bool] | None = None,
    ) -> Iterator[int]:
        """The victims ReclaimableFn accepts, in order, each accepted one released;
        `accept`: another plugin's rule of the same tier, asked before the release."""
        allocated = {name: dict(q.allocated) for name, q in self.tree.queues.items()}
        guard = GangGuard(self.snapshot) if self.gangs else None
        running = self.snapshot.running
        names = running.resources
        requests = running.requests()
        for i in self.order(reclaimer):
            queue = self.queue[i]
            deserved = self.mode.shares.get(queue, {})
            held = allocated[queue]
            if all(v <= deserved.get(r, 0.0) + MIN_RESOURCE for r, v in held.items() if r != PODS):
                continue  # within its share: not a victim
            row = int(self.rows[i])
            if accept is not None and not accept(i):
                continue
            if guard is not None and not guard.take(row):
                continue
            use = self.mode.view(
                {r: int(v) for r, v in zip(names, requests[row].tolist(), strict=False) if v}
            )
            for r, v in use.items():
                held[r] = held.get(r, 0) - v
            yield i


def proportion_reclaim(
    snapshot: Snapshot, conf: SchedulerConf, workload: Workload, rows: IntArray
) -> ProportionReclaim | None:
    """The call's planner over the evictable running rows `rows`; None without a valid
    queue tree."""
    settled = settled_tree(snapshot, workload, conf, gpu_milli=shares_in_play(snapshot, workload))
    if settled is None:
        return None
    tree, mode = settled
    kept, queues = in_tree(snapshot, rows, tree)
    return ProportionReclaim(tree, mode, snapshot, kept, queues, gangs=gang_reclaimable(conf))
