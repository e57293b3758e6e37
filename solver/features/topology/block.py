"""The network topology's part of a Problem, and the objective tiers it adds.

L layers top→down, D_l domains in layer l (see `tree.py`); U units (gang groups).

Tiers (after `placed_pods`): `domains:<Layer>` for every layer below the root, top layer
first, nodes last (fewer is better): Σ over gathered gang groups of the domains of that
layer their placed pods use — Koordinator's "lowest layer that holds the job"; then
`gather_slack` (fewer is better): for MustGather gang groups, the free pod slots of the
chosen domain (bin-packing: the domain closest to the need wins); `preferred_domains`
(fewer is better) for units with preferred terms or levels (`godel/objective.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.topology.godel.affinity import GodelPlan
from solver.features.topology.godel.objective import preferred_tier_specs, preferred_tier_values
from solver.features.topology.kueue.place import kueue_tier_specs, kueue_tier_values
from solver.features.topology.kueue.podsets import KueuePodSet
from solver.problem import Block, BoolArray, IntArray, Problem, TierSpec

__all__ = ["TopologyBlock", "domain_slots", "placed_by_unit", "slack_units", "topology_units"]


def _empty(*shape: int) -> IntArray:
    return np.zeros(shape, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class TopologyBlock(Block):
    # Koordinator's tree; empty (L = 0) when no unit gathers or there is no tree.
    layers: tuple[str, ...] = ()  # [L] [0] ClusterTopologyLayer (root, one domain ""),
    #   [1..L-2] the CR's layers (e.g. SpineLayer, BlockLayer), [L-1] NodeTopologyLayer
    domains: tuple[tuple[str, ...], ...] = ()  # [L][D_l] names; sorted; layer L-1 = nodes
    parent: tuple[IntArray, ...] = ()  # [L][D_l] parent's index in layer l-1; -1 root/out
    node_domain: IntArray = field(default_factory=lambda: _empty(0, 0))  # [L, N]; -1 when
    #   the node is out of the tree

    # Per unit: Koordinator gather (network-topology-spec of the group's first gang).
    unit_gather: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # [U]
    #   placed by the offer-slot gather (greedy)
    unit_gather_layer: IntArray = field(default_factory=lambda: _empty(0))  # [U] index into
    #   layers of the deepest MustGather layer; -1 = none (HARD when >= 0: every new pod of
    #   the unit on nodes of ONE domain of that layer; also given as unit_domain[u])
    unit_pod_multiple: IntArray = field(default_factory=lambda: _empty(0, 0))  # [U, L]
    #   podCountMultiple per layer, 1 = none (HARD when > 1: in every domain d of layer l the
    #   unit's new pods number a multiple of it, 0 allowed; l = L-1 means per node)
    unit_peers: tuple[IntArray, ...] = ()  # [U] int [N] running pods per node sharing the
    #   unit's network-topology-selector (ExistingPodNum); shape (0,) without a selector
    gather_multiple_text: tuple[str, ...] = ()  # [U] "; podCountMultiple constraints: ..."

    # Per unit: the hard "one domain" rule, engine-neutral (Koordinator MustGather and Godel
    # required terms). None = no such rule. Else int [N]: every new pod of the unit goes to
    # nodes sharing ONE value >= 0; -1 = node unusable for the unit (already not eligible).
    unit_domain: tuple[IntArray | None, ...] = ()  # [U]
    unit_domain_names: tuple[tuple[str, ...], ...] = ()  # [U] name of each value
    unit_domain_rule: tuple[str, ...] = ()  # [U] the rule in its dialect's words, e.g.
    #   "one BlockLayer domain (MustGather)"; "" without one

    # Per unit: Godel job-level affinity (NodeGroups/NodeCircles built by the greedy).
    unit_godel: tuple[GodelPlan | None, ...] = ()  # [U]
    godel_allocatable: IntArray = field(default_factory=lambda: _empty(0, 3))  # [N, 3]
    #   cpu (milli), memory (bytes), nvidia.com/gpu: Godel's sort/cut-off metrics
    godel_requested: IntArray = field(default_factory=lambda: _empty(0, 3))  # [N, 3] the
    #   same, requested by running pods (Available = allocatable - requested, per domain)

    # Per unit: its Kueue TAS pod sets (`kueue.py`), None when Kueue does not govern it.
    unit_kueue: tuple[tuple[KueuePodSet, ...] | None, ...] = ()  # [U]

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def is_gather(self, u: int) -> bool:
        return bool(self.unit_gather.size and self.unit_gather[u])

    def has_multiples(self, u: int) -> bool:
        """Koordinator podCountMultiple constraints on unit u."""
        return bool(self.unit_pod_multiple.size and (self.unit_pod_multiple[u] > 1).any())

    def godel(self, u: int) -> GodelPlan | None:
        return self.unit_godel[u] if self.unit_godel else None

    def kueue(self, u: int) -> tuple[KueuePodSet, ...] | None:
        return self.unit_kueue[u] if self.unit_kueue else None

    def domain_of(self, u: int) -> IntArray | None:
        return self.unit_domain[u] if self.unit_domain else None

    # ------------------------------------------------------------------ objective

    def tiers(self, problem: Problem) -> list[TierSpec]:
        return (
            self._gather_tiers(problem)
            + preferred_tier_specs(problem, self.unit_godel)
            + kueue_tier_specs(self.unit_kueue)
        )

    def evaluate(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
        return (
            self._gather_values(problem, pod_node)
            | preferred_tier_values(problem, self.unit_godel, pod_node)
            | kueue_tier_values(problem, self.unit_kueue, pod_node)
        )

    def _gather_tiers(self, problem: Problem) -> list[TierSpec]:
        units = topology_units(self)
        if not units:
            return []
        pending = np.bincount(
            problem.gang_unit, weights=problem.gang_pending, minlength=len(problem.unit_ids)
        ).astype(np.int64)
        specs = []
        for layer in range(1, self.num_layers):
            domains = len(self.domains[layer])
            upper = int(sum(min(int(pending[u]), domains) for u in units))
            specs.append(TierSpec(f"domains:{self.layers[layer]}", 0, upper, maximize=False))
        slack = [domain_slots(problem, self, u) for u in slack_units(self)]
        upper = sum(max(s.values(), default=0) for s in slack)
        if upper:
            specs.append(TierSpec("gather_slack", 0, upper, maximize=False))
        return specs

    def _gather_values(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
        units = set(topology_units(self))
        if not units:
            return {}
        per_unit = placed_by_unit(problem, pod_node, units)
        values: dict[str, int] = {}
        for layer in range(1, self.num_layers):
            used = 0
            for placed in per_unit.values():
                domains = self.node_domain[layer, placed] if placed else np.empty(0)
                used += len({int(d) for d in domains if d >= 0})
            values[f"domains:{self.layers[layer]}"] = used
        slack = 0
        for u in slack_units(self):
            placed = per_unit.get(u, [])
            domain = self.domain_of(u)
            if placed and domain is not None:
                slack += domain_slots(problem, self, u).get(int(domain[placed[0]]), 0)
        values["gather_slack"] = slack
        return values


def placed_by_unit(
    problem: Problem, pod_node: list[IntArray], units: set[int]
) -> dict[int, list[int]]:
    """The nodes of every placed pod of each unit in `units` (one entry per pod)."""
    per_unit: dict[int, list[int]] = {u: [] for u in units}
    for t, nodes in enumerate(pod_node):
        u = problem.type_unit(t)
        if u in units:
            per_unit[u].extend(nodes[nodes >= 0].tolist())
    return per_unit


def topology_units(block: TopologyBlock) -> list[int]:
    """Units whose placement is scored by network-topology domains (Koordinator gather)."""
    if not block.unit_gather.size:
        return []
    return [int(u) for u in np.flatnonzero(block.unit_gather)]


def slack_units(block: TopologyBlock) -> list[int]:
    """Gathered units with a MustGather domain: scored by the slack of the chosen domain."""
    return [u for u in topology_units(block) if block.domain_of(u) is not None]


def domain_slots(problem: Problem, block: TopologyBlock, u: int) -> dict[int, int]:
    """Free pod slots per domain of unit u's one-domain rule, counted with the unit's first
    pod type on the nodes it may use, at the start of the cycle (Koordinator's offer slots)."""
    domain = block.domain_of(u)
    types = [t for t in range(problem.num_types) if problem.type_unit(t) == u]
    if domain is None or not types:
        return {}
    t = types[0]
    demand = problem.type_demand[t]
    positive = demand > 0
    slots = np.min(np.maximum(problem.free[:, positive], 0) // demand[positive], axis=1)
    slots = np.where(problem.eligible[t] & (domain >= 0), slots, 0)
    out: dict[int, int] = {}
    for d, s in zip(domain.tolist(), slots.tolist(), strict=True):
        if d >= 0:
            out[d] = out.get(d, 0) + int(s)
    return out
