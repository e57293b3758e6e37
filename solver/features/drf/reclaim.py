"""Hierarchical DRF's reclaim rule (`drf.go` with `enableHierarchy`: its `ReclaimableFn`).

Volcano asks it for each task of a reclaiming job, on each node, of every reclaimee there:
on a copy of the hDRF tree (`hdrf.py`) where the reclaimer's job holds that task more and
the reclaimee's job that pod less, the reclaimer's queue must go first
(`compareQueues(root, lqueue, rqueue) < 0`). Evictions and the tasks pipelined move the
tree for the next questions (drf's `DeallocateFunc` / `AllocateFunc`). The quota plugin's
rule (capacity's or proportion's, `features.preemption.reclaim`) holds too: Volcano
intersects the victims of the plugins of one tier, as upstream's reclaim tests list them.

gangplan plans a job's reclaim whole rather than task by task on each node: the victims
come in the quota plugin's order and each is judged as above; the reclaimer's job counts
one task more for each task's request that the victims accepted so far have freed
(upstream pipelines a task once its node has the room), and each accepted victim leaves
its job's leaf. Running jobs are saturated leaves (every pod of theirs runs), summed per
queue until one of their pods is judged, when the job gets a leaf of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np

from solver.features.drf.hdrf import HdrfTree, hierarchy_path
from solver.features.queues import QueueTree
from solver.problem import FloatArray, IntArray
from solver.quantity import PODS
from solver.snapshot import NONE, Snapshot, Workload, charged_queue

__all__ = ["FilteredReclaimer", "HdrfReclaim"]


class FilteredReclaimer(Protocol):
    """A quota plugin's reclaim that asks one more rule of each victim before taking it
    (`accept(k)`, before its own bookkeeping counts the victim as evicted)."""

    tree: QueueTree
    rows: IntArray
    refused: str

    def may_reclaim(
        self, queue: str, request: dict[str, int], priority: int = 0, gangs: Sequence[str] = ()
    ) -> str | None: ...

    def eligible_in_order(
        self,
        reclaimer: str,
        request: dict[str, int],
        gangs: Sequence[str] = (),
        accept: Callable[[int], bool] | None = None,
    ) -> Iterator[int]: ...


class HdrfReclaim:
    """The quota plugin's reclaim with hDRF's rule on every victim (`Reclaimer`)."""

    def __init__(self, inner: FilteredReclaimer, snapshot: Snapshot, workload: Workload) -> None:
        self.inner, self.snapshot, self.workload = inner, snapshot, workload
        self.tree, self.rows = inner.tree, inner.rows
        self.refused = ""

    def may_reclaim(
        self, queue: str, request: dict[str, int], priority: int = 0, gangs: Sequence[str] = ()
    ) -> str | None:
        return self.inner.may_reclaim(queue, request, priority, gangs)

    def eligible_in_order(
        self, reclaimer: str, request: dict[str, int], gangs: Sequence[str] = ()
    ) -> Iterator[int]:
        judge = _Judge(self.snapshot, self.workload, reclaimer, gangs)
        rows = self.rows
        self.refused = ""
        for k in self.inner.eligible_in_order(
            reclaimer, request, gangs, accept=lambda k: judge.accepts(int(rows[k]))
        ):
            judge.evict(int(rows[k]))
            yield k
        if judge.refused:
            self.refused = (
                f"hierarchical DRF (drf enableHierarchy) refused {judge.refused} of them: with "
                f"one more task, queue {reclaimer} would not go before their queues (queues "
                "without a volcano.sh/hierarchy annotation share the root, where none goes "
                "first)"
            )


class _Judge:
    """The hDRF tree of one reclaiming job, moved by its evictions and pipelined tasks."""

    def __init__(
        self, snapshot: Snapshot, workload: Workload, reclaimer: str, gangs: Sequence[str]
    ) -> None:
        running = self.running = snapshot.running
        total = snapshot.nodes.total
        self.cols = [i for i, r in enumerate(running.resources) if r != PODS and total.get(r, 0)]
        names = [running.resources[i] for i in self.cols]
        tree = self.tree = HdrfTree(np.array([total[r] for r in names], dtype=np.float64))
        self.snapshot = snapshot
        self.paths: dict[str, tuple[int, ...]] = {}
        self.held: dict[str, int] = {}  # queue -> the leaf of its running jobs, summed
        usage = snapshot.usage.queue_requests
        for q in range(min(len(running.queue_names), usage.shape[0])):
            if usage[q].any():
                name = running.queue_names.value(q)
                amounts = usage[q][self.cols].astype(np.float64)
                self.held[name] = tree.job(self._path(name)[-1], amounts, amounts)
        own = np.zeros(len(self.cols))
        pending = np.zeros(len(self.cols))
        tasks: list[FloatArray] = []
        for gid in gangs:
            if 0 <= (g := running.gang_id(gid)) < snapshot.usage.gang_requests.shape[0]:
                own += snapshot.usage.gang_requests[g][self.cols]
            for pod in workload.members(gid):
                ask = np.array([pod.requests.get(r, 0) for r in names], dtype=np.float64)
                pending += ask
                tasks.append(ask)
        leaf = self._leaf_of(reclaimer, own)
        tree.request[leaf] = tree.request[leaf] + pending
        tree.refresh()
        self.leaf, self.lpath = leaf, self._path(reclaimer)
        self.task = tasks[0] if tasks else np.zeros(len(self.cols))
        self.tasks_left = len(tasks)
        self.freed = np.zeros(len(self.cols))
        self.pipelined = 0
        self.refused = 0  # victims the quota plugin allowed and this rule did not
        self.verdicts: dict[tuple[int, bytes], bool] = {}  # (job leaf, request) -> taken
        self.jobs: dict[int, int] = {}  # running gang id (or -1 - row) -> its leaf

    def _path(self, queue: str) -> tuple[int, ...]:
        if queue not in self.paths:
            spec = self.snapshot.queues.get(queue)
            self.paths[queue] = self.tree.path(
                *hierarchy_path(dict(spec.annotations) if spec is not None else {})
            )
        return self.paths[queue]

    def _leaf_of(self, queue: str, amounts: FloatArray) -> int:
        """A leaf of its own for a job of `queue` holding `amounts` of the queue's sum."""
        held = self.held.get(queue)
        if held is None:
            leaf = self.tree.job(self._path(queue)[-1], amounts, amounts)
            self.tree.refresh()
            return leaf
        return self.tree.split(held, amounts)

    def _victim(self, row: int) -> tuple[int, str, FloatArray]:
        """(the victim's job leaf, its queue, its request on the tree's columns)."""
        running = self.running
        request = running.requests(rows=np.array([row]))[0][self.cols].astype(np.float64)
        q = int(charged_queue(running, np.array([row]), self.snapshot.gang_queue)[0])
        queue = running.queue_names.value(q) if q != NONE else ""
        g = int(running.gang[row])
        key = g if g != NONE else -1 - row
        if key not in self.jobs:
            usage = self.snapshot.usage.gang_requests
            whole = usage[g][self.cols].astype(np.float64) if g != NONE else request
            self.jobs[key] = self._leaf_of(queue, whole)
        return self.jobs[key], queue, request

    def accepts(self, row: int) -> bool:
        """The reclaimer's queue goes first with one more task, the victim's job one pod
        less (upstream: `ret < 0`)."""
        leaf, queue, request = self._victim(row)
        seen = (leaf, request.tobytes())  # a job's pods of one request get one verdict
        if seen not in self.verdicts:  # until the tree moves (`evict`)
            tree = self.tree
            tree.adjust([(self.leaf, self.task), (leaf, -request)], root=False)
            ret = tree.compare(self.lpath, self._path(queue))
            tree.adjust([(self.leaf, -self.task), (leaf, request)], root=False)
            self.verdicts[seen] = ret < 0
        self.refused += not self.verdicts[seen]
        return self.verdicts[seen]

    def evict(self, row: int) -> None:
        """The victim is gone; the tasks its room (with the others') holds are pipelined."""
        leaf, _, request = self._victim(row)
        self.verdicts.clear()
        changes = [(leaf, -request)]
        self.freed += request
        asked = self.task > 0
        if asked.any():
            covered = int(np.floor((self.freed[asked] / self.task[asked]).min()))
            more = min(covered, self.tasks_left) - self.pipelined
            if more > 0:
                changes.append((self.leaf, self.task * more))
                self.pipelined += more
        self.tree.adjust(changes, root=False)
