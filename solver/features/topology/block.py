"""The shared core of the topology's Problem blocks: the engine-neutral one-domain rule.

Every dialect that keeps a unit's new pods inside one domain — Koordinator MustGather
(`koordinator/block.py`), Godel, the Workload API and KAI required levels (`godel/block.py`),
Volcano HyperNode tiers (`hypernode/block.py`) — writes it here, so that the CP-SAT module,
the bound and `why` read one rule. Each dialect's own fields and objective tiers live in its
own block; this one adds no tier.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.problem import Block, IntArray, Problem

__all__ = ["TopologyBlock", "placed_by_unit"]


@dataclass(frozen=True, eq=False)
class TopologyBlock(Block):
    # Per unit: the hard "one domain" rule. None = no such rule. Else int [N]: every new pod
    # of the unit goes to nodes sharing ONE value >= 0; -1 = node unusable for the unit
    # (already not eligible).
    unit_domain: tuple[IntArray | None, ...] = ()  # [U]
    unit_domain_names: tuple[tuple[str, ...], ...] = ()  # [U] name of each value
    unit_domain_rule: tuple[str, ...] = ()  # [U] the rule in its dialect's words, e.g.
    #   "one BlockLayer domain (MustGather)"; "" without one

    def domain_of(self, u: int) -> IntArray | None:
        return self.unit_domain[u] if self.unit_domain else None


def placed_by_unit(
    problem: Problem, pod_node: list[IntArray], units: set[int]
) -> dict[int, list[int]]:
    """The nodes of every placed pod of each unit in `units` (one entry per pod)."""
    per_unit: dict[int, list[int]] = {u: [] for u in units}
    for t, nodes in enumerate(pod_node):
        u = problem.type_unit(t)
        if u in per_unit:
            per_unit[u].extend(nodes[nodes >= 0].tolist())
    return per_unit
