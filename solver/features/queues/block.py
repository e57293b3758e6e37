"""The queue quotas' part of a Problem (capacity or capacity-card): Q queues on the paths of
the call's jobs, D quota dimensions.

HARD, at every queue q and dimension d with a finite headroom:
    Σ_t [q ∈ type_queues[t]] · type_quota_demand[t, d] · placed(t)
  + Σ_t [q ∈ type_queues[t]] · type_node_dim_count[t] · placed(t on nodes n with type_node_dim[t, n] = d)
    ≤ headroom[q, d]
The second sum is the use that depends on the node a pod lands on (a card pod uses the
quota of the card type of its node).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.queues.fairness import FAIR_SCALE, fair_share, placed_use
from solver.problem import Block, IntArray, Problem, Rows, TierSpec
from solver.quantity import UNLIMITED

__all__ = ["QuotaBlock"]


@dataclass(frozen=True, eq=False)
class QuotaBlock(Block):
    queue_names: tuple[str, ...]  # [Q]
    quota_dims: tuple[str, ...]  # [D] the resources (capacity) or cpu, memory and
    #   `card:<card type>` (capacity-card)
    dim_reasons: tuple[str, ...]  # [D] how a shortfall on the dimension reads
    headroom: IntArray  # [Q, D] realCapability − allocated at the start of the cycle;
    #   UNLIMITED = no limit
    type_queues: tuple[tuple[int, ...], ...]  # [T] the type's leaf queue and its ancestors
    type_quota_demand: IntArray  # [T, D] one pod's use of each dimension, node-independent
    type_node_dims: tuple[tuple[int, ...], ...] = ()  # [T] dimensions whose use depends on
    #   the node (card alternatives), preferred first; () = none
    type_node_dim_count: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #   [T] how much of that dimension one pod uses
    type_node_dim: Rows[np.int64] | None = None  # [T, N] the dimension a pod of type t uses
    #   on node n; -1 = none (such nodes are not eligible for it)
    limit: IntArray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    #   [Q, D] the allocate gate's limit (UNLIMITED = none); headroom = max(0, limit − allocated)
    allocated: IntArray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    #   [Q, D] what the queue's running pods hold at the start of the call (reported only)
    fair_target: IntArray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    #   [Q, D] the fairness tier's target at each leaf queue (`fairness.py`); all 0: no tier
    extra_rows: tuple[tuple[str, str], ...] = ()  # rows beyond the queues' (the last ones):
    #   (the queue a row belongs to, what its limit is called), e.g. a KAI queue's
    #   ("inference", "non-preemptible quota")

    def row_of(self, q: int) -> tuple[str, str]:
        """(queue, what its limit is called) of row q: ("team-a", "limit") for a queue."""
        first = len(self.queue_names) - len(self.extra_rows)
        return self.extra_rows[q - first] if q >= first else (self.queue_names[q], "limit")

    @property
    def finite(self) -> np.ndarray:
        return self.headroom < UNLIMITED

    def node_dims(self, t: int) -> tuple[int, ...]:
        return self.type_node_dims[t] if self.type_node_dims else ()

    def tiers(self, problem: Problem) -> list[TierSpec]:
        """`fair_share` when two or more queues compete (`fairness.py`)."""
        return [TierSpec("fair_share", 0, FAIR_SCALE)] if self.fair_target.any() else []

    def bound(self, problem: Problem, skip: frozenset[int]) -> dict[str, int]:
        """`fair_share` only grows with what is placed: its value with every pod placed
        (but the types no answer can place) bounds every answer."""
        if not self.fair_target.any():
            return {}
        every = [
            np.full(len(pods), -1 if t in skip else 0, dtype=np.int64)
            for t, pods in enumerate(problem.type_pods)
        ]
        return self.evaluate(problem, every)

    def evaluate(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
        if not self.fair_target.any():
            return {}
        placed = placed_use(
            problem, self.type_queues, self.type_quota_demand, pod_node, len(self.queue_names)
        )
        return {"fair_share": fair_share(self.fair_target, self.allocated, placed)}
