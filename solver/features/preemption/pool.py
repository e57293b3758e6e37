"""The potential victims of one priority, kept by deltas across the gang groups of a call.

Koordinator's dry run asks, for every unplaced gang group of priority p: which pods may be
evicted (priority < p, not evicted by an earlier plan of this call), the room they hold on
each node, and each node's job-aware cost (Σ over the distinct candidate jobs on the node
of their priority rank). A pool answers for one p: built once per distinct priority in a
call, O(V log V) for V potential victims; each plan's victims then leave every pool in
O(its victims). A call with G groups pays O(V log V + G·N), not O(G·V log V) — the
difference between milliseconds and minutes for a backlog of gangs on a busy cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from solver.features.preemption.victims import PreemptionInput
from solver.problem import BoolArray, IntArray

__all__ = ["CandidatePool"]


@dataclass
class CandidatePool:
    pre: PreemptionInput
    alive: BoolArray  # [V] a candidate, not yet evicted
    room: IntArray  # [N, R] what the alive candidates hold on each node
    node_cost: IntArray  # [N] Σ over distinct alive candidate jobs on the node of their rank
    pair_keys: IntArray  # sorted node × J + job of every (node, job) with candidates
    pair_counts: IntArray  # alive candidates of that job on that node
    order: IntArray  # the candidates sorted by node
    bounds: IntArray  # [N + 1] node n's candidates: order[bounds[n]:bounds[n + 1]]
    size: int  # alive candidates

    @classmethod
    def build(cls, pre: PreemptionInput, num_nodes: int, candidates: IntArray) -> CandidatePool:
        alive = np.zeros(len(pre.rows), dtype=bool)
        alive[candidates] = True
        nodes = pre.victim_node[candidates]
        demand = pre.victim_demand[candidates]
        room = np.zeros((num_nodes, demand.shape[1]), dtype=np.int64)
        for r in range(demand.shape[1]):  # a bincount per resource: np.add.at is slower
            room[:, r] = np.bincount(nodes, weights=demand[:, r], minlength=num_nodes)
        jobs = len(pre.job_rank)
        keys, counts = np.unique(
            nodes.astype(np.int64) * jobs + pre.victim_job[candidates], return_counts=True
        )
        node_cost = np.bincount(
            keys // jobs, weights=pre.job_rank[keys % jobs], minlength=num_nodes
        ).astype(np.int64)
        # a stable sort by node (a radix sort on 16-bit node ids where they fit)
        narrow = nodes.astype(np.int16) if num_nodes < 2**15 else nodes
        order = candidates[np.argsort(narrow, kind="stable")]
        bounds = np.searchsorted(pre.victim_node[order], np.arange(num_nodes + 1))
        return cls(
            pre, alive, room, node_cost, keys, counts.astype(np.int64), order, bounds,
            int(candidates.size),
        )  # fmt: skip

    def remove(self, victims: Iterable[int]) -> None:
        """These pods are evicted by a plan: no longer candidates (if they were)."""
        pre, jobs = self.pre, len(self.pre.job_rank)
        for v in victims:
            if not self.alive[v]:
                continue
            self.alive[v] = False
            self.size -= 1
            n, j = int(pre.victim_node[v]), int(pre.victim_job[v])
            self.room[n] -= pre.victim_demand[v]
            at = int(np.searchsorted(self.pair_keys, n * jobs + j))
            self.pair_counts[at] -= 1
            if self.pair_counts[at] == 0:
                self.node_cost[n] -= int(pre.job_rank[j])

    def on_nodes(self, nodes: Iterable[int]) -> IntArray:
        """The alive candidates on these nodes, node by node."""
        parts = [self.order[self.bounds[n] : self.bounds[n + 1]] for n in nodes]
        found = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return found[self.alive[found]]

    def candidates(self) -> IntArray:
        """Every alive candidate (O(V): the exact plan's input only)."""
        return np.flatnonzero(self.alive)
