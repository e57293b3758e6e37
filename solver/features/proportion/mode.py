"""Volcano's `proportion` plugin as a `QuotaMode` of the shared queue machinery.

What changes against `capacity` (`proportion.go`):

* **Flat**: every queue is a child of the cluster; `parent` is not read.
  realCapability = min(max(cluster − Σ guarantees, 0) + guarantee, capability), as
  `capacity` computes without `enableHierarchy`.
* **Deserved** is not read from the Queue: it is water-filled over the queues that have
  jobs, by `spec.weight` (`waterfill.py`), from what each queue's running pods use and its
  pending pods ask for (the snapshot's pending pods and the call's). It depends on the call,
  so it is derived on the call's copy of the tree (`settle`).
* **Allocate** gate: `allocated + request ≤ deserved` on the resources a pod requests
  (`AllocatableFn`); a queue whose allocated reaches its deserved on every resource is
  overused and gets nothing (`OverusedFn`, which the allocate gate already implies for any
  pod that requests something).
* **Enqueue** gate: `minResources + allocated + inqueue − elastic ≤ realCapability` at the
  job's own queue (`JobEnqueueableFn`).
* **Queue order**: priority higher first, then share (allocated / deserved, the largest
  over the resources it deserves) lower first, then name (upstream: creation time, then UID).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from solver.config import Plugin, SchedulerConf
from solver.features.proportion.waterfill import (
    MIN_RESOURCE,
    Claim,
    floor_limit,
    share,
    water_fill,
)
from solver.features.queues import ROOT, QueueTree, QuotaMode, build_queue_tree, call_requests
from solver.model import job_queue
from solver.quantity import PODS, UNLIMITED, format_quantity
from solver.snapshot import Snapshot, Workload

__all__ = ["ProportionMode", "settled_tree"]


class ProportionMode(QuotaMode):
    plugin = Plugin.PROPORTION

    def __init__(self, conf: SchedulerConf, *, gpu_milli: bool = False) -> None:
        super().__init__(conf, gpu_milli=gpu_milli)
        self.hierarchical = False
        options = plugin.options if (plugin := conf.plugin(self.plugin)) else {}
        # Volcano's per-plugin switches (`conf.PluginOption`), each on unless set false
        self.ordered = options.get("enableQueueOrder") is not False
        self.allocatable = options.get("enabledAllocatable") is not False
        self.overused = options.get("enabledOverused") is not False
        self.enqueueable = options.get("enableJobEnqueued") is not False
        self.shares: dict[str, dict[str, float]] = {}  # the call's deserved, unrounded

    @property
    def key(self) -> Hashable:
        return (self.plugin, self.gpu_milli)  # the switches act per call, not on the tree

    def capabilities(self, snapshot: Snapshot, tree: QueueTree) -> None:
        super().capabilities(snapshot, tree)
        for q in tree.queues.values():  # water-filled per call (`settle`), never read
            q.deserved = {}

    # ------------------------------------------------------------------ deserved

    def settle(
        self,
        snapshot: Snapshot,
        workload: Workload,
        tree: QueueTree,
        call_queues: Sequence[str | None],
    ) -> None:
        requests = call_requests(snapshot, workload, self)
        jobs = (self.queues_in_use(snapshot) | {q for q in call_queues if q}) & set(tree.queues)
        claims = {}
        for name in sorted(jobs - {ROOT}):
            q = tree.queues[name]
            asked = dict(q.allocated)
            for r, v in requests.get(name, {}).items():
                asked[r] = asked.get(r, 0) + v
            weight = q.spec.weight if q.spec is not None else 1
            claims[name] = Claim(weight, q.real_capability, asked, q.guarantee)
        total = tree.queues[ROOT].capability
        for name, deserved in water_fill(total, claims).items():
            tree.queues[name].deserved = {r: floor_limit(v) for r, v in deserved.items() if v > 0}
            self.shares[name] = deserved

    # ------------------------------------------------------------------ gates and order

    def allocate_limit(self, tree: QueueTree, name: str, resource: str) -> int:
        if name == ROOT:
            return UNLIMITED
        q = tree.queues[name]
        if self.allocatable:
            return floor_limit(self.shares.get(name, {}).get(resource, 0.0))
        if self.overused and self.is_overused(tree, name):
            return q.allocated.get(resource, 0)  # no room at all
        return UNLIMITED

    def is_overused(self, tree: QueueTree, name: str) -> bool:
        """deserved ≤ allocated on every resource (`OverusedFn`)."""
        allocated = tree.queues[name].allocated
        return all(
            v <= allocated.get(r, 0) + MIN_RESOURCE for r, v in self.shares.get(name, {}).items()
        )

    def gate(
        self, tree: QueueTree, leaf: str, request: dict[str, int], *, enqueue: bool
    ) -> str | None:
        q = tree.queues[leaf]
        if enqueue and not self.enqueueable:
            return None
        if not enqueue and self.overused and self.is_overused(tree, leaf):
            return f"queue {leaf} is overused: it holds its deserved share on every resource"
        for r, v in sorted(request.items()):
            if v <= 0 or r == PODS:
                continue
            used = q.allocated.get(r, 0)
            if enqueue:
                used = used + q.inqueue.get(r, 0) - q.elastic.get(r, 0)
                limit, what = q.real(r), "realCapability"
            else:
                limit, what = self.allocate_limit(tree, leaf, r), "deserved"
            if limit < UNLIMITED and used + v > limit:
                return (
                    f"queue {leaf}: {r} {format_quantity(r, v)} requested + "
                    f"{format_quantity(r, used)} in use > {what} {format_quantity(r, limit)} "
                    f"(over by {format_quantity(r, used + v - limit)})"
                )
        return None

    def queue_cmp(self, tree: QueueTree, a: str, b: str) -> int:
        qa, qb = tree.queues[a], tree.queues[b]
        if not self.ordered:
            return (a > b) - (a < b)
        if qa.priority != qb.priority:
            return -1 if qa.priority > qb.priority else 1
        sa = share(qa.allocated, self.shares.get(a, {}))
        sb = share(qb.allocated, self.shares.get(b, {}))
        if sa != sb:
            return -1 if sa < sb else 1
        return (a > b) - (a < b)

    def reason(self, dim: str, dims: Sequence[str]) -> str:
        return "deserved share (proportion) used up"


def settled_tree(
    snapshot: Snapshot, workload: Workload, conf: SchedulerConf, *, gpu_milli: bool = False
) -> tuple[QueueTree, ProportionMode] | None:
    """The flat queue tree with every queue's deserved share water-filled for `workload`,
    and its mode; None without queues or with a broken tree."""
    mode = ProportionMode(conf, gpu_milli=gpu_milli)
    queues = [job_queue(g, workload.members(gid)) for gid, g in workload.gangs.items()]
    tree = build_queue_tree(snapshot, mode, (q for q in queues if q))
    if tree is None or tree.broken:
        return None
    mode.settle(snapshot, workload, tree, queues)
    return tree, mode
