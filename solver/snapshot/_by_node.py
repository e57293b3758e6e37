"""The running rows of each node, kept by deltas: which pods run on a node, without a scan
of every running pod.

A base built once (the rows sorted by node, with each node's offset) and the rows appended
since, unsorted: a generation's delta only appends, so the index moves in O(delta), and it
is rebuilt when the appended rows outgrow `REBUILD_AT` or an eighth of the base. Retired
rows stay in it and are left out on reading (`alive`).
"""

from __future__ import annotations

import numpy as np

from solver.arrays import IntArray
from solver.snapshot._columns import RunningPods

__all__ = ["NodeRows"]

REBUILD_AT = 4096
"""Appended rows kept unsorted before the base is rebuilt (at least; or len / 8)."""


class NodeRows:
    __slots__ = ("added", "order", "start")

    def __init__(self, order: IntArray, start: IntArray, added: IntArray) -> None:
        self.order, self.start, self.added = order, start, added
        for array in (order, start, added):
            array.flags.writeable = False

    @classmethod
    def build(cls, running: RunningPods) -> NodeRows:
        where = running.node
        order = np.argsort(where, kind="stable").astype(np.int64)
        bounds = np.arange(len(running.nodes) + 1)
        start = np.searchsorted(where[order], bounds).astype(np.int64)
        return cls(order, start, np.zeros(0, dtype=np.int64))

    def extended(self, running: RunningPods, added: IntArray) -> NodeRows:
        """This index with the rows `added` since (appended by the delta)."""
        rows = np.concatenate([self.added, added.astype(np.int64)])
        if rows.size > max(REBUILD_AT, self.order.size // 8):
            return NodeRows.build(running)
        return NodeRows(self.order, self.start, rows)

    def rows_on(self, running: RunningPods, nodes: IntArray) -> IntArray:
        """Live rows on `nodes` (node indices), ascending."""
        nodes = np.asarray(nodes, dtype=np.int64)
        parts = [self.order[self.start[n] : self.start[n + 1]] for n in nodes.tolist()]
        if self.added.size:
            parts.append(self.added[np.isin(running.node[self.added], nodes)])
        rows = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return np.sort(rows[running.alive[rows]])
