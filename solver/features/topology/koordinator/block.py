"""Koordinator's gather as a Problem block: the ClusterNetworkTopology tree, each gathered
unit's MustGather layer, podCountMultiple and peers, and the objective tiers they add.

L layers top→down, D_l domains in layer l (see `topology/tree.py`); U units (gang groups).

Tiers (after `placed_pods`): `domains:<Layer>` for every layer below the root, top layer
first, nodes last (fewer is better): Σ over gathered gang groups of the domains of that
layer their placed pods use — Koordinator's "lowest layer that holds the job"; then
`gather_slack` (fewer is better): for MustGather gang groups, the free pod slots of the
chosen domain (bin-packing: the domain closest to the need wins).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solver.features.topology.block import placed_by_unit
from solver.problem import Block, BoolArray, IntArray, Problem, TierSpec

__all__ = ["GatherBlock", "domain_slots", "is_gathered", "slack_units", "topology_units"]


def _empty(*shape: int) -> IntArray:
    return np.zeros(shape, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class GatherBlock(Block):
    # Koordinator's tree; empty (L = 0) when there is no tree.
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
    #   the unit on nodes of ONE domain of that layer; also the shared block's unit_domain[u])
    unit_pod_multiple: IntArray = field(default_factory=lambda: _empty(0, 0))  # [U, L]
    #   podCountMultiple per layer, 1 = none (HARD when > 1: in every domain d of layer l the
    #   unit's new pods number a multiple of it, 0 allowed; l = L-1 means per node)
    unit_peers: tuple[IntArray, ...] = ()  # [U] int [N] running pods per node sharing the
    #   unit's network-topology-selector (ExistingPodNum); shape (0,) without a selector
    gather_multiple_text: tuple[str, ...] = ()  # [U] "; podCountMultiple constraints: ..."

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def is_gather(self, u: int) -> bool:
        return bool(self.unit_gather.size and self.unit_gather[u])

    def has_multiples(self, u: int) -> bool:
        """Koordinator podCountMultiple constraints on unit u."""
        return bool(self.unit_pod_multiple.size and (self.unit_pod_multiple[u] > 1).any())

    def domain_of(self, u: int) -> IntArray | None:
        """Unit u's MustGather domains per node (None without a MustGather layer)."""
        layer = int(self.unit_gather_layer[u]) if self.unit_gather_layer.size else -1
        return self.node_domain[layer] if layer >= 0 else None

    # ------------------------------------------------------------------ objective

    def tiers(self, problem: Problem) -> list[TierSpec]:
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

    def evaluate(self, problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
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


def is_gathered(problem: Problem, u: int) -> bool:
    """Unit u is placed by Koordinator's gather (all its pending pods or none)."""
    block = problem.block(GatherBlock)
    return block is not None and block.is_gather(u)


def topology_units(block: GatherBlock) -> list[int]:
    """Units whose placement is scored by network-topology domains (Koordinator gather)."""
    if not block.unit_gather.size:
        return []
    return [int(u) for u in np.flatnonzero(block.unit_gather)]


def slack_units(block: GatherBlock) -> list[int]:
    """Gathered units with a MustGather domain: scored by the slack of the chosen domain."""
    return [u for u in topology_units(block) if block.domain_of(u) is not None]


def domain_slots(problem: Problem, block: GatherBlock, u: int) -> dict[int, int]:
    """Free pod slots per MustGather domain of unit u, counted with the unit's first pod type
    on the nodes it may use, at the start of the cycle (Koordinator's offer slots)."""
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
