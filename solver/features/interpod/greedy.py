"""The greedy's view of the inter-pod rows: per-domain counts that move pod by pod.

`TermTracker` answers, for one more pod of a type, which nodes its rows allow now (a
reason code per node, kube-scheduler's filter order: PodTopologySpread, then
InterPodAffinity's affinity, anti-affinity and existing pods' anti-affinity), and counts
each placed pod in every row that matches it. `solver.problem.fill` places the pods of an
involved type one at a time through it; units are rolled back with `checkpoint`/`restore`.
"""

from __future__ import annotations

import numpy as np

from solver.features.interpod.block import InterPodBlock
from solver.problem import IntArray, Problem, Tracker

__all__ = ["TermTracker", "interpod_tracker"]


class TermTracker(Tracker):
    def __init__(self, block: InterPodBlock) -> None:
        self.block = block
        # matching pods, and owners, per domain of each row; one more slot at the end
        # stands for "no domain" (a node without the key) and always holds 0
        self.counts: list[IntArray] = [np.append(row.existing, 0) for row in block.rows]
        self.owners: list[IntArray] = [
            np.zeros(row.existing.size + 1, dtype=np.int64) for row in block.rows
        ]
        self._slot = [
            np.where(dom >= 0, dom, n).astype(np.int64)
            for dom, n in zip(block.domain, block.num_domains, strict=True)
        ]
        num_types = block.involved.size
        self._owned = [block.owned(t) for t in range(num_types)]
        self._matched = [block.matched(t) for t in range(num_types)]
        self._counted = [
            block.spread_counted_domains(i) if row.kind == "spread" else None
            for i, row in enumerate(block.rows)
        ]

    def involved(self, t: int) -> bool:
        return bool(self.block.involved[t])

    def verdict(self, t: int) -> IntArray:
        block = self.block
        spread, affinity, anti, existing = block.reason_codes
        codes = np.zeros(block.domain[0].size if block.domain else 0, dtype=np.int64)
        for i in self._owned[t]:
            if block.rows[i].kind == "spread":
                self._mark(codes, ~self._spread_ok(i, t), spread)
        for i in self._matched[t]:
            row = block.rows[i]
            if row.kind == "spread" and t not in row.owners:
                self._mark(codes, ~self._spread_ok(i, t), spread)
        groups: dict[int, list[int]] = {}
        for i in self._owned[t]:
            if block.rows[i].kind == "affinity":
                groups.setdefault(block.rows[i].group, []).append(i)
        for rows in groups.values():
            self._mark(codes, ~self._affinity_ok(rows), affinity)
        for i in self._owned[t]:
            row = block.rows[i]
            if row.kind == "anti":
                self._mark(codes, self.counts[i][self._slot[row.key]] > 0, anti)
        for i in self._matched[t]:
            row = block.rows[i]
            if row.kind == "anti":
                self._mark(codes, self.owners[i][self._slot[row.key]] > 0, existing)
        return codes

    @staticmethod
    def _mark(codes: IntArray, failing: np.ndarray, code: int) -> None:
        codes[(codes == 0) & failing] = code

    def _spread_ok(self, i: int, t: int) -> np.ndarray:
        """Nodes where one more pod of t keeps spread row i's skew (owner: its own check;
        a matcher only: the bound of the domains that hold owners)."""
        row = self.block.rows[i]
        dom = self.block.domain[row.key]
        counts = self.counts[i]
        counted = self._counted[i]
        assert counted is not None
        # kube-scheduler: the global minimum is 0 below minDomains counted domains
        low = 0 if counted.sum() < row.min_domains else int(counts[:-1][counted].min())
        own = t in row.owners
        add = (1 if t in row.self_match else 0) if own else 1
        slot = self._slot[row.key]
        ok = counts[slot] + add - low <= row.max_skew
        if not own:  # only domains holding owners are bound; elsewhere anything goes
            ok |= self.owners[i][slot] == 0
            if row.counted is not None:
                ok |= ~row.counted  # a pod on an uncounted node changes no count
        return ok | (dom < 0)

    def _affinity_ok(self, rows: list[int]) -> np.ndarray:
        block = self.block
        ok = np.ones(block.domain[0].size, dtype=bool)
        for i in rows:
            ok &= self.counts[i][self._slot[block.rows[i].key]] > 0
        first = block.rows[rows[0]]
        if first.seedable and all(int(self.counts[i].sum()) == 0 for i in rows):
            # kube-scheduler: no pod anywhere matches, and the pod matches its own terms
            # (nodes without a term's key are filtered out at compile)
            ok[:] = True
        return ok

    def place(self, t: int, node: int) -> None:
        block = self.block
        for i in self._matched[t]:
            row = block.rows[i]
            d = int(block.domain[row.key][node])
            if d >= 0 and (row.counted is None or row.counted[node]):
                self.counts[i][d] += 1
        for i in self._owned[t]:
            d = int(block.domain[block.rows[i].key][node])
            if d >= 0:
                self.owners[i][d] += 1

    def checkpoint(self) -> object:
        return ([c.copy() for c in self.counts], [o.copy() for o in self.owners])

    def restore(self, saved: object) -> None:
        assert isinstance(saved, tuple)
        counts: list[IntArray] = saved[0]
        owners: list[IntArray] = saved[1]
        for mine, theirs in zip(self.counts, counts, strict=True):
            mine[:] = theirs
        for mine, theirs in zip(self.owners, owners, strict=True):
            mine[:] = theirs


def interpod_tracker(problem: Problem) -> Tracker | None:
    block = problem.block(InterPodBlock)
    return TermTracker(block) if block is not None and block.rows else None
