"""The objective every engine is scored by (DESIGN §3), as named tiers.

Tiers, highest first; each outweighs every combination of the tiers below it:

1. `placed_groups` — Σ over gang groups with at least one pod placed of the group's
   priority rank (1 for the lowest distinct priority among the units with pending pods,
   2 for the next, ...);
2. `placed_pods` — pods placed;
3. the features' tiers, in feature order (`Block.tiers`): the network topology's
   `domains:<Layer>` tiers and `gather_slack` (fewer is better);
4. `affinity` — Σ over placed pods of round(100 × the static policy score of its node)
   (node-group affinity, card order, ...), present when some score is non-zero;
5. `opened_nodes` (fewer is better) — nodes without any running pod that receive pods: the
   fragmentation tie-break, keeping whole nodes free for the next big job.

`tier_specs()` gives each tier's range [lower, upper]; tier i weighs
Π_{j below i} (upper_j − lower_j + 1), and the packed `objective` = Σ ± weight × value
(− for the fewer-is-better tiers) is what CP-SAT maximises when it fits its arithmetic.
The packed number can exceed 64 bits on large clusters: it is reported as a Python int in
the library and as its named tiers on the wire, which compare lexicographically exactly as
the packed number does.
"""

from __future__ import annotations

import numpy as np

from solver.problem._fill import slots_of
from solver.problem._problem import BoolArray, IntArray, Problem, TierSpec

__all__ = [
    "TierSpec",
    "compare_tiers",
    "evaluate",
    "proven_optimal",
    "relaxed_best",
    "score_units",
    "tier_specs",
    "tier_weights",
    "unit_weights",
]


def score_units(score: float) -> int:
    """A policy score as the integer the objective counts (hundredths)."""
    return round(100 * score)


def unit_weights(problem: Problem) -> IntArray:
    """Priority rank of each unit among the distinct priorities of units with pending pods,
    starting at 1 (units without pending pods weigh 0: nothing of theirs can be placed).
    Computed once per Problem; read-only."""
    return problem.derived("unit_weights", lambda: _unit_weights(problem))


def _unit_weights(problem: Problem) -> IntArray:
    pending = np.bincount(
        problem.gang_unit, weights=problem.gang_pending, minlength=len(problem.unit_ids)
    )
    live = pending > 0
    distinct = np.unique(problem.unit_priority[live])
    ranks = np.searchsorted(distinct, problem.unit_priority).astype(np.int64) + 1
    out = np.where(live, ranks, 0)
    out.flags.writeable = False
    return out


def _scores(problem: Problem, t: int, nodes: IntArray | BoolArray) -> IntArray:
    """The static scores of type t on `nodes` (indices or a mask), as the objective counts
    them (`score_units`, over an array: only the nodes asked for are converted)."""
    row = np.asarray(problem.static_score[t], dtype=np.float64)[nodes]
    return np.rint(100 * row).astype(np.int64)


def tier_specs(problem: Problem) -> list[TierSpec]:
    """The tiers in force for this Problem, highest first, with their ranges (computed
    once per Problem)."""
    return list(problem.derived("tier_specs", lambda: tuple(_tier_specs(problem))))


def _tier_specs(problem: Problem) -> list[TierSpec]:
    specs = [
        TierSpec("placed_groups", 0, int(unit_weights(problem).sum())),
        TierSpec("placed_pods", 0, problem.num_pods),
    ]
    for block in problem.blocks.values():
        specs.extend(block.tiers(problem))
    lo = hi = 0
    for row in np.unique(problem.static_score.of_type):
        types = np.flatnonzero(problem.static_score.of_type == row)
        count = sum(len(problem.type_pods[t]) for t in types.tolist())
        scores = problem.static_score.rows[row]
        if scores.size:  # rounding is monotone: the extremes of the rounded row, read cheaply
            lo += count * min(score_units(float(scores.min())), 0)
            hi += count * max(score_units(float(scores.max())), 0)
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
    """Every tier's value for an answer (per-type node indices), and the packed `objective`
    (an exact Python int, possibly wider than 64 bits)."""
    placed_per_unit = np.zeros(len(problem.unit_ids), dtype=np.int64)
    placed_pods = 0
    for t, nodes in enumerate(pod_node):
        count = int((nodes >= 0).sum())
        placed_pods += count
        placed_per_unit[problem.type_unit(t)] += count
    values = {
        "placed_groups": int(unit_weights(problem)[placed_per_unit > 0].sum()),
        "placed_pods": placed_pods,
    }
    for block in problem.blocks.values():
        values.update(block.evaluate(problem, pod_node))
    values["affinity"] = sum(
        int(_scores(problem, t, nodes[nodes >= 0]).sum()) for t, nodes in enumerate(pod_node)
    )
    placed = [nodes[nodes >= 0] for nodes in pod_node]
    touched = np.unique(np.concatenate(placed)) if placed else np.empty(0, dtype=np.int64)
    # emptiness read on the nodes the answer touched only: O(pods), not O(nodes)
    values["opened_nodes"] = int(problem.empty_at(touched).sum())

    specs = tier_specs(problem)
    weights = tier_weights(specs)
    objective = sum((1 if s.maximize else -1) * weights[s.name] * values[s.name] for s in specs)
    return {"objective": int(objective), **{s.name: values[s.name] for s in specs}}


def compare_tiers(specs: list[TierSpec], a: dict[str, int], b: dict[str, int]) -> int:
    """-1, 0 or 1 as answer `a` is worse than, as good as, or better than `b`, tier by tier."""
    for spec in specs:
        x, y = a.get(spec.name, 0), b.get(spec.name, 0)
        if x != y:
            better = x > y if spec.maximize else x < y
            return 1 if better else -1
    return 0


def relaxed_best(problem: Problem, skip: frozenset[int] = frozenset()) -> dict[str, int]:
    """Per tier, a value no answer can beat: the tiers' own ranges, and two tighter ones
    with capacity between pods and every gang rule relaxed —

    * `affinity`: at most each pod on its best-scoring node among those with room for it;
    * `opened_nodes`: the pods of types with room only on empty nodes must open some: at
      least ⌈count / most slots of one empty node⌉ per type, and ⌈Σ demand / largest empty
      node⌉ per resource over all of them; 0 when every type has room on a used node;
    * a block's own tiers, by its `Block.bound` (`fair_share`: its value with every pod
      that can be placed placed, as it only grows with what is placed).

    An answer reaching every tier's value is optimal: the tiers compare lexicographically,
    and each value bounds every answer, the optimal ones included. `skip`: types no answer
    can place (their gangs are proven impossible), left out of the sums."""
    specs = tier_specs(problem)
    best = {s.name: s.upper if s.maximize else s.lower for s in specs}
    empty = problem.empty
    affinity = 0
    volume = np.zeros(problem.free.shape[1], dtype=np.int64)
    opened = 0
    for t, pods in enumerate(problem.type_pods):
        if t in skip:
            continue
        slots = slots_of(problem, t, problem.free)
        room = slots > 0
        if not room.any():
            continue
        if "affinity" in best:
            affinity += len(pods) * max(int(_scores(problem, t, room).max()), 0)
        if not room[~empty].any():  # only empty nodes take this type
            volume += len(pods) * problem.type_demand[t]
            opened = max(opened, -(-len(pods) // int(slots[room].max())))
    if "affinity" in best:
        best["affinity"] = min(best["affinity"], affinity)
    if volume.any():  # an empty node's room is its capacity: the contiguous rows, reduced fast
        largest = np.where(empty, problem.capacity_columns, 0).max(axis=1)
        need = volume > 0
        opened = max(opened, int((-(-volume[need] // np.maximum(largest[need], 1))).max()))
    best["opened_nodes"] = opened
    for block in problem.blocks.values():
        best.update(block.bound(problem, skip))
    return best


def proven_optimal(
    problem: Problem,
    values: dict[str, int],
    pod_node: list[IntArray] | None = None,
    impossible: frozenset[int] = frozenset(),
) -> bool:
    """Does an answer's `evaluate` reach `relaxed_best` in every tier (so no model needs
    to be built to prove it)? Cheap: O(types × nodes) numpy. `impossible`: types no answer
    can place (their gangs are proven impossible): then every other pod placed in
    `pod_node` is the most any answer places, and the lower tiers are bounded without them."""
    specs = tier_specs(problem)
    if not impossible:
        if any(values[s.name] != (s.upper if s.maximize else s.lower) for s in specs[:2]):
            return False  # not every group and pod placed: the common case, decided at once
    elif pod_node is None or any(
        bool((pod_node[t] < 0).any()) for t in range(problem.num_types) if t not in impossible
    ):
        return False
    best = relaxed_best(problem, impossible)
    return all(values[s.name] == best[s.name] for s in specs[2:])
