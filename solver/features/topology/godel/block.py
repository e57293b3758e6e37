"""Godel's job-level affinity (and the Workload API's and KAI's PodGroup topology, read as
the same plan) as a Problem block: each unit's `GodelPlan`, Godel's node metrics, and the
`preferred_domains` / `domain_rank` tiers (`objective.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.topology.godel.affinity import GodelPlan
from solver.features.topology.godel.objective import preferred_tier_specs, preferred_tier_values
from solver.problem import Block, IntArray, Problem, TierSpec

__all__ = ["GodelBlock", "godel_plan_of"]


@dataclass(frozen=True, eq=False)
class GodelBlock(Block):
    unit_godel: tuple[GodelPlan | None, ...] = ()  # [U] NodeGroups/NodeCircles for the greedy
    godel_allocatable: IntArray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    #   [N, 3] cpu (milli), memory (bytes), nvidia.com/gpu: Godel's sort/cut-off metrics
    godel_requested: IntArray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    #   [N, 3] the same, requested by running pods (Available = allocatable - requested)

    def godel(self, u: int) -> GodelPlan | None:
        return self.unit_godel[u] if self.unit_godel else None

    def tiers(self, problem: Problem) -> list[TierSpec]:
        return preferred_tier_specs(problem, self.unit_godel)

    def evaluate(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
        return preferred_tier_values(problem, self.unit_godel, pod_node)


def godel_plan_of(problem: Problem, u: int) -> GodelPlan | None:
    """Unit u's job-level affinity plan (None when no PodGroup affinity governs it)."""
    block = problem.block(GodelBlock)
    return block.godel(u) if block is not None else None
