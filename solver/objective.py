"""The objective every engine is scored by (DESIGN §3), as named tiers.

Tiers, highest first; each outweighs every combination of the tiers below it:

1. `placed_groups` — Σ over gang groups with at least one pod placed of the group's
   priority rank (1 for the lowest distinct pending priority, 2 for the next, ...);
2. `placed_pods` — pods placed;
3. `domains:<Layer>` (fewer is better), one per network-topology layer from the top down
   (e.g. `domains:SpineLayer`, `domains:BlockLayer`, then `domains:NodeTopologyLayer`,
   i.e. nodes) — Σ over gathered gang groups of the domains of that layer their placed pods
   use (Koordinator's "lowest layer that holds the job"); present with a topology;
   then `gather_slack` (fewer is better) — for MustGather gang groups, the free pod slots
   of the chosen domain (bin-packing: the domain closest to the need wins);
4. `affinity` — Σ over placed pods of round(100 × the static policy score of its node)
   (node-group affinity, ...), present when some score is non-zero;
5. `opened_nodes` (fewer is better) — nodes without any bound pod that receive pods: the
   fragmentation tie-break, keeping whole nodes free for the next big job.

`tier_specs()` gives each tier's range [lower, upper]; tier i weighs
Π_{j below i} (upper_j − lower_j + 1) and `objective = Σ ± weight × value` (− for the
fewer-is-better tiers). The CP-SAT engine maximises exactly this sum
(`engines/cpsat/_terms.py` reads the same specs), so objectives and bounds of every engine
compare directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.problem import IntArray, Problem

__all__ = [
    "TierSpec",
    "domain_slots",
    "evaluate",
    "score_units",
    "slack_units",
    "tier_specs",
    "tier_weights",
    "topology_units",
    "unit_weights",
]


@dataclass(frozen=True)
class TierSpec:
    name: str
    lower: int
    upper: int
    maximize: bool = True


def score_units(score: float) -> int:
    """A policy score as the integer the objective counts (hundredths)."""
    return round(100 * score)


def unit_weights(problem: Problem) -> IntArray:
    """Priority rank of each unit among the distinct unit priorities, starting at 1."""
    distinct = np.unique(problem.unit_priority)
    return np.searchsorted(distinct, problem.unit_priority).astype(np.int64) + 1


def topology_units(problem: Problem) -> list[int]:
    """Units whose placement is scored by network-topology domains (Koordinator gather)."""
    if not problem.unit_gather.size:
        return []
    return [int(u) for u in np.flatnonzero(problem.unit_gather)]


def domain_slots(problem: Problem, u: int) -> dict[int, int]:
    """Free pod slots per domain of unit u's one-domain rule, counted with the unit's first
    pod type on the nodes it may use, at the start of the cycle (Koordinator's offer slots)."""
    domain = problem.unit_domain[u] if problem.unit_domain else None
    types = [t for t in range(problem.num_types) if problem.gang_unit[problem.type_gang[t]] == u]
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


def slack_units(problem: Problem) -> list[int]:
    """Gathered units with a MustGather domain: scored by the slack of the chosen domain."""
    return [
        u
        for u in topology_units(problem)
        if problem.unit_domain and problem.unit_domain[u] is not None
    ]


def _unit_pending(problem: Problem) -> IntArray:
    return np.bincount(
        problem.gang_unit, weights=problem.gang_pending, minlength=len(problem.unit_ids)
    ).astype(np.int64)


def _score_table(problem: Problem) -> IntArray:
    return np.rint(100 * problem.static_score).astype(np.int64)


def tier_specs(problem: Problem) -> list[TierSpec]:
    """The tiers in force for this Problem, highest first, with their ranges."""
    specs = [
        TierSpec("placed_groups", 0, int(unit_weights(problem).sum())),
        TierSpec("placed_pods", 0, problem.num_pods),
    ]
    units = topology_units(problem)
    if units:
        pending = _unit_pending(problem)
        for layer in range(1, len(problem.topo_layers)):
            domains = len(problem.topo_domains[layer])
            upper = int(sum(min(int(pending[u]), domains) for u in units))
            specs.append(
                TierSpec(f"domains:{problem.topo_layers[layer]}", 0, upper, maximize=False)
            )
        slack = [domain_slots(problem, u) for u in slack_units(problem)]
        upper = sum(max(s.values(), default=0) for s in slack)
        if upper:
            specs.append(TierSpec("gather_slack", 0, upper, maximize=False))
    table = _score_table(problem)
    if table.size:
        counts = np.array([len(p) for p in problem.type_pods], dtype=np.int64)
        lo = int((counts * np.minimum(table.min(axis=1), 0)).sum())
        hi = int((counts * np.maximum(table.max(axis=1), 0)).sum())
        if lo or hi:
            specs.append(TierSpec("affinity", lo, hi))
    specs.append(TierSpec("opened_nodes", 0, problem.num_nodes, maximize=False))
    return specs


def tier_weights(specs: list[TierSpec]) -> dict[str, int]:
    weights: dict[str, int] = {}
    weight = 1
    for spec in reversed(specs):
        weights[spec.name] = weight
        weight *= spec.upper - spec.lower + 1
    return weights


def evaluate(problem: Problem, pod_node: list[IntArray]) -> dict[str, int]:
    """Every tier's value for an answer (per-type node indices), and the combined `objective`."""
    placed_per_unit = np.zeros(len(problem.unit_ids), dtype=np.int64)
    placed_pods = 0
    for t, nodes in enumerate(pod_node):
        count = int((nodes >= 0).sum())
        placed_pods += count
        placed_per_unit[problem.gang_unit[problem.type_gang[t]]] += count
    values = {
        "placed_groups": int(unit_weights(problem)[placed_per_unit > 0].sum()),
        "placed_pods": placed_pods,
    }
    units = set(topology_units(problem))
    if units:
        per_unit: dict[int, list[int]] = {u: [] for u in units}
        for t, nodes in enumerate(pod_node):
            u = int(problem.gang_unit[problem.type_gang[t]])
            if u in units:
                per_unit[u].extend(nodes[nodes >= 0].tolist())
        for layer in range(1, len(problem.topo_layers)):
            used = 0
            for placed in per_unit.values():
                domains = problem.node_domain[layer, placed] if placed else np.empty(0)
                used += len({int(d) for d in domains if d >= 0})
            values[f"domains:{problem.topo_layers[layer]}"] = used
        slack = 0
        for u in slack_units(problem):
            placed = per_unit.get(u, [])
            if placed:
                domain = problem.unit_domain[u]
                assert domain is not None
                slack += domain_slots(problem, u).get(int(domain[placed[0]]), 0)
        values["gather_slack"] = slack
    table = _score_table(problem)
    values["affinity"] = sum(
        int(table[t, nodes[nodes >= 0]].sum()) for t, nodes in enumerate(pod_node)
    )
    touched = np.zeros(problem.num_nodes, dtype=bool)
    for nodes in pod_node:
        touched[nodes[nodes >= 0]] = True
    empty = np.all(problem.free == problem.capacity, axis=1)
    values["opened_nodes"] = int((touched & empty).sum())

    specs = tier_specs(problem)
    weights = tier_weights(specs)
    objective = sum((1 if s.maximize else -1) * weights[s.name] * values[s.name] for s in specs)
    return {"objective": int(objective), **{s.name: values[s.name] for s in specs}}
