"""The order of reclaim victims inside one queue, shared by `capacity` and `proportion`:
the reverse of the task order (upstream `BuildVictimsPriorityQueue`):

1. lower priority first;
2. then the higher pod index (`<job>-<task>-<index>`, upstream `GetPodIndexUnderTask`);
3. then the later pod key (upstream: newer creationTimestamp, then the higher UID).
"""

from __future__ import annotations

import re

import numpy as np

from solver.config import Plugin, SchedulerConf
from solver.features.queues.tree import QueueTree
from solver.problem import IntArray
from solver.snapshot import NONE, RunningPods, Snapshot, charged_queue

__all__ = ["GangGuard", "gang_reclaimable", "in_tree", "victim_cmp"]

_INDEX = re.compile(r"[+-]?[0-9]{1,18}", re.ASCII)  # what strconv.Atoi takes (int64)


def victim_cmp(running: RunningPods, a: int, b: int) -> int:
    """-1 when running row a is evicted before row b, 1 after, 0 for the same pod."""
    pa, pb = int(running.priority[a]), int(running.priority[b])
    if pa != pb:
        return -1 if pa < pb else 1
    ka, kb = running.key(a), running.key(b)
    ia, ib = _pod_index(ka), _pod_index(kb)
    if ia is not None and ib is not None and ia != ib:
        return -1 if ia > ib else 1
    return -1 if ka > kb else (1 if ka < kb else 0)


def _pod_index(key: str) -> int | None:
    parts = key.rsplit("/", 1)[-1].split("-")
    if len(parts) < 3 or not _INDEX.fullmatch(parts[-1]):
        return None
    return int(parts[-1])


def in_tree(snapshot: Snapshot, rows: IntArray, tree: QueueTree) -> tuple[IntArray, list[str]]:
    """The running `rows` charged to a queue of `tree` (its gang's spec.queue, else the
    pod's annotation), and that queue of each: the reclaim candidates of a quota plugin."""
    queue_ids = charged_queue(snapshot.running, rows, snapshot.gang_queue)
    names = snapshot.running.queue_names
    inside = {  # each distinct queue once
        q: names.value(q)
        for q in np.unique(queue_ids[queue_ids != NONE]).tolist()
        if names.value(q) in tree.queues
    }
    keep = np.flatnonzero(np.isin(queue_ids, list(inside)))
    return rows[keep], [inside[q] for q in queue_ids[keep].tolist()]


def gang_reclaimable(conf: SchedulerConf) -> bool:
    """The gang plugin's reclaim rule is on: `gang` listed, `enableReclaimable` not false."""
    plugin = conf.plugin(Plugin.GANG)
    return plugin is not None and plugin.options.get("enableReclaimable") is not False


class GangGuard:
    """Volcano's gang plugin as a reclaim rule (its `ReclaimableFn`): a running pod is a
    victim only while its job keeps more than its minMember running pods after the victims
    already taken; a pod without a PodGroup is a job of one with minMember 1 (Volcano's
    shadow PodGroup), so it never is."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.ready: dict[int, int] = {}  # gang id -> running pods after the victims so far

    def take(self, row: int) -> bool:
        """Whether `row` may go; when it may, it is counted as gone."""
        running = self.snapshot.running
        g = int(running.gang[row])
        if g == NONE:
            return False
        name = running.gang_name(g)
        spec = self.snapshot.gangs.get(name)
        left = self.ready.setdefault(g, self.snapshot.gang_running(name))
        if left <= (spec.min_member if spec is not None else 1):
            return False
        self.ready[g] = left - 1
        return True
