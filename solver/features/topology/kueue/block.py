"""Kueue TAS as a Problem block: each unit's pod sets (`podsets.py`), the
`kueue_domains:<level>` tiers and the Decision's TopologyAssignments (`place.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from solver.features.topology.kueue.place import kueue_tier_specs, kueue_tier_values
from solver.features.topology.kueue.podsets import KueuePodSet
from solver.problem import Block, IntArray, Problem, TierSpec

__all__ = ["KueueBlock", "kueue_pod_sets"]


@dataclass(frozen=True, eq=False)
class KueueBlock(Block):
    unit_kueue: tuple[tuple[KueuePodSet, ...] | None, ...] = ()  # [U] None: not Kueue's

    def kueue(self, u: int) -> tuple[KueuePodSet, ...] | None:
        return self.unit_kueue[u] if self.unit_kueue else None

    def tiers(self, problem: Problem) -> list[TierSpec]:
        return kueue_tier_specs(self.unit_kueue)

    def evaluate(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
        return kueue_tier_values(problem, self.unit_kueue, pod_node)


def kueue_pod_sets(problem: Problem, u: int) -> tuple[KueuePodSet, ...] | None:
    """Unit u's Kueue TAS pod sets (None when Kueue does not govern it)."""
    block = problem.block(KueueBlock)
    return block.kueue(u) if block is not None else None
