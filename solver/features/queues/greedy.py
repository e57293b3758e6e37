"""The queue quotas in the greedy engine: the allocate gate, checked pod type by pod type.

A pod of type t may be placed only if, for the type's leaf queue and every ancestor,
`allocated + request ≤ realCapability` on each quota dimension it uses (Volcano checks it
per task before choosing a node); a pod whose use depends on its node (a card pod) is
placed dimension by dimension, preferred first, each on the nodes where it uses that one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solver.features.queues.block import QuotaBlock
from solver.problem import FillMemo, IntArray, Problem, Tracker, fill
from solver.quantity import format_quantity

__all__ = ["QuotaLedger", "fill_within_quota"]


class QuotaLedger:
    """Headroom left during one run (`Ledger` of the greedy state)."""

    @classmethod
    def of(cls, problem: Problem) -> QuotaLedger | None:
        """The ledger of a Problem with a QuotaBlock (None without one)."""
        block = problem.block(QuotaBlock)
        return cls(problem, block) if block is not None else None

    def fill(
        self,
        problem: Problem,
        t: int,
        count: int,
        free: IntArray,
        tracker: Tracker | None,
        memo: FillMemo | None = None,
    ) -> tuple[IntArray, int, str | None]:
        return fill_within_quota(problem, t, count, free, self, tracker, memo)

    def __init__(self, problem: Problem, block: QuotaBlock) -> None:
        self.problem = problem
        self.block = block
        self.left: IntArray = block.headroom.copy()
        self.finite = block.finite

    def _use(self, t: int, dim: int | None) -> IntArray:
        use: IntArray = self.block.type_quota_demand[t].copy()
        if dim is not None and dim >= 0:
            use[dim] += int(self.block.type_node_dim_count[t])
        return use

    def cap(self, t: int, count: int, card: int | None = None) -> tuple[int, str | None]:
        block = self.block
        if not block.type_queues or not block.type_queues[t]:
            return count, None
        use = self._use(t, card)
        allowed, why = count, None
        for q in block.type_queues[t]:
            for d in np.flatnonzero((use > 0) & self.finite[q]).tolist():
                fits = int(self.left[q, d] // use[d])
                if fits < allowed:
                    allowed = max(fits, 0)
                    name = block.quota_dims[d]
                    owner, noun = block.row_of(q)
                    reason = block.dim_reasons[d] if noun == "limit" else f"{noun} used up"
                    why = (
                        f"queue {owner}: {reason} for "
                        f"{name.removeprefix('card:')} "
                        f"({format_quantity(name, int(self.left[q, d]))} left, "
                        f"{format_quantity(name, int(use[d]))} per pod)"
                    )
        return allowed, why

    def charge(self, t: int, n: int, card: int | None = None) -> None:
        if n and self.block.type_queues and self.block.type_queues[t]:
            rows = list(self.block.type_queues[t])
            self.left[rows] -= np.where(self.finite[rows], n * self._use(t, card), 0)

    def admits(self, pod_node: dict[int, IntArray]) -> str | None:
        saved = self.checkpoint()
        try:
            for t, n, dim in self._counts(pod_node):
                allowed, why = self.cap(t, n, dim)
                if allowed < n:
                    return why
                self.charge(t, n, dim)
            return None
        finally:
            self.restore(saved)

    def charge_plan(self, pod_node: dict[int, IntArray]) -> None:
        for t, n, dim in self._counts(pod_node):
            self.charge(t, n, dim)

    def release(self, path: Sequence[str], demand: IntArray) -> None:
        """An evicted pod's request (`demand`, on the Problem's resources) no longer counts
        at its queue and every ancestor (`path`): Volcano's `DeallocateFunc` on `Evict`,
        before the preemptor's pods are checked. Only where the quota dimensions are
        resources (`capacity`); a victim's card use (`capacity-card`) is not released,
        which can only make a plan be refused, never overshoot a quota."""
        resources = self.problem.resources
        dims = self.block.quota_dims
        if not all(d in resources for d in dims):
            return
        use = np.array([demand[resources.index(d)] for d in dims], dtype=np.int64)
        names = set(path)
        rows = [q for q, name in enumerate(self.block.queue_names) if name in names]
        self.left[rows] += np.where(self.finite[rows], use, 0)

    def checkpoint(self) -> object:
        return self.left.copy()

    def restore(self, saved: object) -> None:
        assert isinstance(saved, np.ndarray)
        self.left[:] = saved

    def _counts(self, pod_node: dict[int, IntArray]) -> list[tuple[int, int, int | None]]:
        """(type, pods, node dimension) counts of a plan; None for types without one."""
        out: list[tuple[int, int, int | None]] = []
        rows = self.block.type_node_dim
        for t, nodes in pod_node.items():
            placed = nodes[nodes >= 0]
            if rows is None or not self.block.node_dims(t):
                out.append((t, int(placed.size), None))
                continue
            dims, counts = np.unique(rows[t, placed], return_counts=True)
            out.extend(
                (t, int(c), int(k)) for k, c in zip(dims.tolist(), counts.tolist(), strict=True)
            )
        return out


def fill_within_quota(
    problem: Problem,
    t: int,
    count: int,
    free: IntArray,
    ledger: QuotaLedger,
    tracker: Tracker | None = None,
    memo: FillMemo | None = None,
) -> tuple[IntArray, int, str | None]:
    """`fill` under the quotas. Returns the chosen nodes, how many the quotas admitted, and
    the quota's reason when that was fewer than `count`."""
    block = ledger.block
    dims = block.node_dims(t)
    if not dims or block.type_node_dim is None:
        allowed, why = ledger.cap(t, count)
        nodes = fill(problem, t, allowed, free, tracker=tracker, memo=memo)
        ledger.charge(t, int(nodes.size))
        return nodes, allowed, why
    chosen: list[IntArray] = []
    admitted, why, remaining = 0, None, count
    for dim in dims:
        if remaining <= 0:
            break
        allowed, reason = ledger.cap(t, remaining, dim)
        why = why or (reason if allowed < remaining else None)
        subset = np.flatnonzero(block.type_node_dim[t] == dim)
        nodes = (
            fill(problem, t, allowed, free, subset, tracker, memo)
            if subset.size
            else np.empty(0, dtype=np.int64)
        )
        ledger.charge(t, int(nodes.size), dim)
        admitted += allowed
        remaining -= int(nodes.size)
        chosen.append(nodes)
    nodes = np.concatenate(chosen) if chosen else np.empty(0, dtype=np.int64)
    return nodes, min(admitted, count), why
