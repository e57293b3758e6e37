"""The order of reclaim victims inside one queue, shared by `capacity` and `proportion`:
the reverse of the task order (upstream `BuildVictimsPriorityQueue`):

1. lower priority first;
2. then the higher pod index (`<job>-<task>-<index>`, upstream `GetPodIndexUnderTask`);
3. then the later pod key (upstream: newer creationTimestamp, then the higher UID).
"""

from __future__ import annotations

import re

import numpy as np

from solver.features.queues.tree import QueueTree
from solver.problem import IntArray
from solver.snapshot import NONE, RunningPods, Snapshot, charged_queue

__all__ = ["in_tree", "victim_cmp"]

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
    keep = [
        v for v, q in enumerate(queue_ids.tolist()) if q != NONE and names.value(q) in tree.queues
    ]
    return rows[np.array(keep, dtype=np.int64)], [names.value(int(queue_ids[v])) for v in keep]
