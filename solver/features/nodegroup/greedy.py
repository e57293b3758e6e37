"""Node-group resource limits in the greedy: a tracker the limited pods are placed through.

Volcano checks the limit per task as it allocates (`allocated(Q, G) + request ≤ limit`,
then the allocate event adds the request), so the greedy places the pods of a limited
queue one at a time and a group that has just filled up stops taking them — the next pod
overflows to the best node of another allowed group. `verdict` gives the reason code of
every node whose group has no room for one more pod of the type; `place` charges a pod.
Preemption uses the same tracker to check a plan, after releasing the victims' use.
"""

from __future__ import annotations

import numpy as np

from solver.features.nodegroup.limits import REASON_LIMIT_EXCEEDED, NodeGroupLimitBlock
from solver.problem import IntArray, Problem, Tracker

__all__ = ["GroupLimitTracker", "nodegroup_tracker"]


class GroupLimitTracker(Tracker):
    def __init__(self, problem: Problem, block: NodeGroupLimitBlock) -> None:
        self.problem = problem
        self.block = block
        self.left: IntArray = block.headroom.copy()
        self.finite = block.finite
        self._keys: dict[int, IntArray] = {}  # queue row -> [N] limit per node
        self._key_of = {key: k for k, key in enumerate(block.keys)}
        self._dims = [
            problem.resources.index(r) if r in problem.resources else -1 for r in block.dims
        ]

    def _node_key(self, t: int) -> IntArray:
        row = int(self.block.type_queue[t])
        if row not in self._keys:
            self._keys[row] = self.block.node_key(t)
        return self._keys[row]

    def involved(self, t: int) -> bool:
        return bool(self.block.type_queue[t] >= 0)

    def verdict(self, t: int) -> IntArray:
        keys = self._node_key(t)
        full = np.append(self.block.room(t, self.left) <= 0, False)  # key -1: no limit
        return np.where(full[keys], self.block.reason_code, 0).astype(np.int64)

    def place(self, t: int, node: int) -> None:
        self._charge(int(self._node_key(t)[node]), self.block.type_use[t], 1)

    def _charge(self, k: int, use: IntArray, sign: int) -> None:
        if k >= 0:
            self.left[k] -= np.where(self.finite[k], sign * use, 0)

    def release(self, queue: str, node: int, demand: IntArray) -> None:
        """A victim of `queue` on `node` is evicted: its request (`demand`, on the
        Problem's resources) no longer counts against its queue's limit for that group."""
        group = int(self.block.node_group[node])
        k = self._key_of.get((queue, self.block.group_names[group])) if group >= 0 else None
        if k is not None:
            use = np.array([demand[i] if i >= 0 else 0 for i in self._dims], dtype=np.int64)
            self._charge(k, use, -1)

    def charge_plan(self, pod_node: dict[int, IntArray]) -> None:
        """Count pods already placed (node per pod, per type, -1 = none)."""
        for t, nodes in pod_node.items():
            if self.involved(t):
                for n in nodes[nodes >= 0].tolist():
                    self.place(t, n)

    def refuses(self, pod_node: dict[int, IntArray]) -> str | None:
        """Place a plan pod by pod (counted in when every pod fits); why not otherwise,
        leaving the tracker as it was."""
        saved = self.checkpoint()
        for t, nodes in pod_node.items():
            if not self.involved(t):
                continue
            for n in nodes[nodes >= 0].tolist():
                k = int(self._node_key(t)[n])
                if k >= 0 and self.block.room(t, self.left)[k] <= 0:
                    self.restore(saved)
                    q, g = self.block.keys[k]
                    return f"queue {q}: node group {g}: {REASON_LIMIT_EXCEEDED}"
                self.place(t, n)
        return None

    def checkpoint(self) -> object:
        return self.left.copy()

    def restore(self, saved: object) -> None:
        assert isinstance(saved, np.ndarray)
        self.left[:] = saved


def nodegroup_tracker(problem: Problem) -> GroupLimitTracker | None:
    """The tracker of a Problem with node-group limits, else None."""
    block = problem.block(NodeGroupLimitBlock)
    return GroupLimitTracker(problem, block) if block is not None else None
