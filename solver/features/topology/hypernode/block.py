"""Volcano HyperNode's part of a Problem: per unit the search plan, and its objective tiers.

The hard rule itself ("every new pod of the job inside one HyperNode of tier <= the
limit") is the topology core's engine-neutral one-domain rule (`TopologyBlock.unit_domain`,
with `HyperNodeTree.top_within(limit)` as the domain of each node), so CP-SAT, preemption
and explanations read it as they read Koordinator's MustGather. This block adds what is
HyperNode's own: the tree, the greedy's search plan and the scores' arguments.

Tiers (after the core's): `hypernodes:tier<k>` for every HyperNode tier k from the highest
down (fewer is better): Σ over HyperNode jobs of the tier-k HyperNodes their placed pods
use. Lexicographically this is Volcano's "the lowest tier that holds the job" first (one
HyperNode at every tier from the job's LCA up), then fewer HyperNodes below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.topology.block import placed_by_unit
from solver.features.topology.hypernode.subgroup import SubGroupPlan
from solver.features.topology.hypernode.tree import HyperNodeTree
from solver.problem import Block, IntArray, Problem, TierSpec

__all__ = ["HyperNodeBlock", "HyperNodePlan", "NodeScoreArgs"]


@dataclass(frozen=True)
class HyperNodePlan:
    """What Volcano's allocate needs for one job with a (hard, or soft made hard) topology."""

    gang: str
    limit: int  # highest tier allowed (soft: the virtual root's tier)
    soft: bool
    allocated: int  # HyperNode holding the job's running pods (recoverAllocatedHyperNode); -1
    search_root: int  # where the gradient search starts; -1: the job cannot be placed
    min_resources: IntArray  # [R] PodGroup minResources (the pre-filter before allocation)
    min_unknown: bool  # minResources names a resource no node offers: no HyperNode passes
    task_count: int  # the job's tasks (running + pending): scoreWithTaskNum's denominator
    running_nodes: IntArray  # nodes of its running pods (one entry per pod)
    subgroups: tuple[SubGroupPlan, ...] = ()  # subGroupPolicy's sub-groups (+ the default)
    min_sub_groups: tuple[int, ...] = ()  # [policy] minSubGroups


@dataclass(frozen=True)
class NodeScoreArgs:
    """The `network-topology-aware` plugin's arguments (defaults as upstream)."""

    enabled: bool = False
    weight: int = 1
    binpack: tuple[int, ...] = ()  # [R] hypernode.binpack weight per resource, 0 = not counted
    normal_pod: bool = True
    fading: float = 0.8


def _empty() -> IntArray:
    return np.zeros((0, 0), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class HyperNodeBlock(Block):
    tree: HyperNodeTree | None = None
    unit_plan: tuple[HyperNodePlan | None, ...] = ()  # [U]
    args: NodeScoreArgs = field(default_factory=NodeScoreArgs)
    at_tier: IntArray = field(default_factory=_empty)  # [K, N] node's HyperNode of tier
    #   tiers[k] (-1: none); K = the HyperNode tiers below the virtual root
    tiers_listed: tuple[int, ...] = ()  # [K] tier numbers, ascending

    def plan(self, u: int) -> HyperNodePlan | None:
        return self.unit_plan[u] if u < len(self.unit_plan) else None

    def units(self) -> list[int]:
        return [u for u, p in enumerate(self.unit_plan) if p is not None]

    def tiers(self, problem: Problem) -> list[TierSpec]:
        units = self.units()
        if not units or not self.tiers_listed:
            return []
        pending = np.bincount(
            problem.gang_unit, weights=problem.gang_pending, minlength=len(problem.unit_ids)
        ).astype(np.int64)
        specs = []
        for k in reversed(range(len(self.tiers_listed))):
            count = int(np.unique(self.at_tier[k][self.at_tier[k] >= 0]).size)
            upper = int(sum(min(int(pending[u]), count) for u in units))
            specs.append(
                TierSpec(f"hypernodes:tier{self.tiers_listed[k]}", 0, upper, maximize=False)
            )
        return specs

    def evaluate(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
        units = set(self.units())
        if not units or not self.tiers_listed:
            return {}
        per_unit = placed_by_unit(problem, pod_node, units)
        out: dict[str, int] = {}
        for k, tier in enumerate(self.tiers_listed):
            used = 0
            for placed in per_unit.values():
                row = self.at_tier[k][placed] if placed else np.zeros(0, dtype=np.int64)
                used += int(np.unique(row[row >= 0]).size)
            out[f"hypernodes:tier{tier}"] = used
        return out
